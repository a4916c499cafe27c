"""procrastinate tasks: the worker's entry point (`manage.py worker` runs them).

Operations run in the process's one operations thread pool (operations/threads.py) of
FLEXZONE_OPS_WORKER_CONCURRENCY threads: procrastinate's own sync-task path shares asyncio's small
default executor, which would cap parallel routers at ~6. The periodic chores are not tasks: each
worker runs them on a thread of their own (operations/chores.py), outside the operations' slots.
"""

from __future__ import annotations

import asyncio

from django.utils import timezone
from procrastinate import jobs, manager
from procrastinate.contrib.django import app
from procrastinate.contrib.django.django_connector import DjangoConnector

from operations.affinity import SHARED, running
from operations.runner import run_in_thread
from operations.threads import operations_pool

QUEUE = SHARED
# Deferring and retrying always go through Django's own connection, also inside a worker (whose app
# connector is async): the job then commits or rolls back with the caller's transaction.
_django_jobs = manager.JobManager(DjangoConnector())


def defer_operation(operation_id: int, queue: str = QUEUE) -> int:
    """Queue `run_operation` for an operation on `queue` (operations/affinity.py); returns the job id."""
    deferrer = jobs.JobDeferrer(job_manager=_django_jobs, job=run_operation.configure(queue=queue).job)
    return deferrer.defer(operation_id=operation_id)


def retry_stalled_job(job_id: int) -> None:
    """Put a dead worker's `doing` job back to `todo`; raises ProcrastinateException if it is not `doing`."""
    _django_jobs.retry_job_by_id(job_id, retry_at=timezone.now())


@app.task(name="flexzone.run_operation", queue=QUEUE)
async def run_operation(operation_id: int) -> str:
    with running():  # a slot of this worker is busy (operations/affinity.py)
        return await asyncio.get_running_loop().run_in_executor(operations_pool(), run_in_thread, operation_id)

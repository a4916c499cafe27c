"""procrastinate tasks: the worker's entry points (`manage.py worker` runs them).

Operations run in a thread pool of FLEXZONE_OPS_WORKER_CONCURRENCY threads (procrastinate's own
sync-task path shares asyncio's small default executor, which would cap parallel routers at ~6).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections, connection
from django.utils import timezone
from procrastinate import jobs, manager
from procrastinate.contrib.django import app
from procrastinate.contrib.django.django_connector import DjangoConnector

from registry.operations.conf import ops_settings

QUEUE = "operations"
_conf = ops_settings()
_executor = ThreadPoolExecutor(_conf.worker_concurrency, thread_name_prefix="flexzone-op")
# Deferring and retrying always go through Django's own connection, also inside a worker (whose app
# connector is async): the job then commits or rolls back with the caller's transaction.
_django_jobs = manager.JobManager(DjangoConnector())


def defer_operation(operation_id: int) -> int:
    """Queue `run_operation` for an operation; returns the job id."""
    deferrer = jobs.JobDeferrer(job_manager=_django_jobs, job=run_operation.configure().job)
    return deferrer.defer(operation_id=operation_id)


def retry_stalled_job(job_id: int) -> None:
    """Put a dead worker's `doing` job back to `todo`; raises ProcrastinateException if it is not `doing`."""
    _django_jobs.retry_job_by_id(job_id, retry_at=timezone.now())


def _in_thread(func, *args):
    close_old_connections()
    try:
        return func(*args)
    finally:
        connection.close()


@app.task(name="flexzone.run_operation", queue=QUEUE)
async def run_operation(operation_id: int) -> str:
    from registry.operations.engine import run_in_thread

    return await asyncio.get_running_loop().run_in_executor(_executor, run_in_thread, operation_id)


@app.periodic(cron=f"* * * * * */{_conf.reap_every}")
@app.task(name="flexzone.reap_stalled_operations", queue=QUEUE, queueing_lock="flexzone.reap")
async def reap_stalled_operations(timestamp: int) -> list[int]:
    from registry.operations.maintenance import reap_stalled_operations as reap

    return await asyncio.get_running_loop().run_in_executor(_executor, _in_thread, reap)


@app.periodic(cron=f"* * * * * */{_conf.lease_every}")
@app.task(name="flexzone.expire_leases", queue=QUEUE, queueing_lock="flexzone.leases")
async def expire_leases(timestamp: int) -> list[int]:
    from registry.operations.maintenance import expire_leases as expire

    return await asyncio.get_running_loop().run_in_executor(_executor, _in_thread, expire)

"""The procrastinate queue: a PostgreSQL job per operation, run by `manage.py worker` processes."""

from __future__ import annotations

import logging

from django.db import transaction
from procrastinate.exceptions import ProcrastinateException

from operations.affinity import queue_for
from operations.models import Operation
from operations.tasks import defer_operation, retry_stalled_job

log = logging.getLogger(__name__)


class ProcrastinateQueue:
    name = "procrastinate"

    def enqueue(self, operation_id: int) -> int:
        # Deferred inside the submit's transaction: the job exists if and only if the operation row does.
        return defer_operation(operation_id, _queue_of(operation_id))

    def requeue(self, operation_id: int) -> None:
        """Put the dead worker's job back to `todo` (procrastinate's stalled-job retry), or defer a new one."""
        job_id = Operation.objects.filter(pk=operation_id).values_list("job_id", flat=True).first()
        if job_id is not None:
            try:
                with transaction.atomic():
                    retry_stalled_job(job_id)
                return
            except ProcrastinateException:
                log.info("job %s of operation %s is not retryable; deferring a new one", job_id, operation_id)
        with transaction.atomic():
            job_id = defer_operation(operation_id, _queue_of(operation_id))
            Operation.objects.filter(pk=operation_id).update(job_id=job_id)

    def start(self) -> None:
        """Nothing: the workers pick up queued jobs, and each worker runs the chores (see `manage.py worker`)."""


def _queue_of(operation_id: int) -> str:
    """The queue of the worker holding the operation's routers' sessions, or the shared one."""
    plan = Operation.objects.filter(pk=operation_id).values_list("plan", flat=True).first()
    return queue_for(plan or {})

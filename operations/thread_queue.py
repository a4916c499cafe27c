"""The thread queue: operations run in this process's own pool (FLEXZONE_OPS_QUEUE=thread).

Used where there is no procrastinate worker (the SQLite demo). At start-up of a process that
serves requests (gunicorn's worker hook in serving/gunicorn_conf.py, or the first submit) it starts the
chores and picks up every operation still queued in the database, so an operation queued when a
process stopped runs after the restart instead of keeping its locks for ever. Several processes may
do so at once: each operation is claimed by one of them.
"""

from __future__ import annotations

import threading

from django.db import transaction

from operations.chores import start_chores_thread
from operations.models import Operation
from operations.runner import run_in_thread
from operations.threads import in_own_connection, operations_pool


class ThreadQueue:
    name = "thread"

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._backlog_taken = False

    def enqueue(self, operation_id: int) -> None:
        # After the commit: the pool thread must find the row (and the locks) the submit wrote.
        transaction.on_commit(lambda: self._run_after_start(operation_id))
        return None

    def requeue(self, operation_id: int) -> None:
        operations_pool().submit(run_in_thread, operation_id)

    def start(self) -> None:
        start_chores_thread()
        with self._guard:
            if self._backlog_taken:
                return
            self._backlog_taken = True
        for operation_id in in_own_connection(_queued_operations):
            operations_pool().submit(run_in_thread, operation_id)

    def _run_after_start(self, operation_id: int) -> None:
        self.start()
        operations_pool().submit(run_in_thread, operation_id)


def _queued_operations() -> list[int]:
    return list(Operation.objects.filter(state=Operation.State.QUEUED).order_by("pk").values_list("pk", flat=True))

"""The queue operations wait in: one interface, its adapter chosen by FLEXZONE_OPS_QUEUE.

- ``manual``: nothing runs until someone calls ``execute`` (tests; the synchronous conveniences).
- ``thread``: the process's own operations thread pool (the SQLite demo; several processes may
  share one database, the claim makes each operation run once).
- ``procrastinate``: a PostgreSQL job queue; ``manage.py worker`` processes on any machine.

The adapters are registered when the app is ready (operations/apps.py); ``submit`` and the chores
only see this interface.
"""

from __future__ import annotations

from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from operations.conf import ops_settings


class Queue(Protocol):
    name: str

    def enqueue(self, operation_id: int) -> int | None:
        """Queue an operation inside the caller's transaction; returns the queue's job id, if it has one."""

    def requeue(self, operation_id: int) -> None:
        """Queue again an operation whose worker stopped heart-beating (it is re-run in recovery mode)."""

    def start(self) -> None:
        """Start-up of a process that runs operations: pick up what was queued before, start the chores."""


class ManualQueue:
    """Journals only: the caller runs the operation with ``execute``."""

    name = "manual"

    def enqueue(self, operation_id: int) -> None:
        return None

    def requeue(self, operation_id: int) -> None:
        return None

    def start(self) -> None:
        return None


_adapters: dict[str, Queue] = {ManualQueue.name: ManualQueue()}


def register(adapter: Queue) -> None:
    _adapters[adapter.name] = adapter


def current() -> Queue:
    """The adapter FLEXZONE_OPS_QUEUE names (read on each use: tests switch it)."""
    name = ops_settings().queue
    try:
        return _adapters[name]
    except KeyError:
        raise ImproperlyConfigured(
            f"FLEXZONE_OPS_QUEUE={name}: that queue is not installed here (procrastinate needs "
            "DATABASE_URL=postgres://...)"
        ) from None

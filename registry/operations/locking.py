"""One session at a time per router: an in-process lock plus a PostgreSQL advisory lock.

The in-process lock orders the threads of one worker without touching the database; the advisory
lock (session level, keyed on the router id) orders worker processes on any machine that share the
database, and PostgreSQL drops it by itself when a SIGKILLed worker's connection closes, so a dead
worker never leaves a router locked. On SQLite (the single-process demo) only the first applies.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

# Advisory locks take two int4 keys; the first keeps flexzone's locks apart from anyone else's.
ADVISORY_NAMESPACE = 0x464C5A  # "FLZ"
_POLL_SECONDS = 0.01

_guard = threading.Lock()
_local_locks: dict[int, threading.Lock] = {}


class RouterBusy(TimeoutError):
    """Another operation held the router longer than we may wait."""


def _local_lock(router_id: int) -> threading.Lock:
    with _guard:
        return _local_locks.setdefault(router_id, threading.Lock())


def _advisory_available() -> bool:
    return connection.vendor == "postgresql"


def _try_advisory(router_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [ADVISORY_NAMESPACE, router_id])
        return bool(cursor.fetchone()[0])


def _release_advisory(router_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [ADVISORY_NAMESPACE, router_id])


@contextmanager
def router_lock(router_id: int, timeout: float) -> Iterator[None]:
    """Hold the router for one session's work; raise RouterBusy after `timeout` seconds of waiting."""
    deadline = time.monotonic() + max(timeout, 0.0)
    local = _local_lock(router_id)
    if not local.acquire(timeout=max(timeout, 0.0)):
        raise RouterBusy(f"router {router_id} stayed busy for {timeout:.0f} s")
    try:
        if _advisory_available():
            # Polled try-lock rather than pg_advisory_lock: the wait stays bounded and interruptible.
            while not _try_advisory(router_id):
                if time.monotonic() >= deadline:
                    raise RouterBusy(f"router {router_id} stayed busy (another worker) for {timeout:.0f} s")
                time.sleep(_POLL_SECONDS)
            try:
                yield
            finally:
                _release_advisory(router_id)
        else:
            yield
    finally:
        local.release()


@contextmanager
def try_router_lock(router_id: int) -> Iterator[bool]:
    """Take the router only if nobody holds it (for background chores such as keepalive and saves)."""
    local = _local_lock(router_id)
    if not local.acquire(blocking=False):
        yield False
        return
    try:
        if _advisory_available() and not _try_advisory(router_id):
            yield False
            return
        try:
            yield True
        finally:
            if _advisory_available():
                _release_advisory(router_id)
    finally:
        local.release()

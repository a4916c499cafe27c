"""One session at a time per router: an in-process lock plus a lock shared between processes.

The in-process lock orders the threads of one worker without touching the database. Between
processes: on PostgreSQL an advisory lock (session level, keyed on the router id) orders worker
processes on any machine that share the database, and PostgreSQL drops it by itself when a
SIGKILLed worker's connection closes; on SQLite (the demo, where every process is on this machine
beside the database file, e.g. two API workers running the thread queue) an exclusive `flock` on a
file per router next to the database, which the kernel drops when the process dies. Either way a
dead worker never leaves a router locked.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


def _lock_file(router_id: int) -> Path:
    """The router's lock file for this database: every process using the same SQLite file finds it."""
    database = str(connection.settings_dict["NAME"])
    directory = Path(tempfile.gettempdir()) / f"flexzone-routers-{hashlib.sha256(database.encode()).hexdigest()[:16]}"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory / f"router-{router_id}.lock"


def _try_file_lock(router_id: int) -> int | None:
    """An open descriptor holding the router's file lock, or None if another process holds it."""
    descriptor = os.open(_lock_file(router_id), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def _release_file_lock(descriptor: int) -> None:
    fcntl.flock(descriptor, fcntl.LOCK_UN)
    os.close(descriptor)


@contextmanager
def _process_lock(router_id: int, deadline: float | None, timeout: float) -> Iterator[bool]:
    """Hold the router against other processes (advisory lock or lock file). With `deadline` None, try
    once and yield False if taken; otherwise poll until the deadline and raise RouterBusy."""
    advisory = _advisory_available()
    while True:
        descriptor = None
        taken = _try_advisory(router_id) if advisory else (descriptor := _try_file_lock(router_id)) is not None
        if taken:
            break
        if deadline is None:
            yield False
            return
        if time.monotonic() >= deadline:
            raise RouterBusy(f"router {router_id} stayed busy (another worker) for {timeout:.0f} s")
        time.sleep(_POLL_SECONDS)
    try:
        yield True
    finally:
        if advisory:
            _release_advisory(router_id)
        elif descriptor is not None:  # taken, so the lock file's
            _release_file_lock(descriptor)


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
        # Polled try-locks rather than blocking ones: the wait stays bounded and interruptible.
        with _process_lock(router_id, deadline, timeout):
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
        with _process_lock(router_id, None, 0.0) as taken:
            yield taken
    finally:
        local.release()

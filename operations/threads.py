"""The process's one pool of operation threads, and running work on a connection of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from django.db import close_old_connections, connection

from operations.conf import ops_settings

T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None
_guard = threading.Lock()


def operations_pool() -> ThreadPoolExecutor:
    """FLEXZONE_OPS_WORKER_CONCURRENCY threads that run operations (the chores have their own thread)."""
    global _pool
    with _guard:
        if _pool is None:
            _pool = ThreadPoolExecutor(ops_settings().worker_concurrency, thread_name_prefix="flexzone-op")
        return _pool


def in_own_connection(func: Callable[..., T], *args) -> T:
    """Run `func` on this thread's own database connection, closed afterwards (threads outlive requests)."""
    close_old_connections()
    try:
        return func(*args)
    finally:
        connection.close()

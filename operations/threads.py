"""The process's one pool of operation threads, the threads on which an operation's routers are worked
at once, and running work on a connection of its own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from operations.conf import ops_settings

T = TypeVar("T")
log = logging.getLogger(__name__)
_pool: ThreadPoolExecutor | None = None
_routers: ThreadPoolExecutor | None = None
_guard = threading.Lock()
_router_connections: dict[int, BaseDatabaseWrapper] = {}  # each router thread's connection, to close at the end


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


def router_threads() -> ThreadPoolExecutor:
    """The threads an operation's router steps run on at once (`at_once`): apart from the operations'
    own, which wait on them (a pool shared by both could fill with waiting operations)."""
    global _routers
    with _guard:
        if _routers is None:
            _routers = ThreadPoolExecutor(_router_thread_count(), thread_name_prefix="flexzone-router")
        return _routers


def at_once(works: list[Callable[[], T]], *, threads: int = 0) -> tuple[list[T], int]:
    """Run each of `works` at the same time, the first on this thread and each other on a router
    thread, and return their results in order, and how many ran at a time (1: one after the other).
    Each router thread keeps its database connection between works (reused while younger than
    CONN_MAX_AGE, as a request's would be). With `threads`, the works (a fleet's routers) run on that
    many threads of their own instead, which end with the call: queued behind them on the shared
    router threads, an operation's second router would wait for all of them. Inside a transaction
    (the caller's atomic block, whose rows no other connection can see) and for a single work, they
    run here, one after the other. An exception a work raises is raised once every work has ended
    (the others are logged)."""
    if len(works) < 2 or connection.in_atomic_block:
        return [work() for work in works], 1
    if threads:
        with ThreadPoolExecutor(threads, thread_name_prefix="flexzone-fleet") as own:
            futures = [own.submit(in_own_connection, work) for work in works[1:]]
            return _gather(works[0], futures), min(len(works), 1 + threads)
    futures = [router_threads().submit(_on_router_thread, work) for work in works[1:]]
    return _gather(works[0], futures), min(len(works), 1 + _router_thread_count())


def _gather(first: Callable[[], T], futures: list[Future[T]]) -> list[T]:
    """`first()` here, then each future's result, in order; the first exception raised once all ended."""
    results, failure = [], None
    try:
        results.append(first())  # here, on this thread's own connection
    except BaseException as exc:  # noqa: BLE001 - raised below, once all have ended
        failure = exc
    for future in futures:
        try:
            results.append(future.result())
        except BaseException as exc:  # noqa: BLE001 - raised below, once all have ended
            if failure is not None:
                log.error("a router's work failed beside another's failure", exc_info=exc)
            failure = failure or exc
    if failure is not None:
        raise failure
    return results


def _router_thread_count() -> int:
    # One per operation thread: an add's second router (the first is worked on the operation's own
    # thread) never waits, and each keeps one database connection (a worker holds twice its
    # concurrency, not more).
    return ops_settings().worker_concurrency


def _on_router_thread(work: Callable[[], T]) -> T:
    close_old_connections()  # one past its age or broken is replaced; a live one is kept
    try:
        return work()
    finally:
        close_old_connections()
        with _guard:
            _router_connections[threading.get_ident()] = connections[DEFAULT_DB_ALIAS]  # this thread's own


def stop_router_threads() -> None:
    """End the router threads and close the database connections they kept (before a test database is
    dropped, say: an open connection would hold it). The next `at_once` starts them again."""
    global _routers
    with _guard:
        routers, _routers = _routers, None
        kept = list(_router_connections.values())
        _router_connections.clear()
    if routers is not None:
        routers.shutdown(wait=True)
    for wrapper in kept:  # their threads have ended: nobody else uses them
        if wrapper.connection is not None:
            wrapper.connection.close()

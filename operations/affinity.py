"""Work goes where the session is: an operation is queued for the worker process that already holds a
logged-in session to its router, so that it runs on that session instead of another process asking
for the slot (a logout and a login: ~12 s on a McData Eclipse).

Each `manage.py worker` takes jobs from the shared queue and from a queue of its own, named after its
pool's holder, the name its `RouterSession` rows carry (`operations@<digest of host:pid:nonce>`). `queue_for`
picks the queue when an operation is submitted: the holder with live sessions to most of the plan's
routers (the first router's holder on a tie), else the shared queue.

Nothing waits on one process while another could run it (every worker's chores, each second): a
worker with free slots and nothing waiting in its own queues takes the oldest jobs that waited in
another process's queue longer than FLEXZONE_OPS_AFFINITY_WAIT seconds (`steal`: that process is
busy; while every worker has work nothing moves, since moving would only cost a login), and a job
whose process no longer beats (it died, or gave its sessions up) goes back to the shared queue
(`release_stale`). Either way the workers listening on the new queue are told at once.
FLEXZONE_OPS_AFFINITY_WAIT=0 turns routing off: every job goes to the shared queue.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from operations.budget import WORKER_MARK
from operations.conf import ops_settings
from operations.models import Operation, RouterSession

SHARED = "operations"
_serving: tuple[str, int] | None = None  # (own queue, slots) of this process, when it is a worker
_stopping: str | None = None  # the own queue of this worker once it stopped taking jobs
_running = 0  # operations this worker runs now
_count_guard = threading.Lock()
_OWN_PREFIX = SHARED + "@"
DIGEST = 16  # hex digits of a holder's digest in its queue's name


def own_queue(holder: str) -> str:
    """The queue of the process whose pool holds sessions as `holder`: named by a digest of it, since
    procrastinate notifies on a channel named after the queue, and PostgreSQL refuses channel names over
    63 bytes (a host name alone may be longer)."""
    return _OWN_PREFIX + hashlib.md5(holder.encode(), usedforsecurity=False).hexdigest()[:DIGEST]


def plan_routers(plan: dict[str, Any]) -> list[int]:
    """The routers a plan drives, in step order (an invoke's one router)."""
    ids = [step["router_id"] for step in plan.get("steps", []) if step.get("router_id") is not None]
    if plan.get("router_id") is not None:
        ids.append(plan["router_id"])
    return list(dict.fromkeys(ids))


def queue_for(plan: dict[str, Any]) -> str:
    """The queue an operation with this plan goes to: its routers' live session holder's, or the shared one."""
    conf = ops_settings()
    routers = plan_routers(plan)
    if conf.affinity_wait <= 0 or not routers:
        return SHARED
    alive = timezone.now() - timedelta(seconds=conf.stale_after)
    # Only workers take jobs from a queue: a CLI reconcile's sessions, say, are no place to send work.
    rows = list(RouterSession.objects.filter(router_id__in=routers, heartbeat_at__gte=alive, release_wanted=False,
                                             holder__startswith=WORKER_MARK)
                .order_by("pk").values_list("router_id", "holder"))
    if not rows:
        return SHARED
    counts = Counter(holder for _router, holder in rows)
    first = {holder: min(routers.index(router) for router, other in rows if other == holder) for holder in counts}
    chosen = min(counts, key=lambda holder: (-counts[holder], first[holder]))
    return own_queue(chosen)


def release_stale() -> int:
    """Send back to the shared queue every job waiting in the queue of a process that has no live
    session row any more (it died, or gave its sessions up), and, while this worker is stopping,
    every job waiting in its own queue; returns how many."""
    stale = ops_settings().stale_after
    moved = _move(SHARED, f"""NOT EXISTS (
        SELECT 1 FROM {RouterSession._meta.db_table} AS s
        WHERE %s || left(md5(s.holder), %s) = job.queue_name
          AND s.heartbeat_at >= now() - make_interval(secs => %s))""",
                  [_OWN_PREFIX, DIGEST, stale])
    if _stopping is not None:
        moved += _move(SHARED, "job.queue_name = %s", [_stopping])
    return moved


def serve(queue: str, concurrency: int) -> None:
    """This process is a worker taking jobs from `queue` (and the shared one) with `concurrency` slots."""
    global _serving, _stopping
    _serving, _stopping = (queue, concurrency), None


def stop_serving() -> None:
    """The worker takes no new job (SIGTERM): it steals nothing more, and its chores hand what waits in
    its own queue, or is routed there while it drains, to the shared queue."""
    global _serving, _stopping
    if _serving is not None:
        _stopping = _serving[0]
        _serving = None


@contextmanager
def running() -> Iterator[None]:
    """Count an operation this worker runs in one of its slots."""
    global _running
    with _count_guard:
        _running += 1
    try:
        yield
    finally:
        with _count_guard:
            _running -= 1


def steal() -> int:
    """A worker with free slots and nothing waiting in its queues takes, into its own queue, the oldest
    jobs that waited in another process's queue longer than FLEXZONE_OPS_AFFINITY_WAIT (that process is
    busy): as many as it has free slots; returns how many. While every worker has work, nothing moves:
    it would only cost a login."""
    serving = _serving
    if serving is None:
        return 0
    queue, concurrency = serving
    with _count_guard:
        free = concurrency - _running
    if free <= 0:
        return 0
    wait = max(ops_settings().affinity_wait, 0)
    return _move(queue, f"""job.queue_name <> %s AND EXISTS (
        SELECT 1 FROM {Operation._meta.db_table} AS op WHERE op.id = (job.args ->> 'operation_id')::bigint
        AND op.created_at < now() - make_interval(secs => %s)) AND NOT EXISTS (
        SELECT 1 FROM procrastinate_jobs AS mine WHERE mine.status = 'todo' AND mine.queue_name IN (%s, %s))""",
                 [queue, wait, queue, SHARED], limit=free)


def _move(queue: str, condition: str, params: list[Any], limit: int | None = None) -> int:
    """Move the waiting jobs of processes' own queues that meet `condition` (on `job`), oldest first, at
    most `limit`, to `queue`, and wake the workers listening there. Times are the database's clock, the
    one every host's rows are compared on."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH picked AS (
                SELECT job.id FROM procrastinate_jobs AS job
                WHERE job.status = 'todo' AND job.queue_name LIKE %s AND ({condition})
                ORDER BY job.id LIMIT %s FOR UPDATE OF job SKIP LOCKED
            ), moved AS (
                UPDATE procrastinate_jobs AS job SET queue_name = %s FROM picked WHERE job.id = picked.id
                RETURNING job.id
            )
            SELECT count(pg_notify(%s, json_build_object('type', 'job_inserted', 'job_id', id)::text)) FROM moved
            """,
            [_OWN_PREFIX + "%", *params, limit, queue, f"procrastinate_queue_v1#{queue}"],
        )
        return cursor.fetchone()[0]

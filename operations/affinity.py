"""Work goes where the session is: an operation is queued for the worker process that already holds a
logged-in session to its router, so that it runs on that session instead of another process asking
for the slot (a logout and a login: ~12 s on a McData Eclipse).

Each `manage.py worker` takes jobs from the shared queue and from a queue of its own, named after its
pool's holder (`operations@<host:pid:nonce>`, the name its `RouterSession` rows carry). `queue_for`
picks the queue when an operation is submitted: the holder with live sessions to most of the plan's
routers (the first router's holder on a tie), else the shared queue.

Nothing waits on one process for long (`release_stale`, run by every worker's chores each second):
a job still waiting in a process's own queue after FLEXZONE_OPS_AFFINITY_WAIT seconds (its holder is
busy) while nothing waits in the shared queue (so another worker may be idle), or whose holder no
longer beats (it died, or gave its sessions up), goes back to the shared queue, and the workers
listening there are told at once. Every worker also takes from the shared queue, oldest job first, so
a job moved there runs before anything newer. FLEXZONE_OPS_AFFINITY_WAIT=0 turns routing
off: every job goes to the shared queue.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from operations.conf import ops_settings
from operations.models import Operation, RouterSession

SHARED = "operations"
_OWN_PREFIX = SHARED + "@"


def own_queue(holder: str) -> str:
    """The queue of the process whose pool holds sessions as `holder`."""
    return _OWN_PREFIX + holder


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
    rows = list(RouterSession.objects.filter(router_id__in=routers, heartbeat_at__gte=alive, release_wanted=False)
                .values_list("router_id", "holder"))
    if not rows:
        return SHARED
    counts = Counter(holder for _router, holder in rows)
    first = {holder: min(routers.index(router) for router, other in rows if other == holder) for holder in counts}
    chosen = min(counts, key=lambda holder: (-counts[holder], first[holder]))
    return own_queue(chosen)


def release_stale() -> int:
    """Send back to the shared queue every job that waited in a process's own queue longer than
    FLEXZONE_OPS_AFFINITY_WAIT while the shared queue has nothing waiting (another worker may be idle;
    when every worker has work, moving it would only cost a login), or whose process has no live
    session row any more; returns how many."""
    conf = ops_settings()
    alive = timezone.now() - timedelta(seconds=conf.stale_after)
    waited = timezone.now() - timedelta(seconds=max(conf.affinity_wait, 0))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH moved AS (
                UPDATE procrastinate_jobs AS job SET queue_name = %s
                FROM {Operation._meta.db_table} AS op
                WHERE op.job_id = job.id AND job.status = 'todo' AND job.queue_name LIKE %s
                  AND ((op.created_at < %s AND NOT EXISTS (
                      SELECT 1 FROM procrastinate_jobs AS shared WHERE shared.status = 'todo'
                      AND shared.queue_name = %s)) OR NOT EXISTS (
                      SELECT 1 FROM {RouterSession._meta.db_table} AS s
                      WHERE %s || s.holder = job.queue_name AND s.heartbeat_at >= %s))
                RETURNING job.id
            )
            SELECT count(pg_notify(%s, json_build_object('type', 'job_inserted', 'job_id', id)::text)) FROM moved
            """,
            [SHARED, _OWN_PREFIX + "%", waited, SHARED, _OWN_PREFIX, alive, f"procrastinate_queue_v1#{SHARED}"],
        )
        return cursor.fetchone()[0]

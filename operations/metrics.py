"""What the engine counts for Prometheus: operations, their phase durations, retries, sessions, leases.

Counters and histograms are updated where the work happens (in a worker process, or in the API
process with the thread queue); prometheus-client keeps them in memory-mapped files under
PROMETHEUS_MULTIPROC_DIR when that is set (flexzone/settings.py sets it from FLEXZONE_METRICS_DIR),
so every process sharing the directory is reported by one scrape. What the database already knows
(queue depth, links by state, the last reconcile's drift) is read at scrape time instead: see
`registry_snapshot`, used by the API's /metrics collector.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client import Counter, Gauge, Histogram, multiprocess

from operations.models import Link, Operation
from registry.models import Router

# Seconds: from a planner lookup (milliseconds) to an Eclipse's 12 s login plus retries (minutes).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 60, 120, 300)
PHASES = ("registry", "invocation", "router", "total")

operations_total = Counter(
    "flexzone_operations",
    "Operations that ended, by kind, router platform(s) and outcome (the journal's final state).",
    ["kind", "platform", "outcome"],
)
operation_seconds = Histogram(
    "flexzone_operation_duration_seconds",
    "Time an operation spent per phase: registry (lookups, planning), invocation (flexzone's own work), "
    "router (waiting on routers, logins included) and total.",
    ["kind", "phase"],
    buckets=DURATION_BUCKETS,
)
retries_total = Counter(
    "flexzone_router_retries",
    "Router step attempts that failed transiently and were retried, by platform.",
    ["platform"],
)
lease_expiries_total = Counter(
    "flexzone_lease_expiries",
    "Leases that ran out and got a removal submitted.",
)
sessions_open = Gauge(
    "flexzone_router_sessions_open",
    "Logged-in router sessions (pooled or in use), by platform, summed over live processes.",
    ["platform"],
    multiprocess_mode="livesum",
)
ledger_signing_refused = Gauge(
    "flexzone_ledger_signing_refused",
    "1 while a process refuses to sign the ledger's head: the chain no longer holds the last head it witnessed "
    "outside the database (operations/witness.py); manage.py audit verify says what changed.",
    multiprocess_mode="livemax",
)


if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # A process that ends has no sessions open: its live gauges leave the sums (a killed one's are
    # dropped by the next scrape, api.metrics).
    atexit.register(lambda: multiprocess.mark_process_dead(os.getpid()))


def platforms_of(op: Operation) -> str:
    """The label for the routers an operation drove: their platforms, sorted and joined by '+'; 'all' for a
    reconcile or listing of every router; 'none' when it had no router to drive (a removal of nothing)."""
    steps = (op.plan or {}).get("steps") or []
    names = {step.get("platform", "") for step in steps if isinstance(step, dict)} - {""}
    if not names and op.kind in (Operation.Kind.RECONCILE, Operation.Kind.LIST, Operation.Kind.INVOKE):
        router = (op.request or {}).get("router")
        if not router:
            return "all"
        names = set(Router.objects.filter(name=router).values_list("platform", flat=True))
    return "+".join(sorted(names)) or "none"


def operation_ended(op: Operation) -> None:
    """Count one operation that a worker of this process ran to its end, with its phase timings."""
    operations_total.labels(op.kind, platforms_of(op), op.state).inc()
    timings = {"registry": op.registry_ms, "invocation": op.invocation_ms, "router": op.router_ms,
               "total": op.total_ms}
    for phase in PHASES:
        operation_seconds.labels(op.kind, phase).observe(max(0.0, timings[phase]) / 1000)


def report_sessions(platforms: Iterable[str]) -> None:
    """Set the open-session gauge from this process's sessions (one platform name per session)."""
    counts = dict.fromkeys([platform.value for platform in Router.Platform], 0)
    for platform in platforms:
        counts[platform] = counts.get(platform, 0) + 1
    for platform, count in counts.items():
        sessions_open.labels(platform).set(count)


def registry_snapshot() -> dict[str, Any]:
    """What the database says now: queued and running operations, the oldest queued one's age, links
    by state. Three cheap aggregate queries, run per scrape."""
    by_state = dict(
        Operation.objects.filter(state__in=(Operation.State.QUEUED, Operation.State.RUNNING))
        .values_list("state").annotate(count=Count("id")).order_by()
    )
    oldest = Operation.objects.filter(state=Operation.State.QUEUED).aggregate(oldest=Min("created_at"))["oldest"]
    links = dict(Link.objects.values_list("state").annotate(count=Count("id")).order_by())
    return {
        "queued": by_state.get(Operation.State.QUEUED, 0),
        "running": by_state.get(Operation.State.RUNNING, 0),
        "oldest_queued_seconds": (timezone.now() - oldest).total_seconds() if oldest else 0.0,
        "links": {state: links.get(state, 0) for state in Link.State.values},
    }

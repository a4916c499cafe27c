"""The engine's settings, read once per use from Django settings (see the block in flexzone/settings.py)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class OpsSettings:
    queue: str
    pool: bool
    pool_idle: float
    keepalive: float
    save_config: str
    save_after: float
    total_timeout: float
    max_attempts: int
    backoff: float
    backoff_max: float
    router_wait: float
    heartbeat: float
    stale_after: float
    reap_every: int
    lease_every: int
    settle_every: int
    max_lease: float
    worker_concurrency: int
    affinity_wait: float


def ops_settings() -> OpsSettings:
    """Current values; tests change them with pytest-django's `settings` fixture."""
    return OpsSettings(
        queue=getattr(settings, "FLEXZONE_OPS_QUEUE", "manual"),
        pool=getattr(settings, "FLEXZONE_OPS_POOL", True),
        pool_idle=getattr(settings, "FLEXZONE_OPS_POOL_IDLE", 300.0),
        keepalive=getattr(settings, "FLEXZONE_OPS_KEEPALIVE", 30.0),
        save_config=getattr(settings, "FLEXZONE_OPS_SAVE_CONFIG", "idle"),
        save_after=getattr(settings, "FLEXZONE_OPS_SAVE_AFTER", 2.0),
        total_timeout=getattr(settings, "FLEXZONE_OPS_TOTAL_TIMEOUT", 180.0),
        max_attempts=getattr(settings, "FLEXZONE_OPS_MAX_ATTEMPTS", 5),
        backoff=getattr(settings, "FLEXZONE_OPS_BACKOFF", 0.5),
        backoff_max=getattr(settings, "FLEXZONE_OPS_BACKOFF_MAX", 8.0),
        router_wait=getattr(settings, "FLEXZONE_OPS_ROUTER_WAIT", 120.0),
        heartbeat=getattr(settings, "FLEXZONE_OPS_HEARTBEAT", 2.0),
        stale_after=getattr(settings, "FLEXZONE_OPS_STALE_AFTER", 15.0),
        reap_every=getattr(settings, "FLEXZONE_OPS_REAP_EVERY", 5),
        lease_every=getattr(settings, "FLEXZONE_OPS_LEASE_EVERY", 10),
        settle_every=getattr(settings, "FLEXZONE_OPS_SETTLE_EVERY", 30),
        max_lease=getattr(settings, "FLEXZONE_OPS_MAX_LEASE", 30 * 86400.0),
        worker_concurrency=getattr(settings, "FLEXZONE_OPS_WORKER_CONCURRENCY", 20),
        affinity_wait=getattr(settings, "FLEXZONE_OPS_AFFINITY_WAIT", 2.0),
    )

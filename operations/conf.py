"""The engine's settings, read once per use from Django settings. Their defaults and rules are written
once, in flexzone/settings.py (where each is read from the environment and checked at start-up)."""

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
        queue=settings.FLEXZONE_OPS_QUEUE,
        pool=settings.FLEXZONE_OPS_POOL,
        pool_idle=settings.FLEXZONE_OPS_POOL_IDLE,
        keepalive=settings.FLEXZONE_OPS_KEEPALIVE,
        save_config=settings.FLEXZONE_OPS_SAVE_CONFIG,
        save_after=settings.FLEXZONE_OPS_SAVE_AFTER,
        total_timeout=settings.FLEXZONE_OPS_TOTAL_TIMEOUT,
        max_attempts=settings.FLEXZONE_OPS_MAX_ATTEMPTS,
        backoff=settings.FLEXZONE_OPS_BACKOFF,
        backoff_max=settings.FLEXZONE_OPS_BACKOFF_MAX,
        router_wait=settings.FLEXZONE_OPS_ROUTER_WAIT,
        heartbeat=settings.FLEXZONE_OPS_HEARTBEAT,
        stale_after=settings.FLEXZONE_OPS_STALE_AFTER,
        reap_every=settings.FLEXZONE_OPS_REAP_EVERY,
        lease_every=settings.FLEXZONE_OPS_LEASE_EVERY,
        settle_every=settings.FLEXZONE_OPS_SETTLE_EVERY,
        max_lease=settings.FLEXZONE_OPS_MAX_LEASE,
        worker_concurrency=settings.FLEXZONE_OPS_WORKER_CONCURRENCY,
        affinity_wait=settings.FLEXZONE_OPS_AFFINITY_WAIT,
    )

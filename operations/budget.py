"""Each router's session budget, across every process on every host: flexzone never holds more CLI
sessions to a router than its budget (`Router.session_budget`, or the platform's default), idle
pooled sessions included, so that the sessions a device accepts are left for people.

Every session a process opens is a `RouterSession` row, written before the login and deleted after the
logout. A process that finds the budget taken asks the holders of idle sessions to give them up
(`release_wanted`): their pools log those out within a chore round (pool.py) and delete the rows. It
asks while holding the router (locking.router_lock, across processes), so every other session to that
router is idle then. A row whose process stopped beating for FLEXZONE_OPS_STALE_AFTER seconds (it
died) is taken away; a process that only stalled finds its slot gone and logs out of that session
before it would use it again (pool.py), then claims a slot like any other login.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from operations.conf import ops_settings
from operations.locking import RouterBusy
from operations.models import RouterSession
from registry.models import Router
from routers.drivers import DRIVERS

_POLL = 0.05  # s between looks while holders log out


WORKER_MARK = "worker@"  # begins the holder name of a `manage.py worker` (operations/affinity.py routes to it)


def process_holder(worker: bool = False) -> str:
    """This process's name in the session table (a nonce tells a restarted pid apart); a worker's is
    marked, so that operations are routed only to processes that take jobs from a queue."""
    mark = WORKER_MARK if worker else ""
    return f"{mark}{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def budget_of(router: Router) -> int:
    return router.session_budget or DRIVERS[router.platform].session_budget


def claim(router_id: int, holder: str, budget: int, deadline: float) -> None:
    """Count a session of `holder` to the router before it logs in, waiting (until the monotonic
    `deadline`) for other processes to give idle ones up; RouterBusy if the budget stays taken. The
    caller holds the router."""
    asked = False
    while True:
        with transaction.atomic():
            stale = timezone.now() - timedelta(seconds=ops_settings().stale_after)
            RouterSession.objects.filter(router_id=router_id, heartbeat_at__lt=stale).delete()
            held = list(RouterSession.objects.select_for_update().filter(router_id=router_id)
                        .order_by("heartbeat_at").values_list("pk", "holder"))
            mine = [pk for pk, name in held if name == holder]
            if mine and not RouterSession.objects.filter(pk=mine[0], release_wanted=True).exists():
                return  # already counted (a session replaced on the spot)
            # Ours but wanted by another process: our pool is giving it up; wait for that, then count anew.
            if not mine and len(held) < budget:
                try:
                    with transaction.atomic():
                        RouterSession.objects.create(router_id=router_id, holder=holder)
                    return
                except IntegrityError:
                    return  # counted meanwhile by another thread of this process
            if not asked:  # the longest idle first: as many as it takes to leave one slot
                RouterSession.objects.filter(pk__in=[pk for pk, _name in held[: len(held) - budget + 1]]).update(
                    release_wanted=True)
                asked = True
        time.sleep(_POLL)  # also when the deadline has passed: a caller that retries at once does not spin
        if time.monotonic() >= deadline:
            raise RouterBusy(f"its session budget ({budget}) is held by other flexzone processes")


def holds(router_id: int, holder: str) -> bool:
    """Whether `holder` still has its slot on the router (another process takes a stale one away)."""
    return RouterSession.objects.filter(router_id=router_id, holder=holder).exists()


def release(router_id: int, holder: str) -> None:
    RouterSession.objects.filter(router_id=router_id, holder=holder).delete()


def release_all(holder: str) -> None:
    RouterSession.objects.filter(holder=holder).delete()


def beat(holder: str) -> tuple[set[int], set[int]]:
    """Keep this process's rows alive: (routers it still has a row for, those others want given up). A
    router missing from the first was taken away as stale: its session is no longer counted."""
    rows = RouterSession.objects.filter(holder=holder)
    rows.update(heartbeat_at=timezone.now())
    found = list(rows.values_list("router_id", "release_wanted"))
    return {router_id for router_id, _wanted in found}, {router_id for router_id, wanted in found if wanted}

"""Periodic chores: re-run operations whose worker died, remove links whose lease ran out, settle
the link records failed operations left stuck once their router answers again, and seal the audit
trail and ended operations into the ledger (operations/ledger.py).

They run on a thread of their own in every process that runs operations (the thread queue's
process, each `manage.py worker`), never in the operations' slots: twenty operations waiting on a
hung router must not hold up the reaper or lease expiry. Running them in several processes at once
is safe: a stalled operation is claimed once, and a lease yields one removal.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from operations import affinity, ledger, queue
from operations.conf import ops_settings
from operations.converge import link_pairs
from operations.desired import desired_settled_and_pending
from operations.intake import submit
from operations.metrics import lease_expiries_total
from operations.models import Grant, Link, Operation
from operations.planner import PlanError

log = logging.getLogger(__name__)

SETTLE_BACKOFF_ROUNDS = 16  # a router that stays down gets a settle every 16 rounds at most (8 min at 30 s)
SETTLE_FAILURES_COUNTED = 1 + SETTLE_BACKOFF_ROUNDS.bit_length()  # failures in a row past which the wait stays


def stalled_operations() -> list[int]:
    """Running operations whose heartbeat stopped (their worker was killed or lost its database)."""
    stale = timezone.now() - timedelta(seconds=ops_settings().stale_after)
    return list(
        Operation.objects.filter(state=Operation.State.RUNNING, heartbeat_at__lt=stale).values_list("pk", flat=True)
    )


def reap_stalled_operations() -> list[int]:
    """Queue every stalled operation again; `execute` claims it once and re-runs it in recovery mode."""
    ids = stalled_operations()
    for operation_id in ids:
        log.warning("operation %s: worker stopped heart-beating; queueing it again", operation_id)
        queue.current().requeue(operation_id)
    return ids


def expire_leases() -> list[int]:
    """Submit an expiry for every grant past its lease that has none pending; returns the operation ids.

    The grant is never edited here: past its expiry it is out of the desired state (operations/desired.py),
    so no converge puts its access back, and the expiry operation takes its links off and ends it. While
    an expiry of the grant, or a connect or disconnect of its site and device, is queued or running, the
    sweep leaves it to that one; while the grant's expiries fail, the next is asked a round after the
    last failure, then two, four... up to `SETTLE_BACKOFF_ROUNDS` rounds. A renewal that ran meanwhile
    moved `expires_at` and the grant is no longer due.
    """
    created = []
    due = Grant.objects.filter(expires_at__lte=timezone.now()).select_related("site", "device")
    for grant in list(due):
        if _expiry_pending_or_backing_off(grant):
            continue
        with transaction.atomic():
            # One expiry per lease, whichever process sweeps: the grant's row is the token.
            if not Grant.objects.select_for_update(skip_locked=True).filter(
                    pk=grant.pk, expires_at=grant.expires_at).exists() or _expiry_pending_or_backing_off(grant):
                continue
            op = submit_expiry(grant)
        if op is not None:
            created.append(op.pk)
            lease_expiries_total.inc()
    return created


def submit_expiry(grant: Grant) -> Operation | None:
    """Submit the expiry of `grant`'s lease (None: it cannot be planned, and that is journaled once)."""
    request = {
        "site": grant.site.name,
        "device_description": grant.device.description,
        "lease_expired_at": grant.expires_at.isoformat() if grant.expires_at else None,
        "grant": grant.pk,
    }
    try:
        return submit(Operation.Kind.EXPIRE, request)
    except PlanError as exc:
        # Never dropped: the lease stays due (later sweeps try again, say after the registry is
        # mended), and the failure is journaled once where operators look for it.
        _journal_unplannable(request, exc)
        return None


def _expiry_pending_or_backing_off(grant: Grant) -> bool:
    """An expiry of `grant`, or another request of its site and device, is queued or running; or its
    expiries failed too recently to ask again (`_backing_off`)."""
    live = (Operation.State.QUEUED, Operation.State.RUNNING)
    others = (Operation.objects.filter(state__in=live, plan__ids__site=grant.site_id)
              .exclude(kind__in=(Operation.Kind.LIST, Operation.Kind.RECONCILE)).values_list("plan", flat=True))
    if any(grant.device.description in plan.get("devices", []) for plan in others):
        return True
    latest = (Operation.objects.filter(kind=Operation.Kind.EXPIRE, request__grant=grant.pk)
              .order_by("-pk").values_list("state", "finished_at")[:SETTLE_FAILURES_COUNTED])
    return _backing_off(list(latest), ops_settings().lease_every)


def _backing_off(latest: list[tuple[str, datetime | None]], every: float) -> bool:
    """Whether to leave a chore's next request for later, given its latest ones (state, finished_at),
    newest first: one is queued or running, or the last k failed in a row and the last of them
    ended less than 2**(k-1) rounds of `every` seconds ago (at most SETTLE_BACKOFF_ROUNDS)."""
    if latest and latest[0][0] in (Operation.State.QUEUED, Operation.State.RUNNING):
        return True
    failures = next((index for index, (state, _at) in enumerate(latest) if state != Operation.State.FAILED),
                    len(latest))
    if not failures or latest[0][1] is None:
        return False
    wait = every * min(2 ** (failures - 1), SETTLE_BACKOFF_ROUNDS)
    return latest[0][1] > timezone.now() - timedelta(seconds=wait)


def settle_stranded_links(routers: list[str] | None = None) -> list[int]:
    """Submit a settle for each router whose link records an ended operation left `configuring` or
    `removing`, or that has an up link no grant needs; returns the operation ids.

    A stuck record is a change that may or may not be on its router (the router stopped answering
    before the operation could tell). The settle (a repair of those records, and of up links no grant
    needs, only) takes such a link where the grants say once the router answers, so a failed
    connect's leftovers do not wait for a person. A router that already has a settle queued or
    running is left to that one. While a router's settles fail (it stays down), each is asked a
    round after the last failure, then two, four... up to `SETTLE_BACKOFF_ROUNDS` rounds, so that the
    journal does not fill with failures; a settle that succeeds brings it back to every round.
    `routers` limits the sweep to those names.
    """
    live = (Operation.State.QUEUED, Operation.State.RUNNING)
    stranded = (
        Link.objects.filter(state__in=(Link.State.REQUESTED, Link.State.CONFIGURING, Link.State.REMOVING))
        .exclude(operation__state__in=live)
        .filter(**({"router__name__in": routers} if routers is not None else {}))
        .values_list("router__name", flat=True)
        .distinct()
    )
    created = []
    for name in sorted(set(stranded) | _ungranted(routers)):
        if _settle_pending_or_backing_off(name):
            continue
        created.append(submit(Operation.Kind.RECONCILE, {"repair": True, "policy": "registry", "router": name,
                                                         "settle": True}).pk)
    return created


def _settle_pending_or_backing_off(router: str) -> bool:
    """A settle of `router` is queued or running, or its last ones failed too recently (`_backing_off`)."""
    latest = list(Operation.objects.filter(kind=Operation.Kind.RECONCILE, request__router=router, request__settle=True)
                  .order_by("-pk").values_list("state", "finished_at")[:SETTLE_FAILURES_COUNTED])
    return _backing_off(latest, ops_settings().settle_every)


def _ungranted(routers: list[str] | None) -> set[str]:
    """The routers with an up link no grant needs (its hold ended and the link stayed: a failed
    connect's leftover, a lock deleted behind the engine's back)."""
    up = (Link.objects.filter(state=Link.State.UP).exclude(operation__state__in=(Operation.State.QUEUED,
                                                                                  Operation.State.RUNNING))
          .filter(**({"router__name__in": routers} if routers is not None else {}))
          .select_related("router", "zone", "device", "operation"))
    rows = list(up)
    if not rows:
        return set()
    ended_badly = (Operation.State.FAILED, Operation.State.ROLLED_BACK)
    settled, wanted = desired_settled_and_pending({row.router_id for row in rows})  # `wanted`: pending ones too
    names = set()
    for row in rows:
        key = row.key
        want = wanted.get(row.router_id, {}).get(key)
        if want is None or (want.targets and row.device.wwn not in want.targets):
            names.add(row.router.name)  # the settle itself decides, under the router, what comes off
        elif want.targets:
            # FCIP: the pairs recorded are those the settled grants need, and at most those a pending
            # one adds (else a failed connect's extension, or a failed remove's shrink, is left); a
            # link whose last change failed may zone what its record does not say: it is read.
            floor = settled.get(row.router_id, {}).get(key)
            if (not (floor.pairs if floor else set()) <= link_pairs(row) <= want.pairs
                    or (row.operation is not None and row.operation.state in ended_badly)):
                names.add(row.router.name)
    return names


def _journal_unplannable(request: dict, exc: PlanError) -> None:
    """A failed expire operation saying why the lease's removal cannot be planned (once per lease)."""
    if Operation.objects.filter(kind=Operation.Kind.EXPIRE, state=Operation.State.FAILED, request=request).exists():
        return
    log.error("lease of %s for %s expired but cannot be planned: %s", request["device_description"],
              request["site"], exc)
    now = timezone.now()
    Operation.objects.create(
        kind=Operation.Kind.EXPIRE, request=request, state=Operation.State.FAILED, phase=Operation.Phase.DONE,
        error=f"the lease expired but removing {request['device_description']} from {request['site']} cannot be "
              f"planned ({exc}); the link stays up and the lease due until the registry is mended",
        started_at=now, finished_at=now,
    )


_chores_lock = threading.Lock()
_chores_thread: threading.Thread | None = None
_chores_stop = threading.Event()


def start_chores_thread() -> None:
    """Run the reaper, lease expiry and settle every FLEXZONE_OPS_REAP_EVERY / _LEASE_EVERY / _SETTLE_EVERY
    seconds (idempotent)."""
    global _chores_thread
    with _chores_lock:
        if _chores_thread is not None and _chores_thread.is_alive():
            return
        _chores_stop.clear()
        _chores_thread = threading.Thread(target=_chores_loop, name="flexzone-chores", daemon=True)
        _chores_thread.start()


def stop_chores_thread() -> None:
    global _chores_thread
    with _chores_lock:
        thread, _chores_thread = _chores_thread, None
    if thread is not None:
        _chores_stop.set()
        thread.join(timeout=10)


def _chores_loop() -> None:
    last_reap = last_leases = last_settle = last_seal = time.monotonic()
    while not _chores_stop.wait(1.0):
        conf, now = ops_settings(), time.monotonic()
        if now - last_seal >= settings.FLEXZONE_LEDGER_SEAL_EVERY:
            last_seal = now  # a seal that fails is tried again next period, not every second
            try:
                ledger.seal()  # off every operation's path: one sealer at a time, the others skip
            except Exception:  # noqa: BLE001 - never at the cost of the other chores (lease expiry above all)
                log.exception("sealing the ledger failed")
        if conf.queue == "procrastinate":  # a job waits on its sessions' holder only while nobody is idle
            try:
                affinity.release_stale()
                affinity.steal()
            except Exception:  # noqa: BLE001 - never at the cost of the other chores
                log.exception("moving jobs between the workers' queues failed")
        try:
            if now - last_reap >= conf.reap_every:
                reap_stalled_operations()
                last_reap = now
            if now - last_leases >= conf.lease_every:
                expire_leases()
                last_leases = now
            if now - last_settle >= conf.settle_every:
                settle_stranded_links()
                last_settle = now
        except (OperationalError, InterfaceError) as exc:  # down or restarting: a line; the next round tries
            log.warning("periodic operations chores: the database did not answer (%s)", str(exc).splitlines()[0])
        except Exception:  # noqa: BLE001 - the chores must outlive one bad round
            log.exception("periodic operations chores failed")
        finally:
            connection.close()

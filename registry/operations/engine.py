"""The operations engine: journaled, retried, verified router work that keeps registry and routers agreeing.

Order of work for an add: lock the device(s) for the requesting site, write each link as
`configuring` (so a record exists before the router changes), drive the router step (read state
first whenever a reply may have been lost), read the router back to verify, then mark the link `up`.
A remove marks `removing`, removes, verifies, marks `down` and releases the locks. A permanent
failure part-way through an add rolls back the steps already done. A crashed worker's operation is
claimed again once its heartbeat is stale and re-run in recovery mode (state read before every
change), so it finishes or rolls back from whatever the routers actually hold.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from django.db import IntegrityError, close_old_connections, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from registry.models import Device, DeviceLock, Link, Operation, Principal, Router, Site
from registry.operations.conf import ops_settings
from registry.operations.errors import DeviceBusy, OperationFailed, StepFailed
from registry.operations.locking import RouterBusy, router_lock
from registry.operations.pool import Lease, pool
from registry.planner import (
    Plan,
    PlanError,
    PlanStep,
    plan_connect,
    plan_disconnect,
    render_commands,
    router_vsan,
    site_initiators,
)
from registry.secrets import SecretUnavailable, resolve_secret
from routers.drivers import DRIVERS
from routers.drivers.base import (
    LinkAbsent,
    LinkExists,
    LinkSpec,
    RouterAuthError,
    RouterDriver,
    RouterError,
    RouterLink,
    RouterTarget,
    ZoningBusy,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

Kind, State, Phase = Operation.Kind, Operation.State, Operation.Phase
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"
INVOKE_COMMANDS = ("lsifcp", "addifcp", "rmifcp")
RECONCILE_POLICIES = ("registry", "router")


class VerifyFailed(RouterError):
    """The router took the command but its listing disagrees: re-read and re-issue (transient)."""

    transient = True


# --- submit ------------------------------------------------------------------------------------


def submit(
    kind: str, request: dict[str, Any], principal: Principal | None = None, *, enqueue: bool = True
) -> Operation:
    """Validate and plan `request` now (PlanError on bad input), journal it, and queue it for a worker.

    add/remove: {"site", one of "device_description" | "wwn" | "zone", optional "duration" (s, add)}
    list: {"router": name or absent for all}
    reconcile: {"repair": bool, "policy": "registry"|"router", optional "router": name}
    invoke: {"router", "command": lsifcp|addifcp|rmifcp, "port", "zone", "remote_ip"}
    """
    started = time.perf_counter()
    try:
        kind = Kind(kind)
    except ValueError:
        raise PlanError("kind", f"unknown operation {kind!r}; one of {', '.join(Kind.values)}.") from None
    request = dict(request or {})
    plan: dict[str, Any] = {}
    if kind in (Kind.ADD, Kind.REMOVE, Kind.EXPIRE):
        planned = _plan_for(kind, request)
        plan = {**planned.as_dict(), "ids": planned.ids}
    elif kind == Kind.LIST:
        if request.get("router"):
            _router_named(request["router"])
    elif kind == Kind.RECONCILE:
        if request.get("router"):
            _router_named(request["router"])
        if request.setdefault("policy", "registry") not in RECONCILE_POLICIES:
            raise PlanError("policy", f"must be one of {', '.join(RECONCILE_POLICIES)}.")
        request["repair"] = bool(request.get("repair", False))
    elif kind == Kind.INVOKE:
        plan = _plan_invoke(request)
    with transaction.atomic():
        # Devices are row-locked and checked first, so that the operation row is written once.
        to_lock = _lockable_devices(plan) if kind == Kind.ADD else []
        op = Operation.objects.create(kind=kind, principal=principal, request=request, plan=plan)
        _lock_devices(op, plan, to_lock)
        op.registry_ms = (time.perf_counter() - started) * 1000
        job_id = _enqueue(op) if enqueue else None
        _record_submit(op, job_id)
    return op


def _plan_for(kind: str, request: dict[str, Any]) -> Plan:
    args = {
        name: request[name] for name in ("site", "device_description", "wwn", "zone") if request.get(name) is not None
    }
    if "site" not in args:
        raise PlanError("site", "a site is required (short name, display name or MSAN id).")
    hosts = request.get("hosts")
    if kind == Kind.ADD and hosts is not None:
        if not isinstance(hosts, list) or not hosts or not all(isinstance(name, str) for name in hosts):
            raise PlanError("hosts", "a non-empty list of host names of the requesting site.")
        args["hosts"] = hosts
    if kind == Kind.ADD and request.get("duration") is not None:
        duration = request["duration"]
        limit = ops_settings().max_lease
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not 0 < duration <= limit:
            raise PlanError("duration", f"a lease is a number of seconds, more than 0 and at most {limit:.0f}.")
    return (plan_connect if kind == Kind.ADD else plan_disconnect)(**args)


def _router_named(name: str) -> Router:
    router = Router.objects.select_related("site").filter(name=str(name)).first()
    if router is None:
        raise PlanError("router", f"no router is named {name!r}.")
    return router


def _plan_invoke(request: dict[str, Any]) -> dict[str, Any]:
    """The V1 interface: one raw iFCP command on one router. Adds and removes keep the registry in step,
    so the link's sites and device are inferred from the zone and the remote gateway's address."""
    router = _router_named(request.get("router", ""))
    command = request.get("command")
    if command not in INVOKE_COMMANDS:
        raise PlanError("command", f"must be one of {', '.join(INVOKE_COMMANDS)}.")
    if command == "lsifcp":
        return {}
    try:
        spec_zone = int(request.get("zone"))
        spec = LinkSpec(port=int(request.get("port")), zone=spec_zone, remote_ip=str(request.get("remote_ip")))
    except (TypeError, ValueError) as exc:
        field_name = str(exc).split(":")[0] if ":" in str(exc) else "port"
        raise PlanError(field_name, str(exc)) from None
    remote = Site.objects.filter(data_ip=spec.remote_ip).first()
    if remote is None:
        raise PlanError("remote_ip", f"no registered site has data-path address {spec.remote_ip}.")
    device = (
        Device.objects.filter(zone__zone_id=spec.zone, owner_site__in=[router.site, remote])
        .order_by("description")
        .first()
    )
    if device is None:
        raise PlanError("zone", f"zone {spec.zone} has no device owned by {router.site.name} or {remote.name}.")
    requester = remote if device.owner_site_id == router.site_id else router.site
    action = "add" if command == "addifcp" else "remove"
    initiators = []
    if DRIVERS[router.platform].zones_initiators:
        initiators = site_initiators(requester, None)
        if action == "add" and not initiators:
            raise PlanError("hosts", f"site {requester.name} has no initiators registered; an FCIP link zones them "
                                     f"with the device (register its hosts at /api/hosts/).")
    step = PlanStep(
        order=1,
        action=action,
        router=router.name,
        router_id=router.pk,
        platform=router.platform,
        site=router.site.name,
        port=spec.port,
        zone=spec.zone,
        remote_ip=spec.remote_ip,
        local_ip=router.site.data_ip,
        wwn=device.wwn,
        device=device.description,
        initiators=initiators,
        vsan=router_vsan(router),
    )
    try:
        commands = render_commands(router.platform, action, step.spec)
    except ValueError as exc:
        raise PlanError("router", f"router {router.name} ({router.platform}) cannot take this link: {exc}") from None
    step = PlanStep(**{**asdict(step), "commands": commands})
    plan = Plan(action=action, site=requester.name, zone=spec.zone, devices=[device.description], steps=[step])
    return {**plan.as_dict(), "raw": True}


class _Device(NamedTuple):
    pk: int
    description: str
    shareable: bool


def _lockable_devices(plan: dict[str, Any], expires_at=None) -> list[_Device]:
    """Row-lock the plan's devices and return those the requesting site must still lock.

    Raises DeviceBusy if another site holds one exclusively (or any lock on a device that is not
    shareable). A lock the site already holds is kept, its expiry moved to `expires_at` if given.
    """
    ids = _plan_ids(plan)  # a V1 addifcp too: its link serves the inferred site, which holds the device
    site_id = ids["site"]
    device_ids = sorted(pk for pk, _zone_id in ids["devices"].values())
    in_list = ", ".join(["%s"] * len(device_ids))
    # Two statements, in this order: the device rows must be locked before their locks are read (a
    # statement sees the rows committed when it started). Plain SQL because both run on every add.
    for_update = " FOR UPDATE" if connection.features.has_select_for_update else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, description, shareable FROM registry_device WHERE id IN ({in_list}) ORDER BY id{for_update}",
            device_ids,
        )
        devices = [_Device(*row) for row in cursor.fetchall()]
        cursor.execute(
            "SELECT held.id, held.device_id, held.site_id, held.exclusive, site.name"
            " FROM registry_devicelock AS held JOIN registry_site AS site ON site.id = held.site_id"
            f" WHERE held.device_id IN ({in_list}) ORDER BY held.id",
            device_ids,
        )
        held: dict[int, list[tuple]] = {}
        for lock in cursor.fetchall():
            held.setdefault(lock[1], []).append(lock)
    wanted = []
    for device in devices:
        locks = held.get(device.pk, [])
        mine = [lock_id for lock_id, _device, holder, _exclusive, _name in locks if holder == site_id]
        others = [(name, exclusive) for _id, _device, holder, exclusive, name in locks if holder != site_id]
        if mine:
            if expires_at is not None:
                DeviceLock.objects.filter(pk=mine[0]).update(expires_at=expires_at)
            continue
        if others and (not device.shareable or any(exclusive for _name, exclusive in others)):
            raise DeviceBusy("device", f"{device.description} is locked by {others[0][0]}; disconnect it there first.")
        wanted.append(device)
    return wanted


def _plan_ids(plan: dict[str, Any]) -> dict[str, Any]:
    """The row ids the planner resolved; plans journaled before it recorded them are resolved by name."""
    if plan.get("ids"):
        return plan["ids"]
    devices = Device.objects.filter(description__in=plan["devices"])
    plan["ids"] = {
        "site": Site.objects.get(name=plan["site"]).pk,
        "devices": {device.description: [device.pk, device.zone_id] for device in devices},
    }
    return plan["ids"]


def _lock_devices(op: Operation, plan: dict[str, Any], devices: list[_Device], expires_at=None) -> None:
    """Write the requesting site's locks on `devices` (already row-locked by `_lockable_devices`)."""
    if not devices:
        return
    site_id = _plan_ids(plan)["site"]
    locks = [
        DeviceLock(
            device_id=device.pk,
            site_id=site_id,
            exclusive=not device.shareable,
            expires_at=expires_at,
            operation=op,
            reason=f"operation {op.pk}",
        )
        for device in devices
    ]
    try:
        DeviceLock.objects.bulk_create(locks)
    except IntegrityError:  # the database's own rule, should the row lock ever be bypassed
        raise DeviceBusy("device", f"{devices[0].description} is locked by another site.") from None


def _take_locks(op: Operation, plan: dict[str, Any], expires_at=None) -> None:
    """Lock each planned device for the requesting site; refuse if another site holds it exclusively."""
    with transaction.atomic():
        _lock_devices(op, plan, _lockable_devices(plan, expires_at), expires_at)


def _record_submit(op: Operation, job_id: int | None) -> None:
    """Store the submit's own time (and the queue's job id) on the row just written.

    Plain SQL: this statement sits on every operation's path and an ORM update costs several times
    the round trip on small machines (see `manage.py bench ops`).
    """
    op.job_id = job_id
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE registry_operation SET registry_ms = %s, job_id = %s WHERE id = %s",
            [op.registry_ms, job_id, op.pk],
        )


def _enqueue(op: Operation) -> int | None:
    """Queue the operation inside the caller's transaction; returns the queue's job id, if it has one."""
    queue = ops_settings().queue
    if queue == "procrastinate":
        from registry.operations.tasks import defer_operation

        # Deferred inside our transaction: the job exists if and only if the operation row does.
        return defer_operation(op.pk)
    if queue == "thread":
        from registry.operations.maintenance import start_chores_thread

        start_chores_thread()
        transaction.on_commit(lambda: _thread_executor().submit(run_in_thread, op.pk))
    return None


_executor: ThreadPoolExecutor | None = None
_executor_guard = threading.Lock()


def _thread_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_guard:
        if _executor is None:
            _executor = ThreadPoolExecutor(ops_settings().worker_concurrency, thread_name_prefix="flexzone-op")
        return _executor


def run_in_thread(operation_id: int) -> str:
    """Execute in a pool thread with its own database connection (the worker entry point)."""
    close_old_connections()
    try:
        return execute(operation_id).state
    finally:
        connection.close()


# --- execute -----------------------------------------------------------------------------------


@dataclass
class Run:
    """One execution of one operation: its clock, deadline, router time and transcripts."""

    op: Operation
    recovering: bool
    started: float = field(default_factory=time.perf_counter)
    deadline: float = 0.0
    router_s: float = 0.0
    registry_s: float = 0.0
    transcripts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _rows: dict[tuple[str, Any], Any] = field(default_factory=dict)
    # What success commits together with the journal row: links up (with their lease) or down, and
    # the requesting site's locks released (site id, device ids).
    links_up: list[int] = field(default_factory=list)
    lease_expires_at: datetime | None = None
    links_down: list[int] = field(default_factory=list)
    release_locks: tuple[int, list[int]] | None = None
    renew: tuple[int, list[int], list[int]] | None = None  # site, devices, links whose expiry an add sets
    joined: list[int] = field(default_factory=list)  # operations in flight this one waited for

    def row(self, model: type[T], **lookup: Any) -> T:
        """A registry row fetched once per run (routers, sites, devices and zones do not change under us)."""
        key = (model.__name__, tuple(sorted(lookup.items())))
        if key not in self._rows:
            self._rows[key] = model.objects.get(**lookup)
        return self._rows[key]

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def absorb(self, driver: RouterDriver) -> None:
        self.router_s += driver.take_router_seconds()
        name = driver.target.name or driver.target.host
        text = driver.take_transcript()
        if text:
            self.transcripts.append(f"--- {name} ---\n{text.rstrip()}")
        self.warnings += [f"{name}: {warning}" for warning in driver.take_warnings()]

    def phase(self, phase: str) -> None:
        if self.op.phase != phase:
            self.op.phase = phase
            _heartbeats.progress(self.op.pk, phase=phase)

    def attempt(self) -> None:
        self.op.attempts += 1
        _heartbeats.progress(self.op.pk, attempts=self.op.attempts)

    @contextmanager
    def registry(self):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.registry_s += time.perf_counter() - start


def execute(operation_id: int) -> Operation:
    """Run one queued operation to its end (what a worker does). Safe to call twice: only one claims it."""
    started = time.perf_counter()
    op, recovering = _claim(operation_id)
    if op is None:
        return Operation.objects.get(pk=operation_id)
    run = Run(op=op, recovering=recovering, started=started)
    run.deadline = time.monotonic() + ops_settings().total_timeout
    run.registry_s = time.perf_counter() - started
    handlers: dict[str, Callable[[Run], None]] = {
        Kind.ADD: _execute_add,
        Kind.REMOVE: _execute_remove,
        Kind.EXPIRE: _execute_remove,
        Kind.LIST: _execute_list,
        Kind.INVOKE: _execute_invoke,
        Kind.RECONCILE: _execute_reconcile,
    }
    _heartbeats.add(op.pk)
    try:
        if recovering:
            run.notes.append(f"recovered by {WORKER_ID} after a stale heartbeat; reading router state first")
        handlers[op.kind](run)
        op.state = State.SUCCEEDED
    except OperationFailed as exc:
        op.state, op.error = exc.state, str(exc)
    except Exception as exc:  # noqa: BLE001 - journal any bug instead of leaving the row running
        log.exception("operation %s failed unexpectedly", op.pk)
        op.state, op.error = State.FAILED, f"internal error: {type(exc).__name__}: {exc}"
    finally:
        _heartbeats.discard(op.pk)
        _finish(run, started)
    return op


# FOR NO KEY UPDATE is the lock the UPDATE itself takes. FOR UPDATE would also conflict with the
# FOR KEY SHARE lock that any insert referencing the operation (a foreign key) holds until it
# commits, and SKIP LOCKED would then skip a perfectly claimable row, leaving it queued for ever.
_CLAIM_SQL = """
    UPDATE registry_operation AS op
       SET state = 'running', started_at = COALESCE(op.started_at, %(now)s), heartbeat_at = %(now)s,
           claimed_by = %(worker)s
      FROM (SELECT id, state FROM registry_operation WHERE id = %(id)s FOR NO KEY UPDATE SKIP LOCKED) AS before
     WHERE op.id = before.id
       AND (before.state = 'queued' OR (before.state = 'running' AND op.heartbeat_at < %(stale)s))
 RETURNING op.*, before.state AS previous_state
"""


def _claim(operation_id: int) -> tuple[Operation | None, bool]:
    """Atomically take a queued operation, or a running one whose worker stopped heart-beating."""
    now = timezone.now()
    stale = now - timedelta(seconds=ops_settings().stale_after)
    if connection.vendor == "postgresql":
        # One statement, so one round trip (its own transaction outside an atomic block): the claim
        # sits on every operation's path.
        params = {"now": now, "worker": _claim_token(), "id": operation_id, "stale": stale}
        claimed = list(Operation.objects.raw(_CLAIM_SQL, params))
        if not claimed:
            return None, False
        return claimed[0], claimed[0].previous_state == State.RUNNING
    claimable = Q(state=State.QUEUED) | Q(state=State.RUNNING, heartbeat_at__lt=stale)
    with transaction.atomic():
        op = (
            Operation.objects.select_for_update(skip_locked=True, no_key=True)
            .filter(claimable, pk=operation_id)
            .first()
        )
        if op is None:
            return None, False
        recovering = op.state == State.RUNNING
        token = _claim_token()
        Operation.objects.filter(pk=op.pk).update(
            state=State.RUNNING, started_at=Coalesce(F("started_at"), now), heartbeat_at=now, claimed_by=token
        )
    op.state, op.started_at, op.heartbeat_at, op.claimed_by = State.RUNNING, op.started_at or now, now, token
    return op, recovering


def _claim_token() -> str:
    """Who holds a claim: this worker, and which claim of it (a fence for the operation's end)."""
    return f"{WORKER_ID}#{secrets.token_hex(4)}"[-120:]


def _finish(run: Run, started: float) -> None:
    """Write the journal row and, on success, the registry changes it vouches for: one commit."""
    op = run.op
    execute_s = time.perf_counter() - started
    submit_ms = op.registry_ms  # planning at submit; a crashed run's time is lost with its worker
    op.router_ms = run.router_s * 1000
    op.registry_ms = submit_ms + run.registry_s * 1000
    op.total_ms = submit_ms + execute_s * 1000
    op.invocation_ms = max(0.0, op.total_ms - op.registry_ms - op.router_ms)
    op.phase = Phase.DONE
    op.finished_at = timezone.now()
    if run.warnings:
        op.result = {**(op.result or {}), "warnings": run.warnings}
    notes = [*run.notes, *(f"warning: {warning}" for warning in run.warnings)]
    text = "\n".join([*(f"# {note}" for note in notes), *run.transcripts])
    op.transcript = "\n".join(part for part in (op.transcript, text) if part)
    if op.state != State.SUCCEEDED:
        run.links_up, run.links_down, run.release_locks, run.renew = [], [], None, None
    if connection.vendor == "postgresql":
        _finish_in_one_statement(run)
        return
    with transaction.atomic():
        if not Operation.objects.select_for_update().filter(pk=op.pk, claimed_by=op.claimed_by).exists():
            log.warning("operation %s was taken over by another worker; this worker's end is not written", op.pk)
            return
        now = op.finished_at
        Link.objects.filter(pk__in=run.links_up).update(
            state=Link.State.UP, up_at=now, lease_expires_at=run.lease_expires_at, updated_at=now
        )
        _mark_down(run.links_down, now)
        if run.renew:
            site_id, device_ids, link_ids = run.renew
            Link.objects.filter(pk__in=link_ids).update(lease_expires_at=run.lease_expires_at, updated_at=now)
            DeviceLock.objects.filter(site_id=site_id, device_id__in=device_ids).update(expires_at=run.lease_expires_at)
            held = set(DeviceLock.objects.filter(site_id=site_id, device_id__in=device_ids).values_list("device_id",
                                                                                                       flat=True))
            for device in Device.objects.filter(pk__in=set(device_ids) - held):
                with transaction.atomic():  # another site's exclusive lock wins (see _FINISH_SQL)
                    try:
                        DeviceLock.objects.create(device=device, site_id=site_id, exclusive=not device.shareable,
                                                  expires_at=run.lease_expires_at, operation=op,
                                                  reason=f"operation {op.pk}", acquired_at=now)
                    except IntegrityError:
                        pass
        if run.release_locks:
            site_id, device_ids = run.release_locks
            DeviceLock.objects.filter(site_id=site_id, device_id__in=device_ids).exclude(
                operation__created_at__gt=op.created_at
            ).delete()
        op.save(update_fields=_JOURNAL_FIELDS)


_JOURNAL_FIELDS = [
    "state", "phase", "error", "result", "transcript", "router_ms", "registry_ms", "invocation_ms", "total_ms",
    "finished_at", "attempts",
]  # fmt: skip

# The end of every operation, in one statement and so one round trip and one commit (this runs on
# every operation's path; the ORM's four statements cost ~4 ms on small machines, `bench ops`).
# Locks taken by an operation submitted after this one (a new add racing this remove) are kept.
_FINISH_SQL = """
    WITH claim AS (
        -- The fence: only the worker holding the claim writes the end (a stalled one taken over does
        -- not); every other change below waits for this row and applies only if it was written.
        UPDATE registry_operation
           SET state = %(state)s, phase = %(phase)s, error = %(error)s, result = %(result)s::jsonb,
               transcript = %(transcript)s, router_ms = %(router_ms)s, registry_ms = %(registry_ms)s,
               invocation_ms = %(invocation_ms)s, total_ms = %(total_ms)s, finished_at = %(now)s,
               attempts = %(attempts)s
         WHERE id = %(id)s AND claimed_by = %(claimed_by)s
         RETURNING id
    ), up AS (
        UPDATE registry_link
           SET state = %(up)s, up_at = %(now)s, lease_expires_at = %(lease)s, updated_at = %(now)s
         WHERE id = ANY(%(links_up)s) AND EXISTS (SELECT 1 FROM claim)
    ), down AS (
        UPDATE registry_link SET state = %(down)s, down_at = %(now)s, updated_at = %(now)s
         WHERE id = ANY(%(links_down)s) AND EXISTS (SELECT 1 FROM claim)
    ), renewed AS (
        UPDATE registry_link SET lease_expires_at = %(lease)s, updated_at = %(now)s
         WHERE id = ANY(%(links_renewed)s) AND EXISTS (SELECT 1 FROM claim)
    ), renewed_locks AS (
        UPDATE registry_devicelock SET expires_at = %(lease)s
         WHERE site_id = %(renew_site)s AND device_id = ANY(%(renew_devices)s) AND EXISTS (SELECT 1 FROM claim)
    ), relocked AS (
        -- A remove that ran while this add was under way (it saw no links yet) released the lock:
        -- the add's links are up, so its site holds the devices again.
        INSERT INTO registry_devicelock (device_id, site_id, exclusive, acquired_at, expires_at, reason, operation_id)
        SELECT device.id, %(renew_site)s, NOT device.shareable, %(now)s, %(lease)s, %(reason)s, %(id)s
          FROM registry_device AS device
         WHERE device.id = ANY(%(renew_devices)s) AND EXISTS (SELECT 1 FROM claim)
        ON CONFLICT DO NOTHING
    ), released AS (
        DELETE FROM registry_devicelock AS held
         WHERE held.site_id = %(site)s AND held.device_id = ANY(%(devices)s) AND EXISTS (SELECT 1 FROM claim)
           AND NOT EXISTS (SELECT 1 FROM registry_operation AS newer
                            WHERE newer.id = held.operation_id AND newer.created_at > %(created)s)
    )
    SELECT count(*) FROM claim
"""


def _finish_in_one_statement(run: Run) -> None:
    op = run.op
    site_id, device_ids = run.release_locks or (None, [])
    renew_site, renew_devices, links_renewed = run.renew or (None, [], [])
    params = {
        "renew_site": renew_site, "renew_devices": renew_devices, "links_renewed": links_renewed,
        "reason": f"operation {op.pk}", "claimed_by": op.claimed_by,
        "up": Link.State.UP, "down": Link.State.DOWN, "now": op.finished_at, "lease": run.lease_expires_at,
        "links_up": run.links_up, "links_down": run.links_down, "site": site_id, "devices": device_ids,
        "created": op.created_at, "state": op.state, "phase": op.phase, "error": op.error,
        "result": json.dumps(op.result), "transcript": op.transcript, "router_ms": op.router_ms,
        "registry_ms": op.registry_ms, "invocation_ms": op.invocation_ms, "total_ms": op.total_ms,
        "attempts": op.attempts, "id": op.pk,
    }  # fmt: skip
    with connection.cursor() as cursor:  # a transaction of its own outside an atomic block
        cursor.execute(_FINISH_SQL, params)


# --- driving one router ------------------------------------------------------------------------


def router_target(router: Router) -> RouterTarget:
    try:
        password = resolve_secret(router.secret_ref)
    except SecretUnavailable as exc:
        raise StepFailed(router.name, str(exc), permanent=True) from None
    return RouterTarget(
        platform=router.platform,
        host=router.host,
        port=router.port,
        transport=router.transport,
        username=router.username,
        password=password,
        name=router.name,
        connect_timeout=router.connect_timeout,
        command_timeout=router.command_timeout,
        vsan=router.vsan,
    )


def _backoff(attempt: int) -> float:
    conf = ops_settings()
    delay = min(conf.backoff_max, conf.backoff * 2 ** (attempt - 1))
    return delay * random.uniform(0.5, 1.0)


def with_router(run: Run, router: Router, work: Callable[[Lease, bool], T]) -> T:
    """Run `work(lease, read_first)` holding the router, retrying transient failures with backoff.

    `read_first` is true whenever an earlier reply may have been lost (any retry, or recovery), so
    the work reads the router's state before changing it. A failure on a pooled session that had
    gone stale is retried at once on a fresh login. Another admin's hold on the fabric's zoning
    (ZoningBusy: nothing was changed) is waited for until the operation's time limit, polling with
    backoff; it does not use up the retry budget, and it is never broken.
    """
    conf = ops_settings()
    target = router_target(router)
    attempt = failures = busy = 0
    touched = False  # whether any attempt may have changed the router
    while True:
        attempt += 1
        run.attempt()
        reused = in_session = False
        try:
            with router_lock(router.pk, max(0.0, min(conf.router_wait, run.remaining()))):
                run.phase(Phase.CONNECTING)
                with pool.session(router.pk, target, run.absorb, deadline=run.deadline) as lease:
                    reused, in_session = lease.reused, True
                    run.phase(Phase.ON_ROUTER)
                    return work(lease, run.recovering or attempt > 1)
        except RouterBusy as exc:
            raise StepFailed(router.name, str(exc), permanent=False, untouched=not touched) from None
        except ZoningBusy as exc:
            busy += 1
            delay = _backoff(busy)
            if busy == 1:
                run.notes.append(f"{router.name}: {exc}")
            if run.remaining() <= delay:
                raise StepFailed(router.name, f"time limit reached while waiting: {exc}", permanent=False,
                                 untouched=not touched) from None
            time.sleep(delay)
        except RouterError as exc:
            touched |= in_session  # a refused or failed login sent nothing
            failures += 1
            if exc.transcript and not run.transcripts:
                run.transcripts.append(f"--- {router.name} (error) ---\n{exc.transcript.rstrip()}")
            if not _is_transient(exc):
                message = getattr(exc, "router_message", "") or str(exc)
                raise StepFailed(router.name, message, permanent=True, untouched=not touched) from None
            if failures >= conf.max_attempts:
                raise StepFailed(router.name, f"gave up after {failures} attempts: {exc}", permanent=False) from None
            delay = 0.0 if reused and failures == 1 else _backoff(failures)
            if run.remaining() <= delay:
                raise StepFailed(
                    router.name, f"time limit reached after {failures} attempts: {exc}", permanent=False
                ) from None
            run.notes.append(f"attempt {attempt} on {router.name}: {type(exc).__name__}: {exc}; retry in {delay:.2f} s")
            time.sleep(delay)


# A full session table is a refusal that passes: other workers' pooled sessions time out or are freed.
_SESSION_LIMIT = re.compile(r"(?i)sessions? (are )?in use|E_BUSY|maximum number of|too many|session limit")


def _is_transient(exc: RouterError) -> bool:
    return exc.transient or (isinstance(exc, RouterAuthError) and bool(_SESSION_LIMIT.search(str(exc))))


def _apply(run: Run, lease: Lease, spec: LinkSpec, action: str, read_first: bool) -> None:
    """Make the router hold (add) or not hold (remove) the link, then read it back to verify."""
    driver = lease.driver
    if read_first:
        needed = not _holds(driver, spec) if action == "add" else _lists(driver, spec)
    else:
        needed = True
    if needed:
        try:
            if action == "add":
                driver.add_link(spec)
            else:
                driver.remove_link(spec)
        except (LinkExists, LinkAbsent):
            pass  # already as wanted: a lost reply whose change took effect, or a repeated request
        lease.changed = True
    run.phase(Phase.VERIFYING)
    if not (_holds(driver, spec) if action == "add" else not _lists(driver, spec)):
        raise VerifyFailed(f"the router accepted the {action} of {spec.key} but its listing disagrees")


def _lists(driver: RouterDriver, spec: LinkSpec) -> bool:
    """Whether anything of the link is on the router (a remove has work to do)."""
    return spec.key in {link.key for link in driver.list_links()}


def _holds(driver: RouterDriver, spec: LinkSpec) -> bool:
    """Whether the router holds the link as the spec wants it.

    On FCIP switches a listed link may be only part-way there (zones defined but not in force, a
    tunnel down) or zone other members: it holds only when it is up and zones exactly the spec's
    initiators with its target, so a retry after a lost reply finishes the link instead of taking
    the key for it. (The iFCP gateways' listing has no members; there the key is the link.)
    """
    for link in driver.list_links():
        if link.key == spec.key:
            if not driver.zones_initiators:
                return True
            return link.state == "up" and (link.initiators, link.targets) == (tuple(sorted(spec.initiators)),
                                                                               (spec.wwn,))
    return False


def _drive(run: Run, router: Router, spec: LinkSpec, action: str) -> None:
    with_router(run, router, lambda lease, read_first: _apply(run, lease, spec, action, read_first))


# --- add / remove ------------------------------------------------------------------------------


def _steps(plan: dict[str, Any]) -> list[PlanStep]:
    return [PlanStep(**step) for step in plan["steps"]]


def _step_rows(run: Run, steps: list[PlanStep]) -> list[list[int]]:
    """[device pk, zone pk] per step. Zone row ids (not numbers) keep link lookups free of joins."""
    devices = _plan_ids(run.op.plan)["devices"]
    return [devices[step.device] for step in steps]


def _endpoints(steps: list[PlanStep], rows: list[list[int]]) -> Q:
    endpoints = Q()
    for step, (_device_id, zone_id) in zip(steps, rows, strict=True):
        endpoints |= Q(router_id=step.router_id, port=step.port, zone_id=zone_id, remote_ip=step.remote_ip)
    return endpoints


class _InFlight(OperationFailed):
    """A link of the plan is being changed by another operation that is queued or running."""

    def __init__(self, link: Link) -> None:
        super().__init__(f"link {link} is being changed by operation {link.operation_id}")
        self.operation_id = link.operation_id


_IN_FLIGHT_POLL = 0.2  # s between looks at an operation in flight; its own journal row says when it is done


def _after_operations_in_flight(run: Run, take: Callable[[], T]) -> T:
    """`take` the plan's link rows, first waiting for any other operation changing one of them.

    An identical request then finds the links as that operation left them (up: reused, and the
    result names the operation joined) and a conflicting one runs after it, instead of failing
    for a state that was reached. The wait is bounded by this operation's own time limit.
    """
    while True:
        try:
            with run.registry():
                return take()
        except _InFlight as busy:
            if busy.operation_id not in run.joined:
                run.joined.append(busy.operation_id)
                run.notes.append(f"{busy}: waiting for it to finish")
            if run.remaining() <= _IN_FLIGHT_POLL:
                raise OperationFailed(f"{busy}, and it did not finish within this operation's time limit") from None
            time.sleep(_IN_FLIGHT_POLL)


def _busy_elsewhere(link: Link, op: Operation) -> bool:
    other = link.operation
    return other is not None and other.pk != op.pk and other.state in (State.QUEUED, State.RUNNING)


def _after_earlier_requests(run: Run) -> None:
    """Wait until no earlier add/remove of the same site for any of the same devices is unfinished.

    Requests for one site and device take effect in the order they were submitted: a remove queued
    behind an add (or the reverse) runs after it, whichever worker picks which first, and identical
    requests find the state the earlier one reached. Bounded by this operation's own time limit.
    """
    op, plan = run.op, run.op.plan
    if plan.get("raw") or not plan.get("devices"):
        return
    devices = set(plan["devices"])
    while True:
        earlier = [
            pk for pk, other in Operation.objects.filter(
                pk__lt=op.pk, state__in=(State.QUEUED, State.RUNNING), kind__in=(Kind.ADD, Kind.REMOVE, Kind.EXPIRE),
                plan__site=plan["site"],
            ).values_list("pk", "plan")
            if devices & set(other.get("devices", []))
        ]
        if not earlier:
            return
        if earlier[0] not in run.joined:
            run.joined.append(earlier[0])
            run.notes.append(f"waiting for operation {earlier[0]}, submitted earlier for the same site and device")
        if run.remaining() <= _IN_FLIGHT_POLL:
            raise OperationFailed(f"operation {earlier[0]}, submitted earlier for {plan['site']} and "
                                  f"{', '.join(sorted(devices))}, did not finish within this operation's time limit")
        time.sleep(_IN_FLIGHT_POLL)


def _execute_add(run: Run) -> None:
    op, plan = run.op, run.op.plan
    _after_earlier_requests(run)
    duration = op.request.get("duration")
    expires_at = timezone.now() + timedelta(seconds=duration) if duration else None
    steps = _steps(plan)
    with run.registry():
        # The locks were taken at submit, but a remove queued before this add may have released
        # them since (or a crash came between): the site holds its devices again before any router
        # is touched, or the add fails if another site took one meanwhile.
        _take_locks_or_fail(op, plan, expires_at)
    try:
        links = _after_operations_in_flight(run, lambda: _links_for_add(run, steps))
    except OperationFailed:
        DeviceLock.objects.filter(operation=op).delete()  # nothing reached a router
        raise
    done: list[tuple[PlanStep, Link, bool]] = []
    for index, (step, (link, ours)) in enumerate(zip(steps, links, strict=True)):
        if ours:
            try:
                _drive(run, link.router, step.spec, "add")
            except StepFailed as exc:
                # Steps not yet sent never reached a router, nor did a refused login. A command
                # refused part-way may follow others that took effect: that step is undone too.
                untouched = [lk.pk for lk, mine in links[index + 1 :] if mine]
                if exc.untouched:
                    untouched.append(link.pk)
                else:
                    done.append((step, link, True))
                Link.objects.filter(pk__in=untouched).update(state=Link.State.FAILED, down_at=timezone.now())
                _roll_back(run, done, exc)
        done.append((step, link, ours))
    # Every step is verified on its router: the records say `up` in the commit that says `succeeded`.
    run.links_up = [link.pk for _, link, ours in done if ours]
    run.lease_expires_at = expires_at
    if not plan.get("raw"):
        # A repeated add renews: the site's locks on these devices and the links it already had take
        # this add's expiry, later or sooner or none, so that what the result says is what holds.
        ids = _plan_ids(plan)
        run.renew = (ids["site"], [pk for pk, _zone_id in ids["devices"].values()],
                     [link.pk for _, link, ours in done if not ours])
    op.result = {"links": [link.pk for _, link, _ in done], "lease_expires_at": expires_at and expires_at.isoformat(),
                 **({"joined": run.joined} if run.joined else {})}


def _take_locks_or_fail(op: Operation, plan: dict[str, Any], expires_at) -> None:
    try:
        _take_locks(op, plan, expires_at)
    except DeviceBusy as exc:
        raise OperationFailed(exc.message) from None


def _links_for_add(run: Run, steps: list[PlanStep]) -> list[tuple[Link, bool]]:
    """Each step's link row, written `configuring` before any router is touched (one transaction).

    Returns (link, ours) per step: a link already `up` (another device of the zone uses it) is not
    ours to configure or to roll back.
    """
    op = run.op
    routers = Router.objects.in_bulk({step.router_id for step in steps})
    site_id = _plan_ids(op.plan)["site"]
    rows = _step_rows(run, steps)

    def new_link(step: PlanStep, device_id: int, zone_id: int) -> Link:
        return Link(
            site_id=site_id,
            device_id=device_id,
            router=routers[step.router_id],
            port=step.port,
            zone_id=zone_id,
            remote_ip=step.remote_ip,
            state=Link.State.CONFIGURING,
            operation=op,
            initiators=step.initiators,
        )

    if not run.recovering:
        # Usually no endpoint has an active link yet: then inserting is all there is to do, and the
        # database's one-active-link-per-endpoint rule tells us when it is not.
        fresh = [new_link(step, device_id, zone_id) for step, (device_id, zone_id) in zip(steps, rows, strict=True)]
        try:
            with transaction.atomic():
                Link.objects.bulk_create(fresh)
            return [(link, True) for link in fresh]
        except IntegrityError:
            pass  # shared with another device of the zone, or left by an earlier operation: look
    with transaction.atomic():
        active = {
            (link.router_id, link.port, link.zone_id, link.remote_ip): link
            for link in Link.objects.select_for_update(of=("self",))
            .select_related("operation", "device")
            .filter(_endpoints(steps, rows), state__in=Link.ACTIVE_STATES)
            .order_by("pk")  # one lock order for every operation: concurrent ones queue, never deadlock
        }
        result: list[tuple[Link, bool]] = []
        new: list[Link] = []
        for step, (device_id, zone_id) in zip(steps, rows, strict=True):
            link = active.get((step.router_id, step.port, zone_id, step.remote_ip))
            if link is not None and link.state == Link.State.UP:
                if refusal := _fcip_link_lacks(link, routers[step.router_id], step, device_id):
                    raise OperationFailed(refusal)
            elif link is not None:
                if _busy_elsewhere(link, op):
                    raise _InFlight(link)
                link.state, link.operation = Link.State.CONFIGURING, op
                link.save(update_fields=["state", "operation", "updated_at"])
            elif link is None:
                link = new_link(step, device_id, zone_id)
                new.append(link)
            link.router = routers[step.router_id]
            result.append((link, link.state != Link.State.UP))
        Link.objects.bulk_create(new)
    return result


def _fcip_link_lacks(link: Link, router: Router, step: PlanStep, device_id: int) -> str | None:
    """Why an up FCIP link cannot serve this step as it is (None: it can, or the router is iFCP).

    An iFCP link serves every device of its zone (the gateway zones them). An FCIP link grants
    exactly the pair zones it was configured with, its device's target with the initiators recorded
    on it; reusing it for another device or other initiators would report access that nobody has.
    Extending a link in place is not done (its failure part-way would touch what serves others), so
    such a request is refused before anything is sent, with what to do instead.
    """
    if not DRIVERS[router.platform].zones_initiators:
        return None
    if link.device_id != device_id:
        return (f"link {link} was created for {link.device.description}, and an FCIP link zones that one device: "
                f"{step.device} would not be reachable through it. flexzone does not share an FCIP link between "
                f"devices; disconnect {link.device.description} first to connect {step.device}.")
    missing = sorted(set(step.initiators) - set(link.initiators))
    if missing:
        return (f"link {link} zones {step.device} with initiators {', '.join(link.initiators) or 'none'}; this "
                f"request also needs {', '.join(missing)}, and flexzone does not extend an FCIP link's zoning in "
                "place: disconnect the link and connect again naming every host it should serve.")
    return None


def _roll_back(run: Run, done: list[tuple[PlanStep, Link, bool]], cause: StepFailed) -> None:
    """Undo this add's router steps in reverse; raise OperationFailed with the original reason.

    Each undo gets a time budget of its own (the operation's limit, at most 60 s): the add may have
    spent all of its time, and a router that stays silent must not take the others' undo with it.
    """
    budget = min(60.0, ops_settings().total_timeout)
    leftovers = []
    for step, link, ours in reversed(done):
        if not ours:
            continue
        run.deadline = max(run.deadline, time.monotonic() + budget)
        try:
            _drive(run, link.router, step.spec, "remove")
        except StepFailed as exc:
            leftovers.append(f"{link} (rollback failed: {exc})")
            continue
        Link.objects.filter(pk=link.pk).update(
            state=Link.State.FAILED, down_at=timezone.now(), updated_at=timezone.now()
        )
    if leftovers:
        raise OperationFailed(f"{cause}; left configuring for reconcile: {'; '.join(leftovers)}", state=State.FAILED)
    DeviceLock.objects.filter(operation=run.op).delete()
    raise OperationFailed(f"{cause} (rolled back)", state=State.ROLLED_BACK)


def _execute_remove(run: Run) -> None:
    op, plan = run.op, run.op.plan
    _after_earlier_requests(run)
    steps = _steps(plan)
    links, previous, kept = _after_operations_in_flight(run, lambda: _links_for_remove(run, steps))
    removed: list[int] = []
    for index, (step, link) in enumerate(zip(steps, links, strict=True)):
        if index in kept:
            run.notes.append(f"{link}: kept, another device of {plan['site']} still uses it")
            continue
        router = link.router if link else run.row(Router, pk=step.router_id)
        try:
            _drive(run, router, step.spec, "remove")
        except StepFailed as exc:
            # Steps not yet sent are untouched: as they were. A step refused part-way may have taken
            # some of the link down (its zones out of force, say): failed, for reconcile to settle.
            untouched = [lk for later, lk in enumerate(links[index + 1 :], index + 1)
                         if lk is not None and later not in kept]
            if link is not None and exc.untouched:
                untouched.append(link)
            elif link is not None:
                Link.objects.filter(pk=link.pk).update(state=Link.State.FAILED, down_at=timezone.now(),
                                                       updated_at=timezone.now())
            for lk in untouched:
                Link.objects.filter(pk=lk.pk).update(state=previous[lk.pk], updated_at=timezone.now())
            _mark_down(removed)  # verified gone from their routers
            raise OperationFailed(str(exc)) from None
        if link is not None:
            removed.append(link.pk)
    run.links_down = removed
    ids = _plan_ids(plan)
    devices = list(ids["devices"].values())
    # A V1 rmifcp takes down one link: the site lets the device go only if no other link serves it.
    if not plan.get("raw") or not Link.objects.filter(
        site_id=ids["site"], zone_id__in=[zone_id for _pk, zone_id in devices], state__in=Link.ACTIVE_STATES
    ).exclude(pk__in=removed).exists():
        run.release_locks = (ids["site"], [pk for pk, _zone_id in devices])
    op.result = {"links": removed, **({"joined": run.joined} if run.joined else {})}


def _links_for_remove(run: Run, steps: list[PlanStep]) -> tuple[list[Link | None], dict[int, str], set[int]]:
    """Each step's active link (if any), marked `removing` before any router is touched (one transaction).

    A link that another lock of the requesting site still needs (another device of the same owner
    and zone, reached through the same link) is not removed: it is handed to that device and kept
    up; the indexes of those steps are returned, and nothing is sent for them.
    """
    op = run.op
    rows = _step_rows(run, steps)
    ids = _plan_ids(op.plan)
    leaving = [pk for pk, _zone_id in ids["devices"].values()]
    with transaction.atomic():
        active = {
            (link.router_id, link.port, link.zone_id, link.remote_ip): link
            for link in Link.objects.select_for_update(of=("self",))
            .select_related("operation", "router", "device")
            .filter(_endpoints(steps, rows), state__in=Link.ACTIVE_STATES)
            .order_by("pk")
        }
        links = [
            active.get((step.router_id, step.port, zone_id, step.remote_ip))
            for step, (_device_id, zone_id) in zip(steps, rows, strict=True)
        ]
        previous, kept = {}, set()
        for index, link in enumerate(links):
            if link is None:
                continue
            if _busy_elsewhere(link, op):
                raise _InFlight(link)
            holder = None if op.plan.get("raw") else _other_holder(link, ids["site"], leaving)  # V1 is literal
            if holder is not None and link.state == Link.State.UP:
                Link.objects.filter(pk=link.pk).update(device_id=holder, updated_at=timezone.now())
                kept.add(index)
                continue
            previous[link.pk] = link.state
        Link.objects.filter(pk__in=list(previous)).update(
            state=Link.State.REMOVING, operation=op, updated_at=timezone.now()
        )
    return links, previous, kept


def _other_holder(link: Link, site_id: int, leaving: list[int]) -> int | None:
    """A device the site still holds a lock on that this link serves (same zone and owner), if any."""
    return (
        DeviceLock.objects.filter(site_id=site_id, device__zone_id=link.zone_id,
                                  device__owner_site_id=link.device.owner_site_id)
        .exclude(device_id__in=leaving)
        .order_by("device_id")
        .values_list("device_id", flat=True)
        .first()
    )


def _mark_down(link_ids: list[int], now: datetime | None = None) -> None:
    now = now or timezone.now()
    Link.objects.filter(pk__in=link_ids).update(state=Link.State.DOWN, down_at=now, updated_at=now)


# --- list, invoke, reconcile -------------------------------------------------------------------


def _link_dict(link: RouterLink) -> dict[str, Any]:
    return {"port": link.port, "zone": link.zone, "remote_ip": link.remote_ip, "state": link.state}


def _read_router(run: Run, router: Router) -> list[RouterLink]:
    return with_router(run, router, lambda lease, _read_first: lease.driver.list_links())


def _execute_list(run: Run) -> None:
    name = run.op.request.get("router")
    routers = [_router_named(name)] if name else list(Router.objects.order_by("name"))
    listing, errors = {}, {}
    for router in routers:
        try:
            listing[router.name] = [_link_dict(link) for link in _read_router(run, router)]
        except StepFailed as exc:
            errors[router.name] = str(exc)
    run.op.result = {"routers": listing, "errors": errors}
    if errors:
        raise OperationFailed("; ".join(errors.values()))


def _execute_invoke(run: Run) -> None:
    request = run.op.request
    if request["command"] == "lsifcp":
        links = _read_router(run, _router_named(request["router"]))
        wanted = {k: request[k] for k in ("port", "zone", "remote_ip") if request.get(k) not in (None, "")}
        run.op.result = {
            "links": [
                _link_dict(link) for link in links if all(str(getattr(link, k)) == str(v) for k, v in wanted.items())
            ]
        }
    elif request["command"] == "addifcp":
        _execute_add(run)
    else:
        _execute_remove(run)


def _execute_reconcile(run: Run) -> None:
    from registry.operations.drift import reconcile_router

    repair, policy = run.op.request.get("repair", False), run.op.request.get("policy", "registry")
    report, failed = {}, []
    name = run.op.request.get("router")
    for router in [_router_named(name)] if name else Router.objects.order_by("name"):
        try:
            report[router.name] = with_router(
                run,
                router,
                lambda lease, _read_first, router=router: reconcile_router(run, router, lease, repair, policy),
            )
        except StepFailed as exc:
            report[router.name] = {"error": str(exc)}
            failed.append(router.name)
    run.op.result = {"repair": repair, "policy": policy, "routers": report}
    if failed:
        raise OperationFailed(f"could not read {', '.join(failed)}")


# --- synchronous conveniences for the API and the CLI ------------------------------------------


def list_links(router: str | None = None, principal: Principal | None = None) -> dict[str, list[dict[str, Any]]]:
    """What each router (or the named one) holds right now, read from the routers; journaled."""
    op = execute(submit(Kind.LIST, {"router": router} if router else {}, principal, enqueue=False).pk)
    if op.state != State.SUCCEEDED and not op.result.get("routers"):
        raise OperationFailed(op.error)
    return op.result["routers"]


def reconcile(
    repair: bool = False, policy: str = "registry", principal: Principal | None = None, router: str | None = None
) -> Operation:
    """Compare registry and routers (and converge when `repair`); the report is `operation.result`."""
    request = {"repair": repair, "policy": policy, **({"router": router} if router else {})}
    return execute(submit(Kind.RECONCILE, request, principal, enqueue=False).pk)


def invoke(
    router: str,
    command: str,
    port: int | None = None,
    zone: int | None = None,
    remote_ip: str | None = None,
    principal: Principal | None = None,
    *,
    wait: bool = True,
) -> Operation:
    """V1: lsifcp / addifcp / rmifcp on a named router, journaled; waits for the result unless told not to."""
    request = {"router": router, "command": command, "port": port, "zone": zone, "remote_ip": remote_ip}
    op = submit(Kind.INVOKE, request, principal, enqueue=not wait)
    return execute(op.pk) if wait else op


# --- heartbeats --------------------------------------------------------------------------------


class _LiveJournal:
    """Writes in-flight operations' progress from one thread per process, off the operations' path.

    Phase and attempt changes are flushed every 0.1 s (so `flexzone` can show progress live) and
    every in-flight operation gets `heartbeat_at` refreshed every FLEXZONE_OPS_HEARTBEAT seconds;
    the final state is written by the operation itself. Writes match `state=running` only, so a
    late flush can never overwrite a finished operation.
    """

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._pending: dict[int, dict[str, Any]] = {}
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, operation_id: int) -> None:
        with self._guard:
            self._ids.add(operation_id)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="flexzone-journal", daemon=True)
                self._thread.start()

    def progress(self, operation_id: int, **fields: Any) -> None:
        with self._guard:
            self._pending.setdefault(operation_id, {}).update(fields)

    def discard(self, operation_id: int) -> None:
        with self._guard:
            self._ids.discard(operation_id)
            self._pending.pop(operation_id, None)

    def _run(self) -> None:
        last_beat = time.monotonic()
        session_tuned = False
        try:
            while True:
                time.sleep(min(0.1, ops_settings().heartbeat))
                with self._guard:
                    ids = list(self._ids)
                    pending, self._pending = self._pending, {}
                    if not ids:
                        self._thread = None
                        return
                try:
                    if not session_tuned and connection.vendor == "postgresql":
                        # Progress and heartbeats are telemetry: not worth an fsync wait each.
                        with connection.cursor() as cursor:
                            cursor.execute("SET synchronous_commit TO OFF")
                        session_tuned = True
                    now = timezone.now()
                    for operation_id, fields in pending.items():
                        Operation.objects.filter(pk=operation_id, state=State.RUNNING).update(
                            heartbeat_at=now, **fields
                        )
                    if time.monotonic() - last_beat >= ops_settings().heartbeat:
                        Operation.objects.filter(pk__in=ids, state=State.RUNNING).update(heartbeat_at=now)
                        last_beat = time.monotonic()
                except Exception:  # noqa: BLE001 - a missed beat is recovered by the next one
                    log.warning("journal progress update failed", exc_info=True)
                    connection.close()
                    session_tuned = False
        finally:
            connection.close()


_heartbeats = _LiveJournal()

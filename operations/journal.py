"""The journal of one run: claiming an operation, its live progress and heartbeats, and its fenced end.

A worker claims a queued operation (or one whose worker stopped heart-beating) with a token of its
own; progress and heartbeats are written off the operation's path by one thread per process; the
end (journal row, links and locks) is written in one statement that applies only while the claim
still holds, so a stalled worker that was taken over writes nothing.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, connection, models, transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from operations.conf import ops_settings
from operations.holders import mark_down
from operations.models import Grant, Link, Operation, ZoningImage
from operations.threads import at_once
from registry.models import Device, Router
from routers.drivers.base import RouterDriver

log = logging.getLogger(__name__)
T = TypeVar("T", bound=models.Model)
R = TypeVar("R")

# Plain SQL names its tables from the models: each app owns its tables.
OPERATION, LINK, LOCK, DEVICE = (model._meta.db_table for model in (Operation, Link, Grant, Device))

State, Phase = Operation.State, Operation.Phase
PIPELINE = list(Phase.values)  # in the order an operation goes through them
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"


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
    # An add's renewal: site, devices (their locks take the add's expiry) and (link, expiry) of the
    # links it reused (each lasts as long as the longest of its holders).
    renew: tuple[int, list[int], list[tuple[int, datetime | None]]] | None = None
    renew_expiry: bool = True  # False for a V1 addifcp: it re-takes the site's locks but sets no lease
    renew_initiators: list[str] = field(default_factory=list)  # FCIP: the hosts' initiators the add zoned
    # Operations this one waited for: the same request under way (joined: its result is ours) or an
    # earlier conflicting one (after: this one ran once it was done).
    joined: list[int] = field(default_factory=list)
    after: list[int] = field(default_factory=list)
    # Seconds spent on each router (by name), and the guard of the router time: an operation's routers
    # are worked at once, on threads of their own (operations.threads.at_once).
    router_each: dict[str, float] = field(default_factory=dict)
    _router_guard: threading.Lock = field(default_factory=threading.Lock)
    _phases: dict[int, str] = field(default_factory=dict)  # each thread's step's phase (`phase`)
    _extended: dict[int, float] = field(default_factory=dict)  # a thread's own later deadline (`extended`)

    def row(self, model: type[T], **lookup: Any) -> T:
        """A registry row fetched once per run (routers, sites, devices and zones do not change under us)."""
        key = (model.__name__, tuple(sorted(lookup.items())))
        if key not in self._rows:
            self._rows[key] = model._default_manager.get(**lookup)
        return self._rows[key]

    def waits_for(self, operation_id: int, kind: str, command: str | None = None) -> bool:
        """Record that this run waits for another operation; False if it was already recorded."""
        if operation_id in self.joined or operation_id in self.after:
            return False
        same = _direction(kind, command) == _direction(self.op.kind, (self.op.request or {}).get("command"))
        (self.joined if same else self.after).append(operation_id)
        return True

    def waited(self) -> dict[str, list[int]]:
        """What the result says about the waits: {"joined": [...], "after": [...]}, each only if any."""
        return {name: ids for name, ids in (("joined", self.joined), ("after", self.after)) if ids}

    def remaining(self) -> float:
        return self.until() - time.monotonic()

    def until(self) -> float:
        """This thread's deadline: the operation's, or later while this thread's step takes one more look
        (`extended`), which must not lend the other routers' steps its time."""
        return self._extended.get(threading.get_ident(), self.deadline)

    @contextmanager
    def extended(self, seconds: float):
        """This thread's deadline moved to at least `seconds` from now while the block runs."""
        ident = threading.get_ident()
        self._extended[ident] = max(self.deadline, time.monotonic() + seconds)
        try:
            yield
        finally:
            self._extended.pop(ident, None)

    def absorb(self, driver: RouterDriver) -> None:
        seconds = driver.take_router_seconds()
        name = driver.target.name or driver.target.host
        with self._router_guard:
            self.router_s += seconds
            self.router_each[name] = self.router_each.get(name, 0.0) + seconds
        text = driver.take_transcript()
        if text:
            self.transcripts.append(f"--- {name} ---\n{text.rstrip()}")
        self.warnings += [f"{name}: {warning}" for warning in driver.take_warnings()]
        changes = driver.take_zoning_changes()
        if changes:  # journaled at once: a crash later must not lose what was in force before
            try:
                router = Router.objects.filter(name=driver.target.name).first()
                ZoningImage.objects.bulk_create([ZoningImage(router=router, operation_id=self.op.pk, before=before,
                                                             after=after) for before, after in changes if router])
            except DatabaseError:  # never in place of what the router did or said
                log.exception("operation %s: could not journal the zoning images of %s", self.op.pk, name)

    def at_once(self, works: list[Callable[[], R]], *, threads: int = 0) -> list[R]:
        """Run `works` (one per router) at the same time (operations.threads.at_once). The router time
        they add is the longest one's (the operation waited on them together, not one after another),
        or with more routers than threads, at least their total shared among the threads."""
        with self._router_guard:
            total, before = self.router_s, dict(self.router_each)
        results, width = at_once([functools.partial(self._stepping, work) for work in works], threads=threads)
        if width > 1:
            with self._router_guard:
                spent = [seconds - before.get(name, 0.0) for name, seconds in self.router_each.items()]
                self.router_s = total + max(max(spent, default=0.0), sum(spent) / width)
        return results

    def _stepping(self, work: Callable[[], R]) -> R:
        try:
            return work()
        finally:
            self._step_ended()

    def phase(self, phase: str) -> None:
        """This thread's step is at `phase`; the operation is at the least advanced phase of the steps
        worked at once (one router still logging in: `connecting`, whatever the other is doing)."""
        with self._router_guard:
            self._phases[threading.get_ident()] = phase
            shown = min(self._phases.values(), key=PIPELINE.index)
        if self.op.phase != shown:
            self.op.phase = shown
            heartbeats.progress(self.op.pk, phase=shown)

    def _step_ended(self) -> None:
        with self._router_guard:
            self._phases.pop(threading.get_ident(), None)

    def attempt(self) -> None:
        self.op.attempts += 1
        heartbeats.progress(self.op.pk, attempts=self.op.attempts)

    @contextmanager
    def registry(self):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.registry_s += time.perf_counter() - start


def _direction(kind: str, command: str | None = None) -> str:
    """Adds put links up; removes, lease expiries and V1 rmifcp take them down."""
    return "down" if kind in (Operation.Kind.REMOVE, Operation.Kind.EXPIRE) or command == "rmifcp" else "up"


# FOR NO KEY UPDATE is the lock the UPDATE itself takes. FOR UPDATE would also conflict with the
# FOR KEY SHARE lock that any insert referencing the operation (a foreign key) holds until it
# commits, and SKIP LOCKED would then skip a perfectly claimable row, leaving it queued for ever.
_CLAIM_SQL = f"""
    UPDATE {OPERATION} AS op
       SET state = 'running', started_at = COALESCE(op.started_at, %(now)s), heartbeat_at = %(now)s,
           claimed_by = %(worker)s
      FROM (SELECT id, state FROM {OPERATION} WHERE id = %(id)s FOR NO KEY UPDATE SKIP LOCKED) AS before
     WHERE op.id = before.id
       AND (before.state = 'queued' OR (before.state = 'running' AND op.heartbeat_at < %(stale)s))
 RETURNING op.*, before.state AS previous_state
"""


def claim(operation_id: int) -> tuple[Operation | None, bool]:
    """Atomically take a queued operation, or a running one whose worker stopped heart-beating."""
    now = timezone.now()
    stale = now - timedelta(seconds=ops_settings().stale_after)
    if connection.vendor == "postgresql":
        # One statement, so one round trip (its own transaction outside an atomic block): the claim
        # sits on every operation's path.
        params = {"now": now, "worker": claim_token(), "id": operation_id, "stale": stale}
        claimed = list(Operation.objects.raw(_CLAIM_SQL, params))
        if not claimed:
            return None, False
        # previous_state: a column of _CLAIM_SQL's own, not a field of the model
        return claimed[0], claimed[0].previous_state == State.RUNNING  # type: ignore[attr-defined]
    # Elsewhere (SQLite, where several processes may share the file and row locks do not exist) a
    # conditional UPDATE is the claim: the database applies one writer's at a time, and only the
    # first finds the row still claimable.
    token = claim_token()
    fields = {"state": State.RUNNING, "started_at": Coalesce(F("started_at"), now), "heartbeat_at": now,
              "claimed_by": token}
    recovering = False
    if not Operation.objects.filter(pk=operation_id, state=State.QUEUED).update(**fields):
        recovering = True
        if not Operation.objects.filter(pk=operation_id, state=State.RUNNING, heartbeat_at__lt=stale).update(**fields):
            return None, False
    op = Operation.objects.get(pk=operation_id)
    if op.claimed_by != token:  # taken over between our update and this read
        return None, False
    return op, recovering


def claim_token() -> str:
    """Who holds a claim: this worker, and which claim of it (a fence for the operation's end)."""
    return f"{WORKER_ID}#{secrets.token_hex(4)}"[-120:]


def finish(run: Run, started: float) -> bool:
    """Write the journal row and, on success, the registry changes it vouches for: one commit. False
    when the claim was lost (another worker took the operation over): nothing was written."""
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
    if len(run.router_each) > 1:  # beside router_ms: each router's own time, worked at once
        op.result = {**(op.result or {}), "router_ms_each": {name: round(seconds * 1000, 1)
                                                            for name, seconds in sorted(run.router_each.items())}}
    notes = [*run.notes, *(f"warning: {warning}" for warning in run.warnings)]
    text = "\n".join([*(f"# {note}" for note in notes), *run.transcripts])
    op.transcript = "\n".join(part for part in (op.transcript, text) if part)
    if op.state != State.SUCCEEDED:
        run.links_up, run.links_down, run.release_locks, run.renew = [], [], None, None
    if connection.vendor == "postgresql":
        return _finish_in_one_statement(run)
    with transaction.atomic():
        if not Operation.objects.select_for_update().filter(pk=op.pk, claimed_by=op.claimed_by).exists():
            log.warning("operation %s was taken over by another worker; this worker's end is not written", op.pk)
            return False
        now = op.finished_at
        Link.objects.filter(pk__in=run.links_up).update(
            state=Link.State.UP, up_at=now, lease_expires_at=run.lease_expires_at, updated_at=now
        )
        mark_down(run.links_down, now)
        if run.renew:
            site_id, device_ids, renewed = run.renew
            for link_id, lease in renewed:
                Link.objects.filter(pk=link_id).update(lease_expires_at=lease, updated_at=now)
            if run.renew_expiry:
                Grant.objects.filter(site_id=site_id, device_id__in=device_ids).update(
                    expires_at=run.lease_expires_at)
            if run.renew_initiators:  # a renewal naming more hosts: the grant zones theirs too
                for lock in Grant.objects.filter(site_id=site_id, device_id__in=device_ids):
                    lock.initiators = sorted(set(lock.initiators) | set(run.renew_initiators))
                    lock.save(update_fields=["initiators"])
            held = set(Grant.objects.filter(site_id=site_id, device_id__in=device_ids).values_list("device_id",
                                                                                                       flat=True))
            for device in Device.objects.filter(pk__in=set(device_ids) - held):
                with transaction.atomic():  # another site's exclusive lock wins (see _FINISH_SQL)
                    try:
                        Grant.objects.create(device=device, site_id=site_id, exclusive=not device.shareable,
                                                  expires_at=run.lease_expires_at, operation=op,
                                                  reason=f"operation {op.pk}", acquired_at=now,
                                                  initiators=run.renew_initiators)
                    except IntegrityError:
                        pass
        if run.release_locks:
            site_id, device_ids = run.release_locks
            Grant.objects.filter(site_id=site_id, device_id__in=device_ids).exclude(
                operation__created_at__gt=op.created_at
            ).delete()
        op.save(update_fields=_JOURNAL_FIELDS)
    return True


_JOURNAL_FIELDS = [
    "state", "phase", "error", "result", "transcript", "router_ms", "registry_ms", "invocation_ms", "total_ms",
    "finished_at", "attempts",
]  # fmt: skip

# The end of every operation, in one statement and so one round trip and one commit (this runs on
# every operation's path; the ORM's four statements cost ~4 ms on small machines, `bench ops`).
# Locks taken by an operation submitted after this one (a new add racing this remove) are kept.
_FINISH_SQL = f"""
    WITH claim AS (
        -- The fence: only the worker holding the claim writes the end (a stalled one taken over does
        -- not); every other change below waits for this row and applies only if it was written.
        UPDATE {OPERATION}
           SET state = %(state)s, phase = %(phase)s, error = %(error)s, result = %(result)s::jsonb,
               transcript = %(transcript)s, router_ms = %(router_ms)s, registry_ms = %(registry_ms)s,
               invocation_ms = %(invocation_ms)s, total_ms = %(total_ms)s, finished_at = %(now)s,
               attempts = %(attempts)s
         WHERE id = %(id)s AND claimed_by = %(claimed_by)s
         RETURNING id
    ), up AS (
        UPDATE {LINK}
           SET state = %(up)s, up_at = %(now)s, lease_expires_at = %(lease)s, updated_at = %(now)s
         WHERE id = ANY(%(links_up)s) AND EXISTS (SELECT 1 FROM claim)
    ), down AS (
        UPDATE {LINK} SET state = %(down)s, down_at = %(now)s, updated_at = %(now)s
         WHERE id = ANY(%(links_down)s) AND EXISTS (SELECT 1 FROM claim)
    ), renewed AS (
        UPDATE {LINK} AS link SET lease_expires_at = given.lease, updated_at = %(now)s
          FROM unnest(%(links_renewed)s::bigint[], %(renewed_leases)s::timestamptz[]) AS given (id, lease)
         WHERE link.id = given.id AND EXISTS (SELECT 1 FROM claim)
    ), renewed_locks AS (
        -- The lease moves to the add's expiry (not for a V1 addifcp); the grant zones the hosts this
        -- add named too (a renewal naming more hosts).
        UPDATE {LOCK} SET expires_at = CASE WHEN %(renew_expiry)s THEN %(lease)s ELSE expires_at END,
                          initiators = (SELECT coalesce(jsonb_agg(wwn ORDER BY wwn), '[]'::jsonb)
                                          FROM (SELECT jsonb_array_elements_text(initiators)
                                                UNION SELECT jsonb_array_elements_text(%(initiators)s::jsonb))
                                               AS given (wwn))
         WHERE site_id = %(renew_site)s AND device_id = ANY(%(renew_devices)s)
           AND (%(renew_expiry)s OR %(initiators)s::jsonb <> '[]'::jsonb)
           AND EXISTS (SELECT 1 FROM claim)
    ), relocked AS (
        -- A remove that ran while this add was under way (it saw no links yet) released the lock:
        -- the add's links are up, so its site holds the devices again.
        INSERT INTO {LOCK} (device_id, site_id, exclusive, acquired_at, expires_at, reason, operation_id, initiators)
        SELECT device.id, %(renew_site)s, NOT device.shareable, %(now)s, %(lease)s, %(reason)s, %(id)s,
               %(initiators)s::jsonb
          FROM {DEVICE} AS device
         WHERE device.id = ANY(%(renew_devices)s) AND EXISTS (SELECT 1 FROM claim)
           -- as a connect takes a grant (holders.lockable_devices): not beside another site's exclusive
           -- grant, nor beside any other site's when the device is not shareable
           AND NOT EXISTS (SELECT 1 FROM {LOCK} AS other
                            WHERE other.device_id = device.id AND other.site_id <> %(renew_site)s
                              AND (other.exclusive OR NOT device.shareable))
        ON CONFLICT DO NOTHING
    ), released AS (
        DELETE FROM {LOCK} AS held
         WHERE held.site_id = %(site)s AND held.device_id = ANY(%(devices)s) AND EXISTS (SELECT 1 FROM claim)
           AND NOT EXISTS (SELECT 1 FROM {OPERATION} AS newer
                            WHERE newer.id = held.operation_id AND newer.created_at > %(created)s)
    )
    SELECT count(*) FROM claim
"""


def _finish_in_one_statement(run: Run) -> bool:
    op = run.op
    site_id, device_ids = run.release_locks or (None, [])
    renew_site, renew_devices, renewed = run.renew or (None, [], [])
    params = {
        "renew_site": renew_site, "renew_devices": renew_devices, "links_renewed": [pk for pk, _ in renewed],
        "renewed_leases": [lease for _, lease in renewed], "renew_expiry": run.renew_expiry,
        "initiators": json.dumps(run.renew_initiators),
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
        written = cursor.fetchone()[0] == 1
    if not written:
        log.warning("operation %s was taken over by another worker; this worker's end is not written", op.pk)
    return written


class LiveJournal:
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
                except Exception as exc:  # noqa: BLE001 - a missed beat is recovered by the next one
                    if isinstance(exc, (OperationalError, InterfaceError)):  # down or restarting: a line
                        log.warning("journal progress update: the database did not answer (%s)",
                                    str(exc).splitlines()[0])
                    else:
                        log.warning("journal progress update failed", exc_info=True)
                    connection.close()  # the next beat connects afresh
                    session_tuned = False
        finally:
            connection.close()


heartbeats = LiveJournal()

"""Add, remove, list and invoke: the router work of each kind of operation on links.

Order of work for an add: wait for earlier requests of the same site and device, take the site's
locks again, write each link as `configuring` (so a record exists before the router changes), drive
each router step, then mark the links `up` in the commit that journals success. A remove marks
`removing`, removes, verifies, marks `down` and releases the locks, keeping a link another hold still
needs (another device of the zone between the same two sites, whichever of them asked). A permanent
failure part-way through an add or a remove rolls back the steps done (operations/rollback.py), so a
site keeps whole what it holds.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from operations.converge import claims_more, converge_link, lacks_pairs, link_pairs, record_pairs
from operations.desired import keepers, plan_initiators
from operations.errors import DeviceBusy, OperationFailed, StepFailed
from operations.holders import (
    between,
    holders_expiries,
    link_lease,
    mark_down,
    plan_ids,
    renewed_since,
    take_locks,
)
from operations.journal import Run
from operations.models import Grant, Link, Operation
from operations.planner import PlanStep, find_router
from operations.rollback import grow_back, put_back_removed, roll_back_add
from operations.steps import drive, look, read_router
from registry.models import Device, Router, Site
from routers.drivers import DRIVERS
from routers.drivers.base import RouterLink

T = TypeVar("T")
Kind, State = Operation.Kind, Operation.State

# Plain SQL names its tables from the models: each app owns its tables.
OPERATION = Operation._meta.db_table


def _steps(plan: dict[str, Any]) -> list[PlanStep]:
    return [PlanStep(**step) for step in plan["steps"]]


def _step_rows(run: Run, steps: list[PlanStep]) -> list[list[int]]:
    """[device pk, zone pk] per step. Zone row ids (not numbers) keep link lookups free of joins."""
    devices = plan_ids(run.op.plan)["devices"]
    return [devices[step.device] for step in steps]


def _applied(step: PlanStep) -> dict[str, Any]:
    """The values a link record keeps of what its step sends (the applied record, operations.models.Link)."""
    return {"zone_number": step.zone, "local_ip": step.local_ip, "vsan": step.vsan}


def _as_applied(step: PlanStep, link: Link | None) -> PlanStep:
    """A removal's step as its link was applied: the zone number, own address and VSAN the record
    keeps, whatever the registry says now (a step with no record, as planned)."""
    if link is None:
        return step
    return dataclasses.replace(step, zone=link.zone_number, local_ip=link.local_ip or step.local_ip,
                               vsan=link.vsan if link.vsan is not None else step.vsan)


def _endpoints(steps: list[PlanStep], rows: list[list[int]]) -> Q:
    endpoints = Q()
    for step, (_device_id, zone_id) in zip(steps, rows, strict=True):
        endpoints |= Q(router_id=step.router_id, port=step.port, zone_id=zone_id, remote_ip=step.remote_ip)
    return endpoints


class InFlight(OperationFailed):
    """A link of the plan is being changed by another operation that is queued or running."""

    def __init__(self, link: Link, operation: Operation) -> None:
        super().__init__(f"link {link} is being changed by operation {operation.pk}")
        self.operation_id = operation.pk
        self.kind = operation.kind
        self.command = (operation.request or {}).get("command")


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
        except _EndpointTaken:
            time.sleep(_IN_FLIGHT_POLL)  # the next look finds that operation's record, and waits for it
            continue
        except InFlight as busy:
            if run.waits_for(busy.operation_id, busy.kind, busy.command):
                run.notes.append(f"{busy}: waiting for it to finish")
            if run.remaining() <= _IN_FLIGHT_POLL:
                raise OperationFailed(f"{busy}, and it did not finish within this operation's time limit") from None
            time.sleep(_IN_FLIGHT_POLL)


def _busy_elsewhere(link: Link, op: Operation) -> Operation | None:
    other = link.operation
    return other if other is not None and other.pk != op.pk and other.state in (State.QUEUED, State.RUNNING) else None


def _after_earlier_requests(run: Run) -> None:
    """Wait until no earlier add/remove of the same site and devices, or of the zone between the same
    sites, is unfinished.

    Requests for one site and device take effect in the order they were submitted: a remove queued
    behind an add (or the reverse) runs after it, whichever worker picks which first, and identical
    requests find the state the earlier one reached. Bounded by this operation's own time limit.
    """
    op, plan = run.op, run.op.plan
    if not plan.get("devices"):
        return
    devices = set(plan["devices"])
    while True:
        earlier = _earlier_unfinished(op.pk, plan)
        if not earlier:
            return
        if run.waits_for(*earlier[0]):
            run.notes.append(f"waiting for operation {earlier[0][0]}, submitted earlier for the same site and zone")
        if run.remaining() <= _IN_FLIGHT_POLL:
            raise OperationFailed(f"operation {earlier[0][0]}, submitted earlier for {plan['site']} and "
                                  f"{', '.join(sorted(devices))}, did not finish within this operation's time limit")
        time.sleep(_IN_FLIGHT_POLL)


# V1 addifcp/rmifcp too: they take and release the site's locks like any add and remove. Plain SQL
# (the devices matched in the database): this runs on every add and remove (see `python -m bench ops`).
# The same site and a device in common, or the same zone between sites of this plan: devices of one
# zone share links between the same two sites, whichever of them asked (two removes of two holders
# of one link, each seeing the other's lock, would both keep it and both release).
_EARLIER_SQL = f"""
    SELECT id, kind, request->>'command' FROM {OPERATION}
     WHERE id < %(id)s AND state IN ('queued', 'running') AND kind IN ('add', 'remove', 'expire', 'invoke')
       AND ((plan->>'site' = %(site)s AND plan->'devices' ?| %(devices)s)
            OR (plan->>'zone' = %(zone)s AND plan->>'site' = ANY(%(sites)s)))
     ORDER BY id LIMIT 1
"""


def _earlier_unfinished(operation_id: int, plan: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    """The first unfinished add/remove/expire/V1 request submitted before this one that touches what
    `plan` does: the same site and any of its devices, or its zone between any of its sites."""
    site, zone, devices = plan["site"], str(plan.get("zone")), set(plan["devices"])
    sites = sorted({site, *(step["site"] for step in plan["steps"])})
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_EARLIER_SQL, {"id": operation_id, "site": site, "zone": zone, "sites": sites,
                                          "devices": sorted(devices)})
            return [tuple(row) for row in cursor.fetchall()]
    return [
        (pk, kind, request.get("command")) for pk, kind, other, request in Operation.objects.filter(
            pk__lt=operation_id, state__in=(State.QUEUED, State.RUNNING),
            kind__in=(Kind.ADD, Kind.REMOVE, Kind.EXPIRE, Kind.INVOKE), plan__site__in=sites,
        ).order_by("pk").values_list("pk", "kind", "plan", "request")
        if (other.get("site") == site and devices & set(other.get("devices", [])))
        or str(other.get("zone")) == zone
    ][:1]


def execute_add(run: Run) -> None:
    op, plan = run.op, run.op.plan
    steps = _steps(plan)
    try:
        _after_earlier_requests(run)
        duration = op.request.get("duration")  # the lease runs from when the add can start
        expires_at = timezone.now() + timedelta(seconds=duration) if duration else None
        with run.registry():
            # The locks were taken at submit, but a remove queued before this add may have released
            # them since (or a crash came between): the site holds its devices again before any
            # router is touched, or the add fails if another site took one meanwhile.
            _take_locks_or_fail(op, plan, expires_at)
        links = _after_operations_in_flight(run, lambda: _links_for_add(run, steps))
    except OperationFailed:
        # Nothing reached a router: the grants this add took (at submit or just now) end with it.
        Grant.objects.filter(operation=op).delete()
        raise
    done: list[tuple[PlanStep, Link, bool]] = []
    extended: list[tuple[PlanStep, Link]] = []  # shared FCIP links this add extended, to shrink on failure
    for index, (step, (link, ours)) in enumerate(zip(steps, links, strict=True)):
        if not ours and lacks_pairs(link, step):
            # The link is this add's while it changes (reconcile and the settle leave it alone), and
            # stays marked as last changed by it.
            Link.objects.filter(pk=link.pk).update(operation=op, updated_at=timezone.now())
            try:
                record_pairs(link, converge_link(run, link.router, step.spec.key, joining=step.spec.all_pairs()))
            except StepFailed as exc:
                Link.objects.filter(pk__in=[lk.pk for lk, mine in links[index + 1 :] if mine]).update(
                    state=Link.State.FAILED, down_at=timezone.now())
                roll_back_add(run, done, exc, [*extended, (step, link)])
            run.notes.append(f"{link}: shared, its zoning extended in place for {step.device}")
            extended.append((step, link))
        elif ours:
            decided = [step.spec]  # what this step sets out to put on the router
            try:
                if DRIVERS[link.router.platform].zones_initiators:
                    # What the grants need there: this one's pairs, and any a settled grant lost.
                    converge_link(run, link.router, step.spec.key, joining=step.spec.all_pairs(), read=False,
                                  decided=decided)
                    record_pairs(link, set(decided[0].all_pairs()))
                else:
                    drive(run, link.router, step.spec, "add")
            except StepFailed as exc:
                found = None if exc.untouched or exc.timed_out else look(run, link.router, decided[0])
                if found == "holds":  # the step's work was done after all (a lost reply, then faults)
                    run.notes.append(f"{link}: the router holds it after all ({exc}); carrying on")
                    if DRIVERS[link.router.platform].zones_initiators:
                        record_pairs(link, set(decided[0].all_pairs()))
                    done.append((step, link, True))
                    continue
                # Steps not yet sent never reached a router, nor did a refused login, nor one the
                # router does not list. A command refused part-way may follow others that took
                # effect: that step is undone too.
                untouched = [lk.pk for lk, mine in links[index + 1 :] if mine]
                if exc.untouched or found == "absent":
                    untouched.append(link.pk)
                else:
                    done.append((step, link, True))
                Link.objects.filter(pk__in=untouched).update(state=Link.State.FAILED, down_at=timezone.now())
                roll_back_add(run, done, exc, extended)
        done.append((step, link, ours))
    # Every step is verified on its router: the records say `up` in the commit that says `succeeded`.
    run.links_up = [link.pk for _, link, ours in done if ours]
    run.lease_expires_at = expires_at
    ids = plan_ids(plan)
    if plan.get("raw"):
        # A V1 addifcp sets no lease, but its site holds the device again when its link is up (a
        # remove that ran meanwhile may have released the lock).
        run.renew, run.renew_expiry = (ids["site"], [pk for pk, _zone_id in ids["devices"].values()], []), False
    else:
        # A repeated add renews: the site's locks on these devices and the links it already had take
        # this add's expiry, later or sooner or none, so that what the result says is what holds.
        devices = [pk for pk, _zone_id in ids["devices"].values()]
        # A link reused from another holder of the site lasts as long as the longest of them.
        renewed = [(link.pk, link_lease([expires_at, *holders_expiries(link, ids["site"], devices)]))
                   for _, link, ours in done if not ours]
        run.renew = (ids["site"], devices, renewed)
        run.renew_initiators = plan_initiators(plan)
    op.result = {"links": [link.pk for _, link, _ in done], "lease_expires_at": expires_at and expires_at.isoformat(),
                 **run.waited()}


def _take_locks_or_fail(op: Operation, plan: dict[str, Any], expires_at) -> None:
    try:
        take_locks(op, plan, expires_at)
    except DeviceBusy as exc:
        raise OperationFailed(exc.message) from None


def _links_for_add(run: Run, steps: list[PlanStep]) -> list[tuple[Link, bool]]:
    """Each step's link row, written `configuring` before any router is touched (one transaction).

    Returns (link, ours) per step: a link already `up` (another device of the zone uses it) is not
    ours to configure or to roll back.
    """
    op = run.op
    routers = Router.objects.in_bulk({step.router_id for step in steps})
    site_id = plan_ids(op.plan)["site"]
    rows = _step_rows(run, steps)

    def new_link(step: PlanStep, device_id: int, zone_id: int) -> Link:
        return Link(site_id=site_id, device_id=device_id, router=routers[step.router_id], port=step.port,
                    zone_id=zone_id, remote_ip=step.remote_ip, state=Link.State.CONFIGURING, operation=op,
                    initiators=step.initiators, pairs=[list(pair) for pair in step.spec.all_pairs()],
                    **_applied(step))

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
                pass  # another grant's: shared as it is, or (FCIP) extended in place (`lacks_pairs`)
            elif link is not None:
                if other := _busy_elsewhere(link, op):
                    raise InFlight(link, other)
                if refusal := claims_more(link, routers[step.router_id], step):
                    raise OperationFailed(refusal)
                link.state, link.operation = Link.State.CONFIGURING, op
                link.save(update_fields=["state", "operation", "updated_at"])
            elif link is None:
                link = new_link(step, device_id, zone_id)
                new.append(link)
            link.router = routers[step.router_id]
            result.append((link, link.state != Link.State.UP))
        Link.objects.bulk_create(new)
    return result


def execute_remove(run: Run) -> None:
    op, plan = run.op, run.op.plan
    _after_earlier_requests(run)
    if op.kind == Kind.EXPIRE and (renewal := renewed_since(op)) is not None:
        # The lease this expiry was submitted for was renewed after that: the grant lives on.
        run.notes.append(f"the lease was {renewal} after this expiry was queued; nothing is removed")
        op.result = {"links": [], "renewed": renewal, **run.waited()}
        return
    planned = _steps(plan)
    links, previous, kept = _after_operations_in_flight(run, lambda: _links_for_remove(run, planned))
    steps = [_as_applied(step, link) for step, link in zip(planned, links, strict=True)]
    removed: list[int] = []
    taken_down: list[tuple[PlanStep, Link]] = []  # what this remove took off its routers, to put back on failure
    leaving = (plan_ids(plan)["site"], [pk for pk, _zone_id in plan_ids(plan)["devices"].values()])
    shrunk: list[tuple[PlanStep, Link]] = []  # shared FCIP links shrunk, to grow back on failure
    for index, (step, link) in enumerate(zip(steps, links, strict=True)):
        router = run.row(Router, pk=step.router_id)
        # A shared FCIP link another grant keeps shrinks to what the grants left need.
        shrink = index in kept and DRIVERS[router.platform].zones_initiators
        if index in kept:
            holder_site, holder_device = kept[index]
            run.notes.append(f"{link}: kept, still needed by {Site.objects.get(pk=holder_site).name}'s hold of "
                             f"{Device.objects.get(pk=holder_device).description}"
                             + ("; its zoning shrinks to what the grants left need" if shrink else ""))
            if not shrink:
                continue
        try:
            if shrink:
                pairs = converge_link(run, router, step.spec.key, leaving=leaving, applied=step.spec)
                if pairs:
                    record_pairs(Link.objects.select_related("device").get(pk=link.pk), pairs)
                    shrunk.append((step, link))
                    continue
                # The grant that keeps it zones nothing (no initiators): the link came off after all.
                previous[link.pk] = Link.State.UP
            else:
                drive(run, router, step.spec, "remove")
        except StepFailed as exc:
            found = None if exc.untouched or exc.timed_out or shrink else look(run, router, step.spec)
            if found == "absent":  # gone after all (a lost reply, then faults): the step is done
                run.notes.append(f"{link}: the router no longer lists it ({exc}); carrying on")
                removed.append(link.pk)
                taken_down.append((step, link))
                continue
            # Steps not yet sent are untouched: as they were, and so is a link the router still
            # holds in full. A step refused part-way may have taken some of the link down (its
            # zones out of force, say), or the router could not be read: the record stays
            # `removing`, and the settle chore puts the link back for the hold that keeps it.
            untouched = [lk for later, lk in enumerate(links[index + 1 :], index + 1)
                         if lk is not None and later not in kept]
            if (exc.untouched or found == "holds") and not shrink:
                untouched.append(link)
            for lk in untouched:
                if previous[lk.pk] is None:  # a record this remove wrote: there was none, and is none
                    Link.objects.filter(pk=lk.pk).delete()
                else:
                    Link.objects.filter(pk=lk.pk).update(state=previous[lk.pk], updated_at=timezone.now())
            grow_back(run, shrunk, exc)
            restored, lost = put_back_removed(run, taken_down, previous, exc)
            _settle_removed([pk for pk in removed if pk not in restored and pk not in lost], previous)
            if restored and not lost and (exc.untouched or found == "holds"):
                raise OperationFailed(f"{exc} (rolled back: {len(restored)} link(s) put back)",
                                      state=State.ROLLED_BACK) from None
            raise OperationFailed(str(exc) + (f"; not put back, left for the settle chore: {len(lost)} link(s)"
                                              if lost else "")) from None
        removed.append(link.pk)
        taken_down.append((step, link))
    removed = _settle_removed(removed, previous, keep_for_finish=True)
    run.links_down = removed
    ids = plan_ids(plan)
    devices = list(ids["devices"].values())
    # A V1 rmifcp takes down one link: the site lets the device go only if no other link serves it,
    # that is one of the device's zone between the site and the device's owner (a link of the zone to
    # a third site serves other holds, not this one).
    serving = Q()
    for pk, zone_id in devices:
        serving |= between(ids["site"], Device.objects.get(pk=pk).owner_site_id) & Q(zone_id=zone_id)
    if not plan.get("raw") or not Link.objects.filter(serving, state__in=Link.ACTIVE_STATES).exclude(
            pk__in=removed).exists():
        run.release_locks = (ids["site"], [pk for pk, _zone_id in devices])
    op.result = {"links": removed, **run.waited()}


def _settle_removed(removed: list[int], previous: dict[int, str | None], *,
                    keep_for_finish: bool = False) -> list[int]:
    """Links verified gone from their routers: the records this remove wrote where there was none are
    deleted (nothing was there, nothing is); the others are marked down now, or (`keep_for_finish`)
    returned for the commit that ends the operation."""
    written = [pk for pk in removed if previous.get(pk, "") is None]
    Link.objects.filter(pk__in=written).delete()
    recorded = [pk for pk in removed if pk not in written]
    if not keep_for_finish:
        mark_down(recorded)
    return recorded


def _links_for_remove(
    run: Run, steps: list[PlanStep]
) -> tuple[list[Link], dict[int, str | None], dict[int, tuple[int, int]]]:
    """Each step's active link, marked `removing` before any router is touched (one transaction); a
    step with no active record gets a new record marked `removing`.

    A link that another hold still needs (another device of the zone between the same two sites,
    held by the requesting site or by the other one) is not removed: it is handed to that hold and
    kept up; those steps' indexes are returned with the hold, and nothing is sent for them.
    """
    op = run.op
    rows = _step_rows(run, steps)
    ids = plan_ids(op.plan)
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
        previous: dict[int, str | None] = {}
        kept: dict[int, tuple[int, int]] = {}  # step index -> the (site, device) the link now serves
        # What stays is what the desired state still names once this site's grants of these devices
        # end (V1 is literal: its rmifcp removes what it names).
        stays = {} if op.plan.get("raw") else keepers({step.router_id for step in steps}, ids["site"], leaving)
        markers, records = [], []  # records: `links`, with a marker for each missing record
        for index, link in enumerate(links):
            if link is None:
                # No record: the router is still told (a link left there is removed), under a record
                # marked `removing` like any other, so that an add of the same endpoint (another
                # device of the zone) waits for this remove instead of racing it.
                step, (device_id, zone_id) = steps[index], rows[index]
                marker = Link(site_id=ids["site"], device_id=device_id, router_id=step.router_id,
                              port=step.port, zone_id=zone_id, remote_ip=step.remote_ip,
                              state=Link.State.REMOVING, operation=op, initiators=step.initiators,
                              **_applied(step))
                markers.append(marker)
                records.append(marker)
                continue
            records.append(link)
            if other := _busy_elsewhere(link, op):
                raise InFlight(link, other)
            # An up link another grant needs is handed to it (an FCIP one then shrinks).
            step = steps[index]
            holder = stays.get((step.router_id, step.spec.key)) if link.state == Link.State.UP else None
            if holder is not None:
                lease = link_lease(holders_expiries(link, ids["site"], leaving))
                holder_site, holder_device = holder
                snapshot: dict[str, Any] = {}
                if DRIVERS[link.router.platform].zones_initiators:  # the holder's initiators on it, so far
                    wwn = Device.objects.get(pk=holder_device).wwn
                    snapshot = {"initiators": sorted(i for i, target in link_pairs(link) if target == wwn)}
                if snapshot:  # it shrinks under this remove: reconcile and the settle leave it alone meanwhile
                    snapshot["operation"] = op
                Link.objects.filter(pk=link.pk).update(site_id=holder_site, device_id=holder_device,
                                                       lease_expires_at=lease, updated_at=timezone.now(), **snapshot)
                kept[index] = holder
                continue
            previous[link.pk] = link.state
        Link.objects.filter(pk__in=list(previous)).update(state=Link.State.REMOVING, operation=op,
                                                          updated_at=timezone.now())
        try:
            with transaction.atomic():
                Link.objects.bulk_create(markers)
        except IntegrityError:  # an add wrote the endpoint's record since we looked: look again
            raise _EndpointTaken from None
        previous.update({marker.pk: None for marker in markers})  # None: there was no record
    return records, previous, kept


class _EndpointTaken(Exception):
    """Another operation wrote a record for an endpoint of this plan between our read and our insert."""


def _link_dict(link: RouterLink) -> dict[str, Any]:
    """A link as the router reports it; `oper` is its carrier's status where the router says (FOS)."""
    return {"port": link.port, "zone": link.zone, "remote_ip": link.remote_ip, "state": link.state,
            "oper": link.oper}


def execute_list(run: Run) -> None:
    name = run.op.request.get("router")
    routers = [find_router(name)] if name else list(Router.objects.order_by("name"))
    listing, errors = {}, {}
    for router in routers:
        try:
            listing[router.name] = [_link_dict(link) for link in read_router(run, router)]
        except StepFailed as exc:
            errors[router.name] = str(exc)
    run.op.result = {"routers": listing, "errors": errors}
    if errors:
        raise OperationFailed("; ".join(errors.values()))


def execute_invoke(run: Run) -> None:
    request = run.op.request
    if request["command"] == "lsifcp":
        try:
            links = read_router(run, find_router(request["router"]))
        except StepFailed as exc:  # a read changes nothing: failed, with the router's reason, not an engine error
            raise OperationFailed(str(exc)) from exc
        wanted = {k: request[k] for k in ("port", "zone", "remote_ip") if request.get(k) not in (None, "")}
        chosen = [link for link in links if all(str(getattr(link, k)) == str(v) for k, v in wanted.items())]
        run.op.result = {"links": [_link_dict(link) for link in chosen]}
    elif request["command"] == "addifcp":
        execute_add(run)
    else:
        execute_remove(run)

"""A remove: the router work of a disconnect, an expiry (and a V1 rmifcp).

Order of work: wait for earlier requests, mark each step's link `removing` (handing a link another
hold still needs to that hold: another device of the zone between the same two sites, whichever of
them asked), take every router's link off at once, as it was applied (or shrink a shared FCIP link),
verify, then mark the links `down` and release the locks in the commit that ends the operation. A
step that fails for good converges every router the remove changed back to the grants (the site
still holds the device): what it took off goes back on, as long as a grant still needs it.
"""

from __future__ import annotations

import functools
from typing import Any, NoReturn

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from operations.converge import converge_link, link_pairs, record_pairs
from operations.desired import keepers
from operations.errors import OperationFailed, StepFailed
from operations.holders import (
    between,
    holders_expiries,
    link_lease,
    plan_ids,
    renewed_since,
)
from operations.journal import Run
from operations.links import (
    Outcome,
    applied_values,
    as_applied,
    endpoints,
    internal_failure,
    logins_possible,
    note_other_failures,
    step_rows,
    steps_of,
)
from operations.models import Link, Operation
from operations.planner import PlanStep
from operations.settling import settle_routers
from operations.steps import drive, look
from operations.waits import EndpointTaken, InFlight, after_earlier_requests, after_operations_in_flight, busy_elsewhere
from registry.models import Device, Router, Site
from routers.drivers import DRIVERS

Kind, State = Operation.Kind, Operation.State


def execute_remove(run: Run) -> None:
    op, plan = run.op, run.op.plan
    after_earlier_requests(run)
    if op.kind == Kind.EXPIRE and (renewal := renewed_since(op)) is not None:
        # The lease this expiry was submitted for was renewed after that: the grant lives on.
        run.notes.append(f"the lease was {renewal} after this expiry was queued; nothing is removed")
        op.result = {"links": [], "renewed": renewal, **run.waited()}
        return
    planned = steps_of(plan)
    logins_possible(run, planned)
    links, previous, kept = after_operations_in_flight(run, lambda: _links_for_remove(run, planned))
    steps = [as_applied(step, link) for step, link in zip(planned, links, strict=True)]
    leaving = (plan_ids(plan)["site"], [pk for pk, _zone_id in plan_ids(plan)["devices"].values()])
    shrink: list[bool] = []
    for index, (step, link) in enumerate(zip(steps, links, strict=True)):
        # A shared FCIP link another grant keeps shrinks to what the grants left need.
        shrink.append(index in kept and DRIVERS[run.row(Router, pk=step.router_id).platform].zones_initiators)
        if index in kept:
            holder_site, holder_device = kept[index]
            run.notes.append(f"{link}: kept, still needed by {Site.objects.get(pk=holder_site).name}'s hold of "
                             f"{Device.objects.get(pk=holder_device).description}"
                             + ("; its zoning shrinks to what the grants left need" if shrink[index] else ""))
    outcomes = run.at_once([functools.partial(_remove_step, run, step, leaving, shrinking)
                            for index, (step, shrinking) in enumerate(zip(steps, shrink, strict=True))
                            if shrinking or index not in kept])
    worked = [index for index in range(len(steps)) if shrink[index] or index not in kept]
    removed: list[int] = []
    taken_down: list[tuple[PlanStep, Link]] = []  # what this remove took off its routers, to put back on failure
    shrunk: list[tuple[PlanStep, Link]] = []  # shared FCIP links shrunk, to grow back on failure
    untouched: list[Link] = []  # as they were: refused before any change, or still held in full
    failures: list[StepFailed] = []
    clean = True  # every failure left its router as it was
    for index, outcome in zip(worked, outcomes, strict=True):
        step, link = steps[index], links[index]
        if outcome.failed is None or outcome.found == "absent":
            if outcome.failed is not None:  # gone after all (a lost reply, then faults): the step is done
                run.notes.append(f"{link}: the router no longer lists it ({outcome.failed}); carrying on")
            elif shrink[index] and outcome.pairs:
                record_pairs(Link.objects.select_related("device").get(pk=link.pk), outcome.pairs)
                shrunk.append((step, link))
                continue
            elif shrink[index]:
                # The grant that keeps it zones nothing (no initiators): the link came off after all.
                previous[link.pk] = Link.State.UP
            removed.append(link.pk)
            taken_down.append((step, link))
            continue
        # A link the router still holds in full is as it was. A step refused part-way may have taken
        # some of the link down (its zones out of force, say), or the router could not be read: the
        # record stays `removing`, and the settle chore puts the link back for the hold that keeps it.
        failures.append(outcome.failed)
        if (outcome.failed.untouched or outcome.found == "holds") and not shrink[index]:
            untouched.append(link)
        else:
            clean = False
    if failures:
        _roll_back(run, failures, untouched, previous, taken_down, shrunk, clean)
    # Verified gone: the others are marked down in the commit that ends the operation.
    removed = [pk for pk in removed if pk not in _drop_written(removed, previous)]
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


def _remove_step(run: Run, step: PlanStep, leaving: tuple[int, list[int]], shrink: bool) -> Outcome:
    """One router's part of a remove (run at the same time as the others' parts): the link taken off,
    or (`shrink`) a shared FCIP link shrunk to what the grants left need (`pairs`: what it zones now;
    empty: it came off)."""
    router = run.row(Router, pk=step.router_id)
    try:
        if shrink:
            return Outcome(pairs=converge_link(run, router, step.spec.key, leaving=leaving, applied=step.spec))
        drive(run, router, step.spec, "remove")
    except StepFailed as exc:
        found = None if exc.untouched or exc.timed_out or shrink else look(run, router, step.spec)
        return Outcome(failed=exc, found=found)
    except Exception as exc:  # noqa: BLE001 - the other routers' outcomes must not be lost with it
        return internal_failure(router.name, exc)
    return Outcome()


def _roll_back(run: Run, failures: list[StepFailed], untouched: list[Link], previous: dict[int, str | None],
               taken_down: list[tuple[PlanStep, Link]], shrunk: list[tuple[PlanStep, Link]], clean: bool) -> NoReturn:
    """The remove failed for good on a router: the site still holds the device, so every router this
    remove changed converges to the grants as they are (`settle_routers`, the one converge every
    repair uses): the links it took off go back on and the shared FCIP links it shrank grow back, as
    long as a grant needs them (a lapsed lease's are not put back: an expiry never edits its grant,
    so a failed one leaves the lease due and the lease chore asks again). Raises OperationFailed with
    the first failure's reason: `rolled_back` when everything it took off is back and every failure
    left its router as it was."""
    cause = failures[0]
    note_other_failures(run, failures)
    for link in untouched:  # as they were: refused before any change, or still held in full
        if previous[link.pk] is None:  # a record this remove wrote: there was none, and is none
            Link.objects.filter(pk=link.pk).delete()
        else:
            Link.objects.filter(pk=link.pk).update(state=previous[link.pk], updated_at=timezone.now())
    # Records this remove wrote where there was none: nothing was held there, nothing is put back.
    written = _drop_written([link.pk for _step, link in taken_down], previous)
    changed = [link for _step, link in taken_down + shrunk if link.pk not in written]
    before = dict(Link.objects.filter(pk__in=[link.pk for _step, link in shrunk]).values_list("pk", "pairs"))
    unsettled = settle_routers(run, [link.router_id for link in changed])
    after = {pk: (state, pairs) for pk, state, pairs in
             Link.objects.filter(pk__in=[link.pk for link in changed]).values_list("pk", "state", "pairs")}
    restored = lost = 0
    for link in changed:
        state, pairs = after.get(link.pk, (None, None))
        if why := unsettled.of(link):
            lost += state == Link.State.REMOVING
            run.notes.append(f"{link}: could not be put back after {cause} ({why}); left for the settle chore")
        elif link.pk in before:  # shrunk: put back if its zoning grew from what the shrink left
            if pairs != before[link.pk]:
                restored += 1
                run.notes.append(f"{link}: its zoning put back, the removal failed on another router ({cause})")
        elif state == Link.State.UP:
            restored += 1
            run.notes.append(f"{link}: it is put back, the removal failed on another router ({cause})")
    if restored and not lost and clean:
        raise OperationFailed(f"{cause} (rolled back: {restored} link(s) put back)", state=State.ROLLED_BACK)
    raise OperationFailed(str(cause) + (f"; not put back, left for the settle chore: {lost} link(s)"
                                        if lost else ""))


def _drop_written(link_ids: list[int], previous: dict[int, str | None]) -> set[int]:
    """Delete the records among `link_ids` that this remove wrote where there was none (nothing was
    there, and nothing is); their ids."""
    written = {pk for pk in link_ids if previous.get(pk, "") is None}
    Link.objects.filter(pk__in=written).delete()
    return written


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
    rows = step_rows(run, steps)
    ids = plan_ids(op.plan)
    leaving = [pk for pk, _zone_id in ids["devices"].values()]
    with transaction.atomic():
        active = {
            (link.router_id, link.port, link.zone_id, link.remote_ip): link
            for link in Link.objects.select_for_update(of=("self",))
            .select_related("operation", "router", "device")
            .filter(endpoints(steps, rows), state__in=Link.ACTIVE_STATES)
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
                              **applied_values(step))
                markers.append(marker)
                records.append(marker)
                continue
            records.append(link)
            if other := busy_elsewhere(link, op):
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
            raise EndpointTaken from None
        previous.update({marker.pk: None for marker in markers})  # None: there was no record
    return records, previous, kept



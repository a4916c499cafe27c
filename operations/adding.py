"""An add: the router work of a connect (and a V1 addifcp).

Order of work: wait for earlier requests of the same site and device, take the site's locks again,
write each link as `configuring` (so a record exists before the router changes), drive every router
step at once (`Run.at_once`), then mark the links `up` in the commit that journals success. A step
that fails for good converges every router the add changed to the grants without the add's
(`settle_routers`, the one converge every repair uses), then ends its grants, so a site keeps whole
what it holds, or holds nothing.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any, NoReturn

from django.db import IntegrityError, transaction
from django.utils import timezone

from operations.converge import claims_more, converge_link, lacks_pairs, link_pairs, record_pairs
from operations.desired import plan_initiators
from operations.errors import DeviceBusy, OperationFailed, StepFailed
from operations.holders import (
    holders_expiries,
    link_lease,
    plan_ids,
    take_locks,
)
from operations.journal import Run
from operations.links import (
    Outcome,
    applied_values,
    endpoints,
    internal_failure,
    logins_possible,
    note_other_failures,
    step_rows,
    steps_of,
)
from operations.models import Grant, Link, Operation
from operations.planner import PlanStep
from operations.settling import settle_routers
from operations.steps import drive, look
from operations.waits import InFlight, after_earlier_requests, after_operations_in_flight, busy_elsewhere
from registry.models import Router
from routers.drivers import DRIVERS

Kind, State = Operation.Kind, Operation.State


def execute_add(run: Run) -> None:
    op, plan = run.op, run.op.plan
    steps = steps_of(plan)
    try:
        after_earlier_requests(run)
        logins_possible(run, steps)
        duration = op.request.get("duration")  # the lease runs from when the add can start
        expires_at = timezone.now() + timedelta(seconds=duration) if duration else None
        with run.registry():
            # The locks were taken at submit, but a remove queued before this add may have released
            # them since (or a crash came between): the site holds its devices again before any
            # router is touched, or the add fails if another site took one meanwhile.
            _take_locks_or_fail(op, plan, expires_at)
        links = after_operations_in_flight(run, lambda: _links_for_add(run, steps))
    except OperationFailed:
        # Nothing reached a router: the grants this add took (at submit or just now) end with it.
        Grant.objects.filter(operation=op).delete()
        raise
    done = _add_on_routers(run, steps, links)
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


def _add_step(run: Run, step: PlanStep, link: Link, ours: bool, extend: bool) -> Outcome:
    """One router's part of an add (run at the same time as the others' parts)."""
    zoning = DRIVERS[link.router.platform].zones_initiators
    if extend:  # a shared FCIP link lacking this grant's pairs: extended in place
        try:
            return Outcome(pairs=converge_link(run, link.router, step.spec.key, joining=step.spec.all_pairs()))
        except StepFailed as exc:
            return Outcome(failed=exc)
        except Exception as exc:  # noqa: BLE001 - the other routers' outcomes must not be lost with it
            return internal_failure(link.router.name, exc)
    if not ours:
        return Outcome()  # another grant's up link serves this one as it is: nothing is sent
    decided = [step.spec]  # what this step sets out to put on the router
    try:
        if zoning:
            # What the grants need there: this one's pairs, and any a settled grant lost.
            converge_link(run, link.router, step.spec.key, joining=step.spec.all_pairs(), read=False, decided=decided)
        else:
            drive(run, link.router, step.spec, "add")
    except StepFailed as exc:
        found = None if exc.untouched or exc.timed_out else look(run, link.router, decided[0])
        return Outcome(pairs=set(decided[0].all_pairs()) if zoning else None, failed=exc, found=found)
    except Exception as exc:  # noqa: BLE001 - the other routers' outcomes must not be lost with it
        return internal_failure(link.router.name, exc)
    return Outcome(pairs=set(decided[0].all_pairs()) if zoning else None)


def _add_on_routers(run: Run, steps: list[PlanStep], links: list[tuple[Link, bool]]
                    ) -> list[tuple[PlanStep, Link, bool]]:
    """Every router of the add worked at once; then (step, link, ours) of each step done. A step that
    failed for good rolls back what the others did (their routers too: a half-made path is harmless
    meanwhile, and is taken down)."""
    op = run.op
    extend = [not ours and lacks_pairs(link, step) for step, (link, ours) in zip(steps, links, strict=True)]
    for (link, _ours), extending in zip(links, extend, strict=True):
        if extending:
            # The link is this add's while it changes (reconcile and the settle leave it alone), and
            # stays marked as last changed by it.
            Link.objects.filter(pk=link.pk).update(operation=op, updated_at=timezone.now())
    outcomes = run.at_once([functools.partial(_add_step, run, step, link, ours, extending)
                            for step, (link, ours), extending in zip(steps, links, extend, strict=True)])
    done: list[tuple[PlanStep, Link, bool]] = []
    extended: list[tuple[PlanStep, Link]] = []  # shared FCIP links this add extended, to shrink on failure
    failed: list[int] = []  # links no router holds anything of
    failures: list[StepFailed] = []
    for step, (link, ours), extending, outcome in zip(steps, links, extend, outcomes, strict=True):
        if extending:
            extended.append((step, link))
            if outcome.failed is not None:
                failures.append(outcome.failed)
                continue
            record_pairs(link, outcome.pairs or set())
            run.notes.append(f"{link}: shared, its zoning extended in place for {step.device}")
        elif ours and outcome.failed is not None:
            if outcome.found != "holds":
                failures.append(outcome.failed)
                # A login refused, or a link the router does not list, left nothing; a command refused
                # part-way may follow others that took effect: that step is undone too.
                if outcome.failed.untouched or outcome.found == "absent":
                    failed.append(link.pk)
                    continue
            else:  # the step's work was done after all (a lost reply, then faults)
                run.notes.append(f"{link}: the router holds it after all ({outcome.failed}); carrying on")
                if outcome.pairs is not None:
                    record_pairs(link, outcome.pairs)
        elif ours and outcome.pairs is not None:
            record_pairs(link, outcome.pairs)
        done.append((step, link, ours))
    if failures:
        cause = failures[0]
        note_other_failures(run, failures)
        Link.objects.filter(pk__in=failed).update(state=Link.State.FAILED, down_at=timezone.now())
        _roll_back(run, done, cause, extended)
    return done


def _roll_back(run: Run, done: list[tuple[PlanStep, Link, bool]], cause: StepFailed,
               extended: list[tuple[PlanStep, Link]]) -> NoReturn:
    """The add failed for good on a router: every router it changed converges to the grants without the
    ones it took (`settle_routers`): what it made comes off, the shared FCIP links it extended shrink
    back; then its grants end (a failed connect holds nothing). Raises OperationFailed with the first
    failure's reason: `rolled_back` when every router was converged."""
    taken = Grant.objects.filter(operation=run.op)
    ours = [link for _step, link, mine in done if mine]
    if not ours and not extended:
        taken.delete()
        raise OperationFailed(f"{cause}; nothing was changed on any router", state=State.FAILED)
    ending = (plan_ids(run.op.plan)["site"], list(taken.values_list("device_id", flat=True)))
    try:
        unsettled = settle_routers(run, [link.router_id for link in ours] + [link.router_id for _s, link in extended],
                                   ending_grants=ending)
    finally:  # the devices stayed held until what was made for them was off; a failed connect holds nothing
        taken.delete()
    left = set(Link.objects.filter(pk__in=[link.pk for link in ours], state__in=Link.ACTIVE_STATES).exclude(
        state=Link.State.UP).values_list("pk", flat=True))
    parts = [f"{link} (rollback failed: {unsettled.of(link) or 'a grant still under way needs it'})"
             for link in ours if link.pk in left]
    unshrunk = []
    for step, link in extended:
        if why := unsettled.of(link):
            # It may zone what it did and this add's pairs: recorded so, the settle chore takes off what
            # no grant needs once the router answers (and a later connect reads the router first).
            record_pairs(link, link_pairs(link) | set(step.spec.all_pairs()))
            unshrunk.append(f"{link} (shared; its zoning could not be shrunk back: {why}; the "
                            "settle chore takes off what no grant needs)")
    if parts or unshrunk:
        message = [f"left configuring for reconcile, which the settle chore runs once the router answers: "
                   f"{'; '.join(parts)}"] if parts else []
        message += [f"left up: {'; '.join(unshrunk)}"] if unshrunk else []
        raise OperationFailed(f"{cause}; {'; '.join(message)}", state=State.FAILED)
    raise OperationFailed(f"{cause} (rolled back)", state=State.ROLLED_BACK)


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
    rows = step_rows(run, steps)

    def new_link(step: PlanStep, device_id: int, zone_id: int) -> Link:
        return Link(site_id=site_id, device_id=device_id, router=routers[step.router_id], port=step.port,
                    zone_id=zone_id, remote_ip=step.remote_ip, state=Link.State.CONFIGURING, operation=op,
                    initiators=step.initiators, pairs=[list(pair) for pair in step.spec.all_pairs()],
                    **applied_values(step))

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
            .filter(endpoints(steps, rows), state__in=Link.ACTIVE_STATES)
            .order_by("pk")  # one lock order for every operation: concurrent ones queue, never deadlock
        }
        result: list[tuple[Link, bool]] = []
        new: list[Link] = []
        for step, (device_id, zone_id) in zip(steps, rows, strict=True):
            link = active.get((step.router_id, step.port, zone_id, step.remote_ip))
            if link is not None and link.state == Link.State.UP:
                pass  # another grant's: shared as it is, or (FCIP) extended in place (`lacks_pairs`)
            elif link is not None:
                if other := busy_elsewhere(link, op):
                    raise InFlight(link, other)
                if refusal := claims_more(link, routers[step.router_id], step):
                    raise OperationFailed(refusal)
                link.state, link.operation = Link.State.CONFIGURING, op
                for name, value in applied_values(step).items():  # what this step sends there now
                    setattr(link, name, value)
                link.save(update_fields=["state", "operation", "updated_at", *applied_values(step)])
            elif link is None:
                link = new_link(step, device_id, zone_id)
                new.append(link)
            link.router = routers[step.router_id]
            result.append((link, link.state != Link.State.UP))
        Link.objects.bulk_create(new)
    return result



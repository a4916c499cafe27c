"""Undoing part of an operation that failed part-way, so that a site keeps whole what it holds.

An add whose step fails for good removes what its earlier steps made (``roll_back_add``); a remove
whose step fails for good puts back what its earlier steps took down (``put_back_removed``): the
site still holds the device, so it keeps its path on every router, and the removal can be asked
again once the router answers (an expiry never edits its grant, so a failed one leaves the lease
due and the lease chore asks again). Each undo gets a time budget of its own (the operation's limit,
at most 60 s): the operation may have spent all of its time, and a router that stays silent must not
take the others' undo with it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from django.utils import timezone

from operations.conf import ops_settings
from operations.converge import converge_link, link_pairs, record_pairs
from operations.desired import desired_for
from operations.errors import OperationFailed, StepFailed
from operations.holders import plan_ids
from operations.journal import Run
from operations.models import Grant, Link, Operation
from operations.planner import PlanStep
from operations.steps import drive, look
from routers.drivers.base import pairs_spec

State = Operation.State


def _undo_budget(run: Run) -> None:
    run.deadline = max(run.deadline, time.monotonic() + min(60.0, ops_settings().total_timeout))


def roll_back_add(run: Run, done: list[tuple[PlanStep, Link, bool]], cause: StepFailed,
                  extended: Sequence[tuple[PlanStep, Link]] = ()) -> None:
    """Undo this add's router steps in reverse; raise OperationFailed with the original reason.

    Shared FCIP links it extended (`extended`, as read before) get their records back and shrink to
    what the grants need without the ones this add took."""
    leftovers, kept_up = [], _shrink_back(run, extended)
    for step, link, ours in reversed(done):
        if not ours:
            continue
        _undo_budget(run)
        try:
            drive(run, link.router, step.spec, "remove")
        except StepFailed as exc:
            found = None if exc.timed_out else look(run, link.router, step.spec)
            if found == "holds":
                # Up on its router: the registry says so rather than a record that lies. The connect
                # failed, so no grant needs it: the settle chore takes it off.
                Link.objects.filter(pk=link.pk).update(state=Link.State.UP, up_at=timezone.now(),
                                                       updated_at=timezone.now())
                kept_up.append(f"{link} (rollback failed: {exc}; it is up until the settle chore takes it off)")
                continue
            if found != "absent":
                leftovers.append(f"{link} (rollback failed: {exc})")
                continue
        Link.objects.filter(pk=link.pk).update(state=Link.State.FAILED, down_at=timezone.now(),
                                               updated_at=timezone.now())
    if leftovers or kept_up:
        # The connect failed, so its hold ends now (a failed connect holds nothing); what may be on a
        # router is taken off by the settle chore once the router answers (`settle_stranded_links`).
        Grant.objects.filter(operation=run.op).delete()
        parts = [f"left configuring for reconcile, which the settle chore runs once the router answers: "
                  f"{'; '.join(leftovers)}"] if leftovers else []
        parts += [f"left up: {'; '.join(kept_up)}"] if kept_up else []
        raise OperationFailed(f"{cause}; {'; '.join(parts)}", state=State.FAILED)
    Grant.objects.filter(operation=run.op).delete()
    if not extended and not any(ours for _step, _link, ours in done):
        raise OperationFailed(f"{cause}; nothing was changed on any router", state=State.FAILED)
    raise OperationFailed(f"{cause} (rolled back)", state=State.ROLLED_BACK)


def _shrink_back(run: Run, extended: Sequence[tuple[PlanStep, Link]]) -> list[str]:
    """Shrink the shared FCIP links this add extended to what the grants need without the ones it
    took, recording what each zones now. One that cannot be shrunk records the pairs it may zone (as
    before, and this add's), marked as last changed by this failed add: a later connect reads the
    router instead of trusting the record, and the settle chore takes off what no grant needs."""
    if not extended:
        return []
    taken = list(Grant.objects.filter(operation=run.op).values_list("device_id", flat=True))
    leaving = (plan_ids(run.op.plan)["site"], taken)
    failures = []
    for step, link in reversed(extended):
        _undo_budget(run)
        try:
            record_pairs(link, converge_link(run, link.router, step.spec.key, leaving=leaving))
        except StepFailed as exc:
            record_pairs(link, link_pairs(link) | set(step.spec.all_pairs()))
            failures.append(f"{link} (shared; its zoning could not be shrunk back: {exc}; the settle chore "
                            "takes off what no grant needs)")
    return failures


def grow_back(run: Run, shrunk: list[tuple[PlanStep, Link]], cause: StepFailed) -> None:
    """A remove that failed: the shared FCIP links it shrank zone again what the grants need (the
    leaving grant is still held), recorded; one that cannot is left to the settle chore."""
    for step, link in reversed(shrunk):
        _undo_budget(run)
        try:
            record_pairs(Link.objects.select_related("device").get(pk=link.pk),
                         converge_link(run, link.router, step.spec.key))
            run.notes.append(f"{link}: its zoning put back, the removal failed on another router ({cause})")
        except StepFailed as exc:
            run.notes.append(f"{link}: its zoning could not be put back after {cause} ({exc}); left for the "
                             "settle chore")


def put_back_removed(run: Run, taken_down: list[tuple[PlanStep, Link]], previous: dict[int, str | None],
                     cause: StepFailed) -> tuple[list[int], list[int]]:
    """Put back, in reverse, the links this remove took off their routers before `cause`. Returns the
    ids of those up again (their records `up`: the router holds them as the spec wants) and of those
    that could not be put back (their records `configuring`, for the settle chore to finish once the
    router answers). A record this remove wrote where there was none is not put back: nothing
    was held there; nor is a link no grant needs any more (`operations.desired`)."""
    restored, lost = [], []
    # Only what a grant still needs goes back (a recovered run cannot tell a link that was up from a
    # marker its crashed run wrote where there was none: both read `removing`).
    wanted = desired_for({link.router_id for _step, link in taken_down}, settled=True)
    for step, link in reversed(taken_down):
        want = wanted.get(link.router_id, {}).get(step.spec.key)
        if previous.get(link.pk) is None or want is None or (want.targets and link.device.wwn not in want.targets):
            continue
        _undo_budget(run)
        # What the grants need there (FCIP: their pairs), as when it was taken down.
        spec = (pairs_spec(*step.spec.key, local_ip=step.local_ip, pairs=want.pairs, vsan=step.spec.vsan)
                if want.pairs else dataclasses.replace(step.spec, initiators=tuple(link.initiators)
                                                       or step.spec.initiators))
        try:
            drive(run, link.router, spec, "add")
        except (StepFailed, ValueError) as exc:
            found = None if getattr(exc, "timed_out", True) else look(run, link.router, spec)
            if found != "holds":
                # The site still holds it: `configuring` (on its way back up), which the settle chore
                # finishes once the router answers.
                run.notes.append(f"{link}: could not be put back after {cause} ({exc}); left configuring for the "
                                 "settle chore")
                Link.objects.filter(pk=link.pk).update(state=Link.State.CONFIGURING, updated_at=timezone.now())
                lost.append(link.pk)
                continue
        Link.objects.filter(pk=link.pk).update(state=Link.State.UP, updated_at=timezone.now())
        if want.pairs:
            record_pairs(link, want.pairs)
        run.notes.append(f"{link}: put back, the removal failed on another router ({cause})")
        restored.append(link.pk)
    return restored, lost

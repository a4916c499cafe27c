"""A plan's steps and the link records they stand for: what the add (operations/adding.py) and the
remove (operations/removing.py) share. A record keeps what its step sent (`applied_values`), and a
removal's step is the record's (`as_applied`), whatever the registry says since.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from django.db.models import Q

from operations.errors import OperationFailed, StepFailed
from operations.holders import plan_ids
from operations.journal import Run
from operations.models import Link
from operations.planner import PlanStep
from operations.steps import router_target
from registry.models import Router

log = logging.getLogger(__name__)


def steps_of(plan: dict[str, Any]) -> list[PlanStep]:
    return [PlanStep(**step) for step in plan["steps"]]


def step_rows(run: Run, steps: list[PlanStep]) -> list[list[int]]:
    """[device pk, zone pk] per step. Zone row ids (not numbers) keep link lookups free of joins."""
    devices = plan_ids(run.op.plan)["devices"]
    return [devices[step.device] for step in steps]


def applied_values(step: PlanStep) -> dict[str, Any]:
    """The values a link record keeps of what its step sends (the applied record, operations.models.Link)."""
    return {"zone_number": step.zone, "local_ip": step.local_ip, "vsan": step.vsan}


def as_applied(step: PlanStep, link: Link | None) -> PlanStep:
    """A removal's step as its link was applied: the zone number, own address and VSAN the record
    keeps, whatever the registry says now (a step with no record, as planned)."""
    if link is None:
        return step
    return dataclasses.replace(step, zone=link.zone_number, local_ip=link.local_ip or step.local_ip,
                               vsan=link.vsan if link.vsan is not None else step.vsan)


def endpoints(steps: list[PlanStep], rows: list[list[int]]) -> Q:
    """The link records of the steps' endpoints (router, port, zone row, remote gateway)."""
    query = Q()
    for step, (_device_id, zone_id) in zip(steps, rows, strict=True):
        query |= Q(router_id=step.router_id, port=step.port, zone_id=zone_id, remote_ip=step.remote_ip)
    return query


@dataclasses.dataclass
class Outcome:
    """What one step of an add or a remove did on its router: the pairs an FCIP link zones now (None: not FCIP, or
    nothing sent), or the failure and what one more look found there."""

    pairs: set[tuple[str, str]] | None = None
    failed: StepFailed | None = None
    found: str | None = None


def internal_failure(router: str, exc: Exception) -> Outcome:
    """A step's unexpected error (a bug, a lost database connection) as its outcome: a failure for good
    that may have changed the router, so that the others' work is rolled back like any failure's,
    instead of their outcomes being lost with the exception."""
    log.exception("router %s: its step failed unexpectedly", router)
    return Outcome(failed=StepFailed(router, f"internal error: {type(exc).__name__}: {exc}", permanent=True))


def note_other_failures(run: Run, failures: list[StepFailed]) -> None:
    """Every failure after the first (which the operation's error gives) goes in its notes."""
    run.notes.extend(f"also failed: {failure}" for failure in failures[1:])


def logins_possible(run: Run, steps: list[PlanStep]) -> None:
    """OperationFailed, before any router is touched, when a step's router password cannot be read:
    its routers are worked at once, and the others must not change theirs for a step that cannot
    even log in (a refused login or a busy router shows only once tried, and is rolled back)."""
    for router_id in dict.fromkeys(step.router_id for step in steps):
        try:
            router_target(run.row(Router, pk=router_id))
        except StepFailed as exc:
            raise OperationFailed(f"{exc}; nothing was sent to any router") from None

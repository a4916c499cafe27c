"""A dry run as the delta to apply: what each step of a plan would change, given the links the
registry records now and the grants that hold them.

`with_delta(plan)` gives each step a `delta`:

- add: `create` (no link at that endpoint: the commands shown are sent); `shared` (an up link another
  grant already uses: nothing is sent, and the step shows no command); `extend` (an up FCIP link that
  lacks some of this grant's initiator-target pairs: its zoning is extended in place, the tunnel stays;
  of the commands shown, only what the switch lacks is sent); `waits` (another operation that is queued
  or running is changing that link: this one waits for it, then decides again); `refused` (an FCIP
  record an ended operation left mid-change stands for other grants' pairs: the settle chore finishes it
  first). A record an ended operation left mid-change is otherwise taken over: `create` or `remove`;
- remove: `remove` (no other grant needs the link: the commands shown are sent; with no record, the
  removal is still sent, in case the router holds one); `kept` (another grant still needs it: nothing is
  sent); `shrink` (an FCIP link another grant keeps: only this grant's pair zones come off); `waits`.

The run decides again, holding each router, from what it lists then (operations/adding.py, removing.py, converge.py);
the journal's notes say what it did. V1 plans are literal: they get no delta.
"""

from __future__ import annotations

from dataclasses import replace

from operations.converge import claims_more, lacks_pairs
from operations.desired import keepers
from operations.models import Link, Operation
from operations.planner import Plan, PlanStep
from registry.models import Device, Site
from routers.drivers import DRIVERS

LIVE = (Operation.State.QUEUED, Operation.State.RUNNING)


def with_delta(plan: Plan) -> Plan:
    if not plan.steps or not plan.ids:
        return plan
    ids = plan.ids
    site_id = ids["site"]
    leaving = [pk for pk, _zone_id in ids["devices"].values()]
    zones = {zone_id for _pk, zone_id in ids["devices"].values()}
    links = {
        (link.router_id, link.port, link.remote_ip): link
        for link in Link.objects.filter(router_id__in={step.router_id for step in plan.steps}, zone_id__in=zones,
                                        state__in=Link.ACTIVE_STATES).select_related("site", "device", "router",
                                                                                     "operation")
        .defer("operation__transcript")
    }
    stays = keepers({step.router_id for step in plan.steps}, site_id, leaving) if plan.action == "remove" else {}
    steps = [_step_delta(plan.action, step, links.get((step.router_id, step.port, step.remote_ip)),
                         stays.get((step.router_id, step.spec.key))) for step in plan.steps]
    return replace(plan, steps=steps)


def _step_delta(action: str, step: PlanStep, link: Link | None, other: tuple[int, int] | None) -> PlanStep:
    zoning = DRIVERS[step.platform].zones_initiators
    if link is None:
        if action == "add":
            return replace(step, delta="create")
        return replace(step, delta="remove", notes=[*step.notes, "no link is recorded here: the removal is sent "
                                                                 "anyway, in case the router holds one"])
    holder = f"{link.site.name}'s hold of {link.device.description}"
    if link.state != Link.State.UP:
        if link.operation is not None and link.operation.state in LIVE:
            return replace(step, delta="waits", notes=[*step.notes, f"operation {link.operation_id} is changing this "
                                                                    f"link ({link.state}); this one waits, then "
                                                                    "decides again"])
        # Left mid-change by an operation that ended: the run takes the record over (or, on FCIP, refuses
        # when it stands for other grants' pairs too, and the settle chore finishes it first).
        left = f"a record left {link.state} by operation {link.operation_id} is taken over"
        if action == "add" and (refusal := claims_more(link, link.router, step)):
            return replace(step, delta="refused", commands=[], notes=[*step.notes, refusal])
        return replace(step, delta="create" if action == "add" else "remove", notes=[*step.notes, left])
    if action == "add":
        if lacks_pairs(link, step):
            return replace(step, delta="extend", notes=[*step.notes, f"up for {holder}: its zoning is extended in "
                                                                     "place; only the zones it lacks are sent"])
        return replace(step, delta="shared", commands=[], notes=[*step.notes, f"already up for {holder}: nothing is "
                                                                              "sent"])
    if other is None:
        return replace(step, delta="remove")
    needs = f"{Site.objects.get(pk=other[0]).name}'s hold of {Device.objects.get(pk=other[1]).description}"
    if zoning:
        return replace(step, delta="shrink", commands=[],
                       notes=[*step.notes, f"kept for {needs}: only the pair zones no grant needs any more come off"])
    return replace(step, delta="kept", commands=[], notes=[*step.notes, f"kept, still needed by {needs}: nothing is "
                                                                        "sent"])

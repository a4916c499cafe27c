"""Requests take effect in the order they were submitted: an add or remove waits for earlier ones of the
same site and devices (or of the zone between the same sites), and for any operation changing one of
its links, bounded by its own time limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import connection

from operations.errors import OperationFailed
from operations.journal import Run
from operations.models import Link, Operation

T = TypeVar("T")
Kind, State = Operation.Kind, Operation.State

# Plain SQL names its tables from the models: each app owns its tables.
OPERATION = Operation._meta.db_table


class InFlight(OperationFailed):
    """A link of the plan is being changed by another operation that is queued or running."""

    def __init__(self, link: Link, operation: Operation) -> None:
        super().__init__(f"link {link} is being changed by operation {operation.pk}")
        self.operation_id = operation.pk
        self.kind = operation.kind
        self.command = (operation.request or {}).get("command")


_IN_FLIGHT_POLL = 0.2  # s between looks at an operation in flight; its own journal row says when it is done


def after_operations_in_flight(run: Run, take: Callable[[], T]) -> T:
    """`take` the plan's link rows, first waiting for any other operation changing one of them.

    An identical request then finds the links as that operation left them (up: reused, and the
    result names the operation joined) and a conflicting one runs after it, instead of failing
    for a state that was reached. The wait is bounded by this operation's own time limit.
    """
    while True:
        try:
            with run.registry():
                return take()
        except EndpointTaken:
            time.sleep(_IN_FLIGHT_POLL)  # the next look finds that operation's record, and waits for it
            continue
        except InFlight as busy:
            if run.waits_for(busy.operation_id, busy.kind, busy.command):
                run.notes.append(f"{busy}: waiting for it to finish")
            if run.remaining() <= _IN_FLIGHT_POLL:
                raise OperationFailed(f"{busy}, and it did not finish within this operation's time limit") from None
            time.sleep(_IN_FLIGHT_POLL)


def busy_elsewhere(link: Link, op: Operation) -> Operation | None:
    other = link.operation
    return other if other is not None and other.pk != op.pk and other.state in (State.QUEUED, State.RUNNING) else None


def after_earlier_requests(run: Run) -> None:
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


class EndpointTaken(Exception):
    """Another operation wrote a record for an endpoint of this plan between our read and our insert."""



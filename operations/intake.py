"""Submit: validate and plan a request once, let the caller authorize that plan, lock, journal, enqueue.

Everything a request can get wrong is found here, before anything is queued: PlanError (answer
400, naming the field) or DeviceBusy (409). The API passes `authorize`, which sees the plan the
operation will run and raises to refuse it (scope checks), so nothing is planned twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.db import connection, transaction

from access.models import Principal
from operations import queue
from operations.holders import lock_devices, lockable_devices, registry_held_still
from operations.models import Operation, OperationKind
from operations.planner import PlanError, find_router, plan_request

Kind = Operation.Kind
RECONCILE_POLICIES = ("registry", "router")


def submit(
    kind: str,
    request: dict[str, Any],
    principal: Principal | None = None,
    *,
    authorize: Callable[[dict[str, Any]], None] | None = None,
    enqueue: bool = True,
) -> Operation:
    """Validate and plan `request` now (PlanError on bad input), journal it, and queue it for a worker.

    `authorize(plan)` is called with the plan the operation will run (a dict, as journaled) before
    anything is locked or written; it raises to refuse (the API checks the principal's scopes).

    add/remove: {"site", one of "device_description" | "wwn" | "zone", optional "duration" (s, add)}
    list: {"router": name or absent for all}
    reconcile: {"repair": bool, "policy": "registry"|"router", optional "router": name, optional "settle": true
               (repair only the records stuck `configuring`/`removing`; the settle chore's request)}
    invoke: {"router", "command": lsifcp|addifcp|rmifcp, "port", "zone", "remote_ip"}
    """
    started = time.perf_counter()
    try:
        kind = Kind(kind)
    except ValueError:
        raise PlanError("kind", f"unknown operation {kind!r}; one of {', '.join(Kind.values)}.") from None
    request = dict(request or {})
    with transaction.atomic():
        # From the plan to the grant's commit, no registry edit starts (one under way has committed): the
        # values the plan is made with cannot change before the grant that holds them is there to see.
        if kind in (Kind.ADD, Kind.INVOKE):
            registry_held_still()
        plan = _planned(kind, request)
        if authorize is not None:
            authorize(plan)
        # Devices are row-locked and checked first, so that the operation row is written once. A V1
        # addifcp holds its device from now too: the registry values its plan was made with (the
        # site's port, its gateway address) cannot be edited while it waits in the queue.
        takes_grant = kind == Kind.ADD or (kind == Kind.INVOKE and plan.get("action") == "add")
        to_lock = lockable_devices(plan) if takes_grant else []
        op = Operation.objects.create(kind=kind, principal=principal, request=request, plan=plan)
        lock_devices(op, plan, to_lock)
        op.registry_ms = (time.perf_counter() - started) * 1000
        job_id = queue.current().enqueue(op.pk) if enqueue else None
        _record_submit(op, job_id)
    return op


def _planned(kind: OperationKind, request: dict[str, Any]) -> dict[str, Any]:
    """The plan of a request, its options checked (PlanError names the field)."""
    plan = plan_request(kind, request)
    if kind == Kind.LIST:
        if request.get("router"):
            find_router(request["router"])
    elif kind == Kind.RECONCILE:
        if request.get("router"):
            find_router(request["router"])
        if request.setdefault("policy", "registry") not in RECONCILE_POLICIES:
            raise PlanError("policy", f"must be one of {', '.join(RECONCILE_POLICIES)}.")
        request["repair"] = bool(request.get("repair", False))
        if request.get("settle"):  # the settle chore's own request: finish stuck records of one router only
            if not (request.get("router") and request["repair"] and request["policy"] == "registry"):
                raise PlanError("settle", "settles one named router, with repair and policy registry.")
            request["settle"] = True
        else:
            request.pop("settle", None)
    return plan


def _record_submit(op: Operation, job_id: int | None) -> None:
    """Store the submit's own time (and the queue's job id) on the row just written.

    Plain SQL: this statement sits on every operation's path and an ORM update costs several times
    the round trip on small machines (see `python -m bench ops`).
    """
    op.job_id = job_id
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Operation._meta.db_table} SET registry_ms = %s, job_id = %s WHERE id = %s",
            [op.registry_ms, job_id, op.pk],
        )

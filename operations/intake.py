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

from operations import queue
from operations.conf import ops_settings
from operations.desired import desired_for, holds_text
from operations.holders import lock_devices, lockable_devices
from operations.models import Operation
from operations.planner import (
    Plan,
    PlanError,
    find_router,
    link_step,
    plan_connect,
    plan_disconnect,
    site_initiators,
)
from registry.models import Device, Principal, Site
from routers.drivers import DRIVERS
from routers.drivers.base import LinkSpec

Kind = Operation.Kind
INVOKE_COMMANDS = ("lsifcp", "addifcp", "rmifcp")
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
    plan: dict[str, Any] = {}
    if kind in (Kind.ADD, Kind.REMOVE, Kind.EXPIRE):
        planned = _plan_for(kind, request)
        plan = {**planned.as_dict(), "ids": planned.ids}
    elif kind == Kind.LIST:
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
    elif kind == Kind.INVOKE:
        plan = _plan_invoke(request)
    if authorize is not None:
        authorize(plan)
    with transaction.atomic():
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


def _plan_invoke(request: dict[str, Any]) -> dict[str, Any]:
    """The V1 interface: one raw iFCP command on one router. Adds and removes keep the registry in step,
    so the link's sites and device are inferred from the zone and the remote gateway's address."""
    router = find_router(request.get("router", ""))
    command = request.get("command")
    if command not in INVOKE_COMMANDS:
        raise PlanError("command", f"must be one of {', '.join(INVOKE_COMMANDS)}.")
    if command == "lsifcp":
        return {}
    zone, port = request.get("zone"), request.get("port")
    if zone is None or port is None:
        raise PlanError("zone" if zone is None else "port", f"Required for {command}.")
    try:
        spec_zone = int(zone)
        spec = LinkSpec(port=int(port), zone=spec_zone, remote_ip=str(request.get("remote_ip")))
    except (TypeError, ValueError) as exc:
        field_name = str(exc).split(":")[0] if ":" in str(exc) else "port"
        raise PlanError(field_name, str(exc)) from None
    attached = router.site.router_port
    if spec.port != attached:
        # Disconnects plan from the site's port: a link on any other would stay up with no holder.
        raise PlanError("port", f"{router.site.name} is attached to {router.name}'s FC port {attached}; a link on "
                                f"port {spec.port} is not one the registry can account for.")
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
    if action == "remove":
        _refuse_removing_what_a_connect_needs(router, spec)
    initiators = []
    if DRIVERS[router.platform].zones_initiators:
        initiators = site_initiators(requester, None)
        if action == "add" and not initiators:
            raise PlanError("hosts", f"site {requester.name} has no initiators registered; an FCIP link zones them "
                                     f"with the device (register its hosts at /api/hosts/).")
    step = link_step(1, action, router, site=router.site, port=spec.port, zone_id=spec.zone,
                     remote_ip=spec.remote_ip, device=device, initiators=initiators)
    plan = Plan(action=action, site=requester.name, zone=spec.zone, devices=[device.description], steps=[step])
    return {**plan.as_dict(), "raw": True}


def _refuse_removing_what_a_connect_needs(router, spec: LinkSpec) -> None:
    """V1 commands manage the links V1 made: an rmifcp of a link a connect's grant needs would leave
    that site holding the device with half a path (its end is a disconnect)."""
    want = desired_for([router.pk]).get(router.pk, {}).get(spec.key)
    if want is not None and not want.literal:
        raise PlanError("command", f"{router.name} port {spec.port} zone {spec.zone} -> {spec.remote_ip} serves "
                                   f"{holds_text(want)} through a connect; rmifcp removes only links V1 commands "
                                   "made. End the connect with a disconnect instead.")


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

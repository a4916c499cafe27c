"""The planner answers the seed's questions: "how do I connect this site to that device (or zone)?"

A plan names, in order, which routers to configure, on which port, for which zone, towards which
remote gateway, and the exact command lines each router will receive. The owning (target) site's
router is configured first so that the requesting site's link comes up towards a ready gateway;
a disconnect runs the same steps in reverse.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from django.db.models import Q

from operations.conf import ops_settings
from operations.desired import desired_for, holds_text, site_routers
from operations.models import Link, OperationKind
from registry.lookups import (
    QueryError,
    find_device,
    find_router,
    find_site,
    find_zone,
    pick_site,
    site_initiators,
    site_text,
    sites_matching,
    zone_number,
)
from registry.models import Device, Router, Site, Zone
from routers.drivers import DRIVERS
from routers.drivers.base import LinkSpec

__all__ = ["PlanError", "Plan", "PlanStep", "find_router", "find_site", "find_zone", "plan_connect",
           "plan_disconnect", "plan_target", "plan_request", "link_step", "site_initiators", "router_vsan"]


# The registry's refusal is the planner's: one class, so callers catch one.
PlanError = QueryError


@dataclass(frozen=True)
class PlanStep:
    order: int
    action: str  # "add" | "remove"
    router: str
    router_id: int
    platform: str
    site: str
    port: int
    zone: int
    remote_ip: str
    local_ip: str
    wwn: str | None
    device: str
    commands: list[str] = field(default_factory=list)
    # FCIP steps: the requesting site's initiators zoned with the device `wwn` (empty on iFCP steps,
    # whose gateway zones by itself); Cisco MDS steps: the router's VSAN.
    initiators: list[str] = field(default_factory=list)
    vsan: int | None = None
    notes: list[str] = field(default_factory=list)
    # FCIP steps of a zone connect: the [initiator, target] pairs of the zone's other devices behind
    # the same link (one link serves them all; its zones pair each initiator with each device).
    pairs: list[list[str]] = field(default_factory=list)
    # Dry runs (operations.delta): what the step changes given the links recorded now; "" elsewhere.
    delta: str = ""

    @property
    def spec(self) -> LinkSpec:
        return LinkSpec(port=self.port, zone=self.zone, remote_ip=self.remote_ip, local_ip=self.local_ip, wwn=self.wwn,
                        initiators=tuple(self.initiators), vsan=self.vsan or 1,
                        pairs=tuple((initiator, target) for initiator, target in self.pairs))


@dataclass(frozen=True)
class Plan:
    action: str
    site: str
    zone: int
    devices: list[str]
    steps: list[PlanStep]
    # Row ids of what the names above resolved to, so that executing the plan need not look them up
    # again: {"site": pk, "devices": {description: [pk, zone pk]}}.
    ids: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The plan as users see it (API, CLI, `manage.py plan`): without the row ids."""
        public = asdict(self)
        del public["ids"]
        for step in public["steps"]:
            if not step["delta"]:  # only dry runs have one; journaled plans keep the shape they had
                del step["delta"]
        return public

    def describe(self) -> str:
        lines = [f"Plan: {self.action} site {self.site} -> zone {self.zone} ({', '.join(self.devices)})"]
        for step in self.steps:
            lines.append(
                f"  {step.order}. {step.action} on router {step.router} ({step.platform}, site {step.site}): "
                f"port {step.port}, zone {step.zone}, remote gateway {step.remote_ip}"
                + (f" [{step.delta}]" if step.delta else "")
            )
            if step.initiators:
                lines.append(f"       zone members: initiators {', '.join(step.initiators)}; target {step.wwn}")
            if step.pairs:
                lines.append(f"       further targets: {', '.join(sorted({target for _i, target in step.pairs}))}")
            lines.extend(f"       {command}" for command in step.commands)
            lines.extend(f"       note: {note}" for note in step.notes)
        return "\n".join(lines)


# --- requests, as the engine journals them -------------------------------------------------------

# What a client may call an action, and the action the engine plans for it.
ACTIONS = {"connect": "add", "add": "add", "disconnect": "remove", "remove": "remove"}
INVOKE_COMMANDS = ("lsifcp", "addifcp", "rmifcp")


def plan_target(action: str, target: dict[str, Any]) -> Plan:
    """The plan of a connect or disconnect (`action` by any name in ACTIONS) of `target`: a site and
    one of device_description, wwn or zone (and, for a connect, optionally hosts)."""
    if action not in ACTIONS:
        raise PlanError("action", f"must be one of {', '.join(ACTIONS)}.")
    selectors = {key: target.get(key) for key in ("device_description", "wwn", "zone")}
    if ACTIONS[action] == "add":
        return plan_connect(site=target["site"], hosts=target.get("hosts"), **selectors)
    return plan_disconnect(site=target["site"], **selectors)


def plan_request(kind: str, request: dict[str, Any]) -> dict[str, Any]:
    """The plan an operation of `kind` will run for `request`, as journaled (a dict; empty for the
    kinds that plan at run time: list and reconcile). PlanError names the field at fault."""
    if kind in (OperationKind.ADD, OperationKind.REMOVE, OperationKind.EXPIRE):
        planned = _plan_link(kind, request)
        return {**planned.as_dict(), "ids": planned.ids}
    if kind == OperationKind.INVOKE:
        return _plan_invoke(request)
    return {}


def _plan_link(kind: str, request: dict[str, Any]) -> Plan:
    args = {
        name: request[name] for name in ("site", "device_description", "wwn", "zone") if request.get(name) is not None
    }
    if "site" not in args:
        raise PlanError("site", "a site is required (short name, display name or MSAN id).")
    hosts = request.get("hosts")
    if kind == OperationKind.ADD and hosts is not None:
        if not isinstance(hosts, list) or not hosts or not all(isinstance(name, str) for name in hosts):
            raise PlanError("hosts", "a non-empty list of host names of the requesting site.")
        args["hosts"] = hosts
    if kind == OperationKind.ADD and request.get("duration") is not None:
        duration = request["duration"]
        limit = ops_settings().max_lease
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not 0 < duration <= limit:
            raise PlanError("duration", f"a lease is a number of seconds, more than 0 and at most {limit:.0f}.")
    return (plan_connect if kind == OperationKind.ADD else plan_disconnect)(**args)


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


# --- planning ------------------------------------------------------------------------------------


def plan_connect(
    *,
    site: str | int,
    device_description: str | None = None,
    wwn: str | None = None,
    zone: str | int | None = None,
    hosts: list[str] | None = None,
) -> Plan:
    """Plan the links that let `site` reach a device (by description or WWN) or a whole zone.

    FCIP steps zone the site's initiators (of the named `hosts` only, when given) with the device.
    """
    return _plan("add", site, device_description, wwn, zone, hosts)


def plan_disconnect(
    *, site: str | int, device_description: str | None = None, wwn: str | None = None, zone: str | int | None = None
) -> Plan:
    """The steps of `plan_connect`, reversed, as removals (of whole links: all their zones)."""
    return _plan("remove", site, device_description, wwn, zone, None)


def _plan(action: str, site_ref, description, wwn, zone_ref, hosts: list[str] | None) -> Plan:
    given = [name for name, value in (("device_description", description), ("wwn", wwn), ("zone", zone_ref)) if value]
    if len(given) != 1:
        raise PlanError("device", "give exactly one of device description, WWN or zone.")
    text = site_text(site_ref)
    try:
        if zone_ref is not None and zone_ref != "":
            found = list(
                Device.objects.select_related("zone").filter(zone__zone_id=zone_number(zone_ref)).order_by("description")
            )
        else:
            found = [find_device(description=description, wwn=wwn, related=("zone",))]
    except PlanError:
        find_site(text)  # both wrong: report the site, the first thing asked
        raise
    # Three queries per question: the device(s), then the requesting site together with the owners,
    # then their routers; a fourth for the initiators when a router zones them (FCIP).
    sites = sites_matching(text, {device.owner_site_id for device in found})
    requester = pick_site(text, sites)
    site_by_id = {site.pk: site for site in sites}
    if zone_ref is not None and zone_ref != "":
        zone = found[0].zone if found else find_zone(zone_ref)
        devices = [d for d in found if d.owner_site_id != requester.pk]
        if not devices:
            raise PlanError("zone", f"zone {zone.zone_id} has no device owned by a site other than {requester.name}.")
    else:
        device = found[0]
        if device.owner_site_id == requester.pk:
            raise PlanError(
                given[0], f"{device.description} belongs to {requester.name} itself; no SAN extension is needed."
            )
        zone, devices = device.zone, [device]

    steps: list[tuple] = []
    routers = site_routers([requester, *{d.owner_site_id: site_by_id[d.owner_site_id] for d in devices}.values()])
    requester_router = routers[requester.pk]
    seen_owners: set[int] = set()
    for device in devices:
        owner = site_by_id[device.owner_site_id]
        if owner.pk in seen_owners:
            continue
        seen_owners.add(owner.pk)
        owner_router = routers[owner.pk]
        if action == "add":
            _refuse_mixed_protocols(owner_router, requester_router)
        # Target side first: its gateway must accept the session before the requester opens it.
        steps.append((owner_router, owner, requester, device))
        steps.append((requester_router, requester, owner, device))
    if action == "remove":
        steps.reverse()
    steps = _dedupe(steps)
    zoning = [router for router, *_ in steps if _zones_initiators(router.platform)]
    initiators: list[str] = []
    if hosts is not None or (zoning and action == "add"):
        initiators = site_initiators(requester, hosts)
    if zoning and action == "add" and not initiators:
        chosen = f"hosts {', '.join(hosts)} of " if hosts else ""
        raise PlanError(
            "hosts",
            f"{chosen}site {requester.name} have no initiators registered; an FCIP link zones the requesting site's "
            f"initiator ports with the device, and router {zoning[0].name} ({zoning[0].platform}) is FCIP. Register "
            f"the site's hosts and their initiator WWNs (/api/hosts/) first.",
        )
    if zoning and action == "add":
        _refuse_fcip_port_peering_elsewhere(steps)
    configured = _configured_initiators(steps, zone) if zoning and action == "remove" else {}
    plan_steps = []
    for order, (router, local, remote, device) in enumerate(steps, start=1):
        members, pairs = [], []
        if _zones_initiators(router.platform):
            members = configured.get((router.pk, local.router_port, remote.data_ip), initiators)
            # One FCIP link serves every device of the zone its owner has: each is zoned with the initiators.
            pairs = [[initiator, other.wwn] for other in devices
                     if other.owner_site_id == device.owner_site_id and other.pk != device.pk
                     for initiator in members]
        plan_steps.append(_step(order, action, router, local, remote, zone.zone_id, device, members, pairs))
    return Plan(
        action=action,
        site=requester.name,
        zone=zone.zone_id,
        devices=[d.description for d in devices],
        steps=plan_steps,
        ids={"site": requester.pk, "devices": {d.description: [d.pk, d.zone_id] for d in devices}},
    )


def _protocol(router: Router) -> str:
    return "FCIP" if _zones_initiators(router.platform) else "iFCP"


def _refuse_mixed_protocols(owner_router: Router, requester_router: Router) -> None:
    """Both ends of a link speak one protocol: an iFCP session towards an FCIP switch, or an FCIP
    tunnel towards an iFCP gateway, would be configured and never carry a frame. (A disconnect is
    still planned, so that links made before this rule can be taken down.)"""
    ends = sorted({_protocol(owner_router), _protocol(requester_router)})
    if len(ends) == 1:
        return
    raise PlanError(
        "site",
        f"site {requester_router.site.name}'s router {requester_router.name} ({requester_router.platform}, "
        f"{_protocol(requester_router)}) and site {owner_router.site.name}'s router {owner_router.name} "
        f"({owner_router.platform}, {_protocol(owner_router)}) speak different protocols: a link joins an iFCP "
        "gateway to an iFCP gateway, or an FCIP switch to an FCIP switch.",
    )


def _refuse_fcip_port_peering_elsewhere(steps: list[tuple]) -> None:
    """An FCIP interface or tunnel peers with one gateway: a step on a port whose active link goes to
    another gateway is refused (the switch would refuse it, part-way through the operation). One query
    for every step (a zone's connect has a step per owner)."""
    fcip = [(router, local, remote) for router, local, remote, _device in steps if _zones_initiators(router.platform)]
    if not fcip:
        return
    carried: dict[tuple[int, int], list[Link]] = {}
    for link in (Link.active().filter(router__in={router.pk for router, _local, _remote in fcip},
                                      port__in={local.router_port for _router, local, _remote in fcip})
                 .select_related("site", "device").order_by("pk")):
        carried.setdefault((link.router_id, link.port), []).append(link)
    for router, local, remote in fcip:
        other = next((link for link in carried.get((router.pk, local.router_port), [])
                      if link.remote_ip != remote.data_ip), None)
        if other is not None:
            raise PlanError(
                "site",
                f"router {router.name}'s port {local.router_port} (site {local.name}'s router_port) already carries a "
                f"link to {other.remote_ip} ({other.site.name}'s hold of {other.device.description}), and an FCIP "
                f"interface or tunnel peers with one gateway: {remote.name} cannot be reached through it. Disconnect "
                "that link first.",
            )


def _zones_initiators(platform: str) -> bool:
    return DRIVERS[platform].zones_initiators


def _configured_initiators(steps: list[tuple], zone: Zone) -> dict[tuple[int, int, str], list[str]]:
    """For a disconnect: the initiators each active link was configured with (its snapshot)."""
    endpoints = Q()
    for router, local, remote, _device in steps:
        endpoints |= Q(router_id=router.pk, port=local.router_port, remote_ip=remote.data_ip)
    rows = Link.objects.filter(endpoints, zone_id=zone.pk, state__in=Link.ACTIVE_STATES).values_list(
        "router_id", "port", "remote_ip", "initiators"
    )
    return {(router_id, port, remote_ip): list(initiators) for router_id, port, remote_ip, initiators in rows}


def _dedupe(steps: list[tuple]) -> list[tuple]:
    seen, unique = set(), []
    for router, local, remote, device in steps:
        key = (router.pk, local.router_port, remote.data_ip)
        if key not in seen:
            seen.add(key)
            unique.append((router, local, remote, device))
    return unique


def _step(order: int, action: str, router: Router, local: Site, remote: Site, zone_id: int, device: Device,
          initiators: list[str], pairs: list[list[str]]) -> PlanStep:
    return link_step(order, action, router, site=local, port=local.router_port, zone_id=zone_id,
                     remote_ip=remote.data_ip, device=device, initiators=initiators, pairs=pairs)


def link_step(order: int, action: str, router: Router, *, site: Site, port: int, zone_id: int, remote_ip: str,
              device: Device, initiators: list[str], pairs: list[list[str]] | None = None) -> PlanStep:
    """One router's step of a link (`site` is the router's site), with the exact commands and notes;
    PlanError naming the router if its platform cannot take the link (a VE port range, say)."""
    step = PlanStep(
        order=order,
        action=action,
        router=router.name,
        router_id=router.pk,
        platform=router.platform,
        site=site.name,
        port=port,
        zone=zone_id,
        remote_ip=remote_ip,
        local_ip=site.data_ip,
        wwn=device.wwn,
        device=device.description,
        initiators=initiators,
        vsan=router_vsan(router),
        pairs=pairs or [],
    )
    try:
        commands = render_commands(router.platform, action, step.spec)
        notes = render_notes(router.platform, action, step.spec)
    except ValueError as exc:
        # The link parameters come from the registry; a platform rule they break (a VE port range,
        # say) is a registry entry to fix, reported against the router that cannot take it.
        raise PlanError("router", f"router {router.name} ({router.platform}) cannot take this link: {exc}") from None
    return PlanStep(**{**asdict(step), "commands": commands, "notes": notes})


def router_vsan(router: Router) -> int | None:
    """The VSAN a step's zoning goes to: the router's, where its driver zones within one; else none."""
    return router.vsan if DRIVERS[router.platform].zones_in_vsan else None


def render_commands(platform: str, action: str, spec: LinkSpec) -> list[str]:
    """The exact command lines the platform's driver would send, without connecting."""
    driver = DRIVERS[platform]
    return driver.render_add(spec) if action == "add" else driver.render_remove(spec)


def render_notes(platform: str, action: str, spec: LinkSpec) -> list[str]:
    return DRIVERS[platform].render_notes(action, spec)

"""The planner answers the seed's questions: "how do I connect this site to that device (or zone)?"

A plan names, in order, which routers to configure, on which port, for which zone, towards which
remote gateway, and the exact command lines each router will receive. The owning (target) site's
router is configured first so that the requesting site's link comes up towards a ready gateway;
a disconnect runs the same steps in reverse.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.db.models.functions import Lower

from operations.models import Link
from registry.models import Device, Host, Router, Site, Zone
from registry.validators import normalize_wwn
from routers.drivers.base import LinkSpec


class PlanError(ValueError):
    """A question the registry cannot answer. `field` names the input at fault."""

    def __init__(self, field: str, message: str, suggestions: list[str] | None = None) -> None:
        self.field = field
        self.message = message
        self.suggestions = suggestions or []
        text = f"{field}: {message}"
        if self.suggestions:
            text += f" Did you mean: {', '.join(self.suggestions)}?"
        super().__init__(text)

    def as_dict(self) -> dict:
        return {"field": self.field, "message": self.message, "suggestions": self.suggestions}


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


# --- lookups -------------------------------------------------------------------------------------


def find_site(value: str | int) -> Site:
    """A site named by short name, display name or MSAN id (in that order of preference)."""
    text = _site_text(value)
    return _pick_site(text, _sites_matching(text))


def _site_text(value: str | int) -> str:
    text = str(value).strip()
    if not text:
        raise PlanError("site", "a site is required (short name, display name or MSAN id).")
    return text


def _sites_matching(text: str, also: set[int] | frozenset[int] = frozenset()) -> list[Site]:
    """The sites `text` may name (at most one per way of naming one), and the sites whose ids are in `also`."""
    match = Q(name=text) | Q(lower_display_name=text.lower())
    if text.isdigit():
        match |= Q(msan_id=int(text))
    if also:
        match |= Q(pk__in=also)
    return list(Site.objects.annotate(lower_display_name=Lower("display_name")).filter(match)[: 3 + len(also)])


def _pick_site(text: str, candidates: list[Site]) -> Site:
    for matches in (
        lambda s: s.name == text,
        lambda s: text.isdigit() and s.msan_id == int(text),
        lambda s: s.display_name.lower() == text.lower(),
    ):
        site = next((s for s in candidates if matches(s)), None)
        if site is not None:
            return site
    names = [name for pair in Site.objects.values_list("name", "display_name") for name in pair]
    raise PlanError("site", f"no site is named {text!r}.", _close(text, names))


def find_device(
    *, description: str | None = None, wwn: str | None = None, related: tuple[str, ...] = ("zone", "owner_site")
) -> Device:
    """A device by description (any letter case) or WWN (any notation), with `related` rows joined in."""
    devices = Device.objects.select_related(*related)
    if description is not None:
        text = description.strip()
        device: Device | None = devices.annotate(lower=Lower("description")).filter(lower=text.lower()).first()
        if device is None:
            names = list(Device.objects.values_list("description", flat=True))
            raise PlanError("device_description", f"no device is described as {text!r}.", _close(text, names))
        return device
    if wwn is not None:
        try:
            canonical = normalize_wwn(wwn)
        except ValidationError as exc:
            raise PlanError("wwn", exc.messages[0]) from None
        device = devices.filter(wwn=canonical).first()
        if device is None:
            wwns = list(Device.objects.values_list("wwn", flat=True))
            raise PlanError("wwn", f"no device has WWN {canonical}.", _close(canonical, wwns))
        return device
    raise PlanError("device", "name the device by description or WWN.")


def _zone_number(value: str | int) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise PlanError("zone", f"a zone is a number, got {value!r}.") from None


def find_zone(value: str | int) -> Zone:
    zone_id = _zone_number(value)
    zone = Zone.objects.filter(zone_id=zone_id).first()
    if zone is None:
        known = [str(z) for z in Zone.objects.values_list("zone_id", flat=True)]
        raise PlanError("zone", f"zone {zone_id} does not exist.", _close(str(zone_id), known))
    return zone


def find_router(name: str) -> Router:
    """A router by its name, with its site joined in; PlanError with the closest names otherwise."""
    text = str(name)
    router = Router.objects.select_related("site").filter(name=text).first()
    if router is None:
        known = list(Router.objects.values_list("name", flat=True))
        raise PlanError("router", f"no router is named {name!r}.", _close(text, known))
    return router


def _close(text: str, candidates: list[str]) -> list[str]:
    lowered = {candidate.lower(): candidate for candidate in candidates}
    return [lowered[match] for match in difflib.get_close_matches(text.lower(), list(lowered), n=3, cutoff=0.5)]


def site_routers(sites: list[Site]) -> dict[int, Router]:
    """Each site's router (the first by name when a site has several), in one query."""
    routers: dict[int, Router] = {}
    for router in Router.objects.filter(site_id__in=[site.pk for site in sites]).order_by("-name"):
        routers[router.site_id] = router
    for site in sites:
        if site.pk not in routers:
            raise PlanError("site", f"site {site.name} has no router registered.")
    return routers


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
    text = _site_text(site_ref)
    try:
        if zone_ref is not None and zone_ref != "":
            found = list(
                Device.objects.select_related("zone").filter(zone__zone_id=_zone_number(zone_ref)).order_by("description")
            )
        else:
            found = [find_device(description=description, wwn=wwn, related=("zone",))]
    except PlanError:
        find_site(text)  # both wrong: report the site, the first thing asked
        raise
    # Three queries per question: the device(s), then the requesting site together with the owners,
    # then their routers; a fourth for the initiators when a router zones them (FCIP).
    sites = _sites_matching(text, {device.owner_site_id for device in found})
    requester = _pick_site(text, sites)
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
    another gateway is refused (the switch would refuse it, part-way through the operation)."""
    for router, local, remote, _device in steps:
        if not _zones_initiators(router.platform):
            continue
        other = (Link.active().filter(router=router, port=local.router_port).exclude(remote_ip=remote.data_ip)
                 .select_related("site", "device").first())
        if other is not None:
            raise PlanError(
                "site",
                f"router {router.name}'s port {local.router_port} (site {local.name}'s router_port) already carries a "
                f"link to {other.remote_ip} ({other.site.name}'s hold of {other.device.description}), and an FCIP "
                f"interface or tunnel peers with one gateway: {remote.name} cannot be reached through it. Disconnect "
                "that link first.",
            )


def _zones_initiators(platform: str) -> bool:
    from routers.drivers import DRIVERS

    return DRIVERS[platform].zones_initiators


def site_initiators(site: Site, hosts: list[str] | None) -> list[str]:
    """The site's initiator WWNs, of the named hosts only when `hosts` is given (one query)."""
    rows = list(Host.objects.filter(site_id=site.pk).values_list("name", "initiators__wwn"))  # a LEFT JOIN
    if hosts is not None:
        known = sorted({name for name, _wwn in rows})
        for name in hosts:
            if name not in known:
                raise PlanError("hosts", f"site {site.name} has no host named {name!r}.", _close(name, known))
        rows = [(name, wwn) for name, wwn in rows if name in hosts]
    return sorted({wwn for _name, wwn in rows if wwn})


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
    """The VSAN a step's zoning goes to: Cisco MDS routers have one; the other platforms none."""
    return router.vsan if router.platform == Router.Platform.CISCO_MDS else None


def render_commands(platform: str, action: str, spec: LinkSpec) -> list[str]:
    """The exact command lines the platform's driver would send, without connecting."""
    from routers.drivers import DRIVERS

    driver = DRIVERS[platform]
    return driver.render_add(spec) if action == "add" else driver.render_remove(spec)


def render_notes(platform: str, action: str, spec: LinkSpec) -> list[str]:
    from routers.drivers import DRIVERS

    return DRIVERS[platform].render_notes(action, spec)

"""The soak's cast: three sites with a simulated iFCP router each, three zones and five devices, made with
ids nobody uses and removed with every row they left, the journal included, so a soak may run on a
database that holds other data."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Q

from operations.models import DeviceLock, Link, Operation
from operations.pool import pool
from registry.models import Device, Initiator, Router, Site, Zone
from routers.sim.server import SimRouter

USERNAME = "admin"
PLATFORMS = ("mcdata_eclipse", "nishan_ips3000", "nishan_ips3000")
# (owner site index, zone index, shareable): D1 and D2 share a zone and an owner; D5 is in their zone
# but owned by the second site, so a holds b's D5 and b holds a's D1 or D2 through the same links.
DEVICES = ((0, 0, True), (0, 0, False), (1, 1, True), (2, 2, False), (1, 0, False))


@dataclass
class Cast:
    """The soak's registry rows and the simulators behind its routers."""

    prefix: str
    secrets_dir: Path
    sites: list[Site] = field(default_factory=list)
    routers: list[Router] = field(default_factory=list)
    sims: list[SimRouter] = field(default_factory=list)
    zones: list[Zone] = field(default_factory=list)
    devices: list[Device] = field(default_factory=list)

    def sim_of(self, router: Router) -> SimRouter:
        return self.sims[[r.pk for r in self.routers].index(router.pk)]


def build_cast(prefix: str, secrets_dir: Path, seed: int) -> Cast:
    """Three sites with a simulated iFCP router each, three zones, five devices; unused ids only."""
    cast = Cast(prefix, secrets_dir)
    used_zones = set(Zone.objects.values_list("zone_id", flat=True))
    used_ips = set(Site.objects.values_list("data_ip", flat=True))
    next_msan = (max(Site.objects.values_list("msan_id", flat=True), default=0) or 0) + 1
    zone_ids = [z for z in range(4094, 0, -1) if z not in used_zones][:3]
    data_ips = [ip for ip in (f"127.77.{n // 250}.{n % 250 + 1}" for n in range(5000)) if ip not in used_ips][:3]
    for index, zone_id in enumerate(zone_ids):
        cast.zones.append(Zone.objects.create(zone_id=zone_id, description=f"{prefix} zone {index + 1}"))
    for index, platform in enumerate(PLATFORMS):
        letter = "abc"[index]
        password = secrets.token_urlsafe(12)
        sim = SimRouter(platform, telnet=("127.0.0.1", 0), scale=0.0, username=USERNAME, password=password,
                        seed=seed + index)
        cast.sims.append(sim)
        host, port = sim.start()["telnet"]
        site = Site.objects.create(
            name=f"{prefix}-{letter}", display_name=f"{prefix.upper()}-{letter.upper()}", msan_id=next_msan + index,
            management_ip=host, data_ip=data_ips[index], router_port=5 + index,
        )
        name = f"{prefix}-{letter}-rtr"
        (secrets_dir / name).write_text(password + "\n")
        cast.routers.append(Router.objects.create(
            site=site, name=name, platform=platform, transport="telnet", host=host, port=port, username=USERNAME,
            secret_ref=f"file:{name}", connect_timeout=5.0, command_timeout=2.0,
        ))
        cast.sites.append(site)
    tag = prefix.rsplit("-", 1)[-1]
    for index, (owner, zone, shareable) in enumerate(DEVICES, start=1):
        cast.devices.append(Device.objects.create(
            device_id=f"{prefix}-d{index}", description=f"{prefix.upper()}-D{index}",
            wwn=f"2f:5a:{tag[0:2]}:{tag[2:4]}:{tag[4:6]}:00:00:{index:02x}", zone=cast.zones[zone],
            owner_site=cast.sites[owner], shareable=shareable,
        ))
    return cast


def unused_prefix() -> str:
    """`soak-<6 hex digits>`, with no site or device of that name nor device WWN in the registry."""
    while True:
        tag = secrets.token_hex(3)
        prefix = f"soak-{tag}"
        wwn = f"2f:5a:{tag[0:2]}:{tag[2:4]}:{tag[4:6]}:00:00:"
        if not (Site.objects.filter(name__startswith=prefix).exists()
                or Device.objects.filter(Q(device_id__startswith=prefix) | Q(wwn__startswith=wwn)).exists()
                or Initiator.objects.filter(wwn__startswith=wwn).exists()):
            return prefix


def stop_simulators(cast: Cast) -> None:
    pool.close_all()
    for sim in cast.sims:
        sim.stop()


def remove_cast(cast: Cast, first_operation: int) -> None:
    """Stop the simulators and delete every row of the cast, its journal included; nothing else."""
    stop_simulators(cast)
    names = [site.name for site in cast.sites]
    routers = [router.name for router in cast.routers]
    Link.objects.filter(Q(router__in=cast.routers) | Q(site__in=cast.sites)).delete()
    DeviceLock.objects.filter(Q(device__in=cast.devices) | Q(site__in=cast.sites)).delete()
    Operation.objects.filter(pk__gte=first_operation).filter(
        Q(request__site__in=names) | Q(request__router__in=routers) | Q(plan__site__in=names)
    ).delete()
    Device.objects.filter(pk__in=[d.pk for d in cast.devices]).delete()
    Router.objects.filter(pk__in=[r.pk for r in cast.routers]).delete()
    Site.objects.filter(pk__in=[s.pk for s in cast.sites]).delete()
    Zone.objects.filter(pk__in=[z.pk for z in cast.zones]).delete()

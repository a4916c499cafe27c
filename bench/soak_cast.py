"""The soak's cast, made with ids nobody uses and removed with every row it left, the journal included,
so a soak may run on a database that holds other data:

- three iFCP sites (McData Eclipse, Nishan IPS 3000 twice, over telnet), three zones, five devices;
- two FCIP sites (Brocade FOS and Cisco MDS, over SSH, with a trusted host key), each with two hosts
  whose initiators the FCIP links zone, and one zone of three devices that both sites own, so the two
  hold each other's devices through one shared link whose zoning grows and shrinks;
- the FCIP switches carry production zoning of other hosts from the start, and an administrator of
  their own (a stock netmiko session, simulators.admin) who changes it and holds the fabric's zoning
  while flexzone works. The MDS runs vsan 1 in enhanced zoning mode for half the seeds."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Q

from operations.models import Grant, Link, Operation
from operations.pool import pool
from registry.models import Device, Host, Initiator, Router, Site, Zone
from routers import hostkeys
from simulators.admin import FabricAdmin
from simulators.server import SimRouter

USERNAME = "admin"  # flexzone's account on every simulator
ADMIN = "storage-admin"  # the FCIP switches' other admin: an account of their own, as a real fabric has
# (platform, transport, router port): sites a, b, c are iFCP; d and e are FCIP (the port is the FOS VE
# port / MDS fcip interface), and only ever connect to each other.
PLATFORMS = (("mcdata_eclipse", "telnet", 5), ("nishan_ips3000", "telnet", 6), ("nishan_ips3000", "telnet", 7),
             ("brocade_fos", "ssh", 24), ("cisco_mds", "ssh", 25))
FCIP_SITES = (3, 4)
# (owner site index, zone index, shareable): D1 and D2 share a zone and an owner; D5 is in their zone
# but owned by the second site, so a holds b's D5 and b holds a's D1 or D2 through the same links.
# D6-D8 are the FCIP zone's: d owns D6, e owns D7 and D8, so d and e share one link both ways.
DEVICES = ((0, 0, True), (0, 0, False), (1, 1, True), (2, 2, False), (1, 0, False),
           (3, 3, True), (4, 3, True), (4, 3, False))
HOSTS_PER_FCIP_SITE = 2


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
    hosts: dict[int, list[str]] = field(default_factory=dict)  # FCIP site index -> its hosts' names
    admins: dict[int, FabricAdmin] = field(default_factory=dict)  # FCIP router index -> the other admin
    enhanced: bool = False  # the MDS's vsan 1 is in enhanced zoning mode

    def sim_of(self, router: Router) -> SimRouter:
        return self.sims[[r.pk for r in self.routers].index(router.pk)]

    def fcip(self, index: int) -> bool:
        return index in FCIP_SITES

    def platform(self, index: int) -> str:
        return PLATFORMS[index][0]

    def site_index(self, site_pk: int) -> int:
        return [s.pk for s in self.sites].index(site_pk)


def build_cast(cast: Cast, seed: int) -> None:
    """Five sites with a simulated router each, four zones, eight devices, the FCIP sites' hosts and
    their other admins, into `cast` as they are made (so that `remove_cast` removes what a failure
    left); unused ids only."""
    prefix, secrets_dir = cast.prefix, cast.secrets_dir
    cast.enhanced = seed % 2 == 1
    zones = 1 + max(zone for _owner, zone, _shareable in DEVICES)
    used_zones = set(Zone.objects.values_list("zone_id", flat=True))
    used_ips = set(Site.objects.values_list("data_ip", flat=True))
    next_msan = (max(Site.objects.values_list("msan_id", flat=True), default=0) or 0) + 1
    zone_ids = [z for z in range(4094, 0, -1) if z not in used_zones][:zones]
    data_ips = [ip for ip in (f"127.77.{n // 250}.{n % 250 + 1}" for n in range(5000)) if ip not in used_ips]
    for index, zone_id in enumerate(zone_ids):
        cast.zones.append(Zone.objects.create(zone_id=zone_id, description=f"{prefix} zone {index + 1}"))
    wwn = wwn_prefix(prefix)
    for index, (platform, transport, router_port) in enumerate(PLATFORMS):
        letter = "abcde"[index]
        password = secrets.token_urlsafe(12)
        admin_password = secrets.token_urlsafe(12)
        address = ("127.0.0.1", 0)
        sim = SimRouter(platform, telnet=address if transport == "telnet" else None,
                        ssh=address if transport == "ssh" else None, scale=0.0, username=USERNAME, password=password,
                        seed=seed + index, production_zoning=cast.fcip(index), accounts={ADMIN: admin_password})
        cast.sims.append(sim)
        host, port = sim.start()[transport]
        site = Site.objects.create(
            name=f"{prefix}-{letter}", display_name=f"{prefix.upper()}-{letter.upper()}", msan_id=next_msan + index,
            management_ip=host, data_ip=data_ips[index], router_port=router_port,
        )
        name = f"{prefix}-{letter}-rtr"
        (secrets_dir / name).write_text(password + "\n")
        cast.routers.append(Router.objects.create(
            site=site, name=name, platform=platform, transport=transport, host=host, port=port, username=USERNAME,
            secret_ref=f"file:{name}", connect_timeout=5.0, command_timeout=2.0,
            ssh_host_key=hostkeys.fetch(host, port) if transport == "ssh" else "",
            **({"vsan": 1} if platform == "cisco_mds" else {}),
        ))
        cast.sites.append(site)
        if cast.fcip(index):
            cast.hosts[index] = []
            for number in range(1, HOSTS_PER_FCIP_SITE + 1):
                made = Host.objects.create(site=site, name=f"{prefix}-{letter}-h{number}")
                Initiator.objects.create(host=made, wwn=f"{wwn}{index:02x}:{number:02x}")
                cast.hosts[index].append(made.name)
            cast.admins[index] = FabricAdmin(sim, platform, ADMIN, admin_password)
            if platform == "cisco_mds" and cast.enhanced:
                cast.admins[index].enhanced_mode()
    for index, (owner, zone, shareable) in enumerate(DEVICES, start=1):
        cast.devices.append(Device.objects.create(
            device_id=f"{prefix}-d{index}", description=f"{prefix.upper()}-D{index}",
            wwn=f"{wwn}00:{index:02x}", zone=cast.zones[zone], owner_site=cast.sites[owner], shareable=shareable,
        ))


def wwn_prefix(prefix: str) -> str:
    """The first six bytes of every WWN of the cast (devices end 00:NN, initiators SS:NN)."""
    tag = prefix.rsplit("-", 1)[-1]
    return f"2f:5a:{tag[0:2]}:{tag[2:4]}:{tag[4:6]}:00:"


def unused_prefix() -> str:
    """`soak-<6 hex digits>`, with no site or device of that name nor device WWN in the registry."""
    while True:
        prefix = f"soak-{secrets.token_hex(3)}"
        wwn = wwn_prefix(prefix)
        if not (Site.objects.filter(name__startswith=prefix).exists()
                or Device.objects.filter(Q(device_id__startswith=prefix) | Q(wwn__startswith=wwn)).exists()
                or Initiator.objects.filter(wwn__startswith=wwn).exists()):
            return prefix


def stop_simulators(cast: Cast) -> None:
    pool.close_all()
    for admin in cast.admins.values():
        admin.close()
    for sim in cast.sims:
        sim.stop()


def remove_cast(cast: Cast, first_operation: int) -> None:
    """Stop the simulators and delete every row of the cast, its journal included; nothing else."""
    stop_simulators(cast)
    names = [site.name for site in cast.sites]
    routers = [router.name for router in cast.routers]
    Link.objects.filter(Q(router__in=cast.routers) | Q(site__in=cast.sites)).delete()
    Grant.objects.filter(Q(device__in=cast.devices) | Q(site__in=cast.sites)).delete()
    Operation.objects.filter(pk__gte=first_operation).filter(
        Q(request__site__in=names) | Q(request__router__in=routers) | Q(plan__site__in=names)
    ).delete()
    Device.objects.filter(pk__in=[d.pk for d in cast.devices]).delete()
    Host.objects.filter(site__in=cast.sites).delete()  # and their initiators
    Router.objects.filter(pk__in=[r.pk for r in cast.routers]).delete()
    Site.objects.filter(pk__in=[s.pk for s in cast.sites]).delete()
    Zone.objects.filter(pk__in=[z.pk for z in cast.zones]).delete()

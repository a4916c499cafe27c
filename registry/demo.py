"""The DICE testbed as a registry: two sites, one router each, zones 1-3, shared Xserve RAIDs, and
the hosts whose initiator ports an FCIP link zones (the Segment Server and the Management Server).

`load_demo(fcip=True)` (`manage.py loaddemo`, hence `make demo`) adds two FCIP sites, east-site on a
Brocade 7840 and west-site on a Cisco MDS 9250i, with an array and hosts of their own; the tests'
fixed cast is the two-site testbed (`fcip=False`). Every address is on loopback so the demo and the
tests never leave the machine; the routers' ports are placeholders until `make demo` starts the
simulators and writes their real ports.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TypedDict

from django.conf import settings
from django.db import transaction

from registry.models import Device, Host, Initiator, Router, Site, Zone


class ZoneRow(TypedDict):
    zone_id: int
    description: str


class DeviceRow(TypedDict):
    device_id: str
    description: str
    wwn: str
    zone: int  # its zone_id
    owner: str  # its site's name


SITES = [
    {
        "name": "primary-site",
        "display_name": "GSFC-DICEL1",
        "msan_id": 1,
        "management_ip": "127.0.0.11",
        "data_ip": "127.0.0.21",
        "description": "NASA Goddard DICE lab, building 28",
        "router_port": 8,
    },
    {
        "name": "remote-site",
        "display_name": "DICE-REMOTE",
        "msan_id": 2,
        "management_ip": "127.0.0.12",
        "data_ip": "127.0.0.22",
        "description": "Remote DICE site across the WAN",
        "router_port": 4,
    },
]
ROUTERS = [
    {"name": "primary-rtr", "site": "primary-site", "platform": "mcdata_eclipse", "transport": "telnet", "port": 2323},
    {"name": "remote-rtr", "site": "remote-site", "platform": "nishan_ips3000", "transport": "telnet", "port": 2324},
]
ZONES: list[ZoneRow] = [
    {"zone_id": 1, "description": "GSFC shared storage"},
    {"zone_id": 2, "description": "Remote shared storage"},
    {"zone_id": 3, "description": "Remote archive"},
]
DEVICES: list[DeviceRow] = [
    {
        "device_id": "xraid1",
        "description": "XRAID1",
        "wwn": "20:00:00:04:53:00:01:a0",
        "zone": 1,
        "owner": "primary-site",
    },
    {
        "device_id": "xraid2",
        "description": "XRAID2",
        "wwn": "21:00:00:e0:8b:0e:95:17",
        "zone": 2,
        "owner": "remote-site",
    },
    {
        "device_id": "xraid3",
        "description": "XRAID3",
        "wwn": "20:04:00:04:53:00:02:f0",
        "zone": 3,
        "owner": "remote-site",
    },
]
HOSTS = [
    {"name": "segment-server", "site": "primary-site", "description": "DICE Segment Server",
     "initiators": ["21:00:00:e0:8b:10:5e:01", "21:01:00:e0:8b:30:5e:01"]},
    {"name": "management-server", "site": "remote-site", "description": "DICE Management Server",
     "initiators": ["21:00:00:e0:8b:10:3a:02"]},
]
# The FCIP pair: router_port is the FOS VE port / MDS fcip interface facing the site's SAN.
FCIP_SITES = [
    {
        "name": "east-site",
        "display_name": "DICE-EAST",
        "msan_id": 3,
        "management_ip": "127.0.0.13",
        "data_ip": "127.0.0.23",
        "description": "FCIP site on a Brocade 7840",
        "router_port": 24,
    },
    {
        "name": "west-site",
        "display_name": "DICE-WEST",
        "msan_id": 4,
        "management_ip": "127.0.0.14",
        "data_ip": "127.0.0.24",
        "description": "FCIP site on a Cisco MDS 9250i",
        "router_port": 25,
    },
]
FCIP_ROUTERS = [
    {"name": "east-rtr", "site": "east-site", "platform": "brocade_fos", "transport": "ssh", "port": 2325},
    {"name": "west-rtr", "site": "west-site", "platform": "cisco_mds", "transport": "ssh", "port": 2326, "vsan": 1},
]
FCIP_ZONES: list[ZoneRow] = [{"zone_id": 4, "description": "East FCIP storage"}]
FCIP_DEVICES: list[DeviceRow] = [
    {
        "device_id": "east-array1",
        "description": "EAST-ARRAY1",
        "wwn": "50:00:09:72:08:1a:f1:04",
        "zone": 4,
        "owner": "east-site",
    },
]
FCIP_HOSTS = [
    {"name": "east-backup", "site": "east-site", "description": "", "initiators": ["10:00:00:10:9b:5e:a0:01"]},
    {"name": "west-analysis", "site": "west-site", "description": "",
     "initiators": ["10:00:00:10:9b:5e:b0:01", "10:00:00:10:9b:5e:b0:02"]},
]
DEMO_USERNAME = "admin"


def ensure_secret(name: str) -> str:
    """Create the router's demo password file on first use (random, never committed)."""
    directory = Path(settings.FLEXZONE_SECRETS_DIR)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / name
    if not path.exists():
        path.write_text(secrets.token_urlsafe(18) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


@transaction.atomic
def load_demo(fcip: bool = True) -> dict[str, int]:
    """Create or update the demo registry; idempotent. `fcip` adds east-site and west-site."""
    zones, sites, routers, devices, hosts = ZONES, SITES, ROUTERS, DEVICES, HOSTS
    if fcip:
        zones, sites, routers = zones + FCIP_ZONES, sites + FCIP_SITES, routers + FCIP_ROUTERS
        devices, hosts = devices + FCIP_DEVICES, hosts + FCIP_HOSTS
    for zone in zones:
        Zone.objects.update_or_create(zone_id=zone["zone_id"], defaults={"description": zone["description"]})
    by_name = {}
    for site in sites:
        by_name[site["name"]], _ = Site.objects.update_or_create(
            name=site["name"], defaults={k: v for k, v in site.items() if k != "name"}
        )
    for router in routers:
        _load_router(router, by_name[router["site"]])
    for device in devices:
        Device.objects.update_or_create(
            device_id=device["device_id"],
            defaults={
                "description": device["description"],
                "wwn": device["wwn"],
                "zone": Zone.objects.get(zone_id=device["zone"]),
                "owner_site": by_name[device["owner"]],
            },
        )
    for host in hosts:
        _load_host(host, by_name[host["site"]])
    return {"sites": len(sites), "routers": len(routers), "zones": len(zones), "devices": len(devices),
            "hosts": len(hosts)}


def _load_router(router: dict, site: Site) -> None:
    ensure_secret(router["name"])
    defaults = {
        "site": site,
        "platform": router["platform"],
        "transport": router["transport"],
        "host": site.management_ip,
        "port": router["port"],
        "username": DEMO_USERNAME,
        "secret_ref": f"file:{router['name']}",
    }
    if "vsan" in router:
        defaults["vsan"] = router["vsan"]
    Router.objects.update_or_create(name=router["name"], defaults=defaults)


def _load_host(host: dict, site: Site) -> None:
    row, _ = Host.objects.update_or_create(site=site, name=host["name"], defaults={"description": host["description"]})
    for wwn in host["initiators"]:
        Initiator.objects.update_or_create(wwn=wwn, defaults={"host": row})

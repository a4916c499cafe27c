"""The DICE testbed as a registry: two sites, one router each, zones 1-3, shared Xserve RAIDs.

Every address is on loopback so the demo and the tests never leave the machine; the routers'
ports are placeholders until `make demo` starts the simulators and writes their real ports.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.db import transaction

from registry.models import Device, Router, Site, Zone

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
ZONES = [
    {"zone_id": 1, "description": "GSFC shared storage"},
    {"zone_id": 2, "description": "Remote shared storage"},
    {"zone_id": 3, "description": "Remote archive"},
]
DEVICES = [
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
def load_demo() -> dict[str, int]:
    """Create or update the demo registry; idempotent."""
    for zone in ZONES:
        Zone.objects.update_or_create(zone_id=zone["zone_id"], defaults={"description": zone["description"]})
    sites = {}
    for site in SITES:
        sites[site["name"]], _ = Site.objects.update_or_create(
            name=site["name"], defaults={k: v for k, v in site.items() if k != "name"}
        )
    for router in ROUTERS:
        ensure_secret(router["name"])
        site = sites[router["site"]]
        Router.objects.update_or_create(
            name=router["name"],
            defaults={
                "site": site,
                "platform": router["platform"],
                "transport": router["transport"],
                "host": site.management_ip,
                "port": router["port"],
                "username": DEMO_USERNAME,
                "secret_ref": f"file:{router['name']}",
            },
        )
    for device in DEVICES:
        Device.objects.update_or_create(
            device_id=device["device_id"],
            defaults={
                "description": device["description"],
                "wwn": device["wwn"],
                "zone": Zone.objects.get(zone_id=device["zone"]),
                "owner_site": sites[device["owner"]],
            },
        )
    return {"sites": len(SITES), "routers": len(ROUTERS), "zones": len(ZONES), "devices": len(DEVICES)}

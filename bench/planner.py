"""`bench planner`: planner latency over a synthetic registry of 1,000 sites and 10,000 devices.

Every question is answerable (a zone with several devices of one site behind an FCIP router is one
link zoning them all), so a refusal stops the run.

The registry is built inside a transaction that is rolled back, so the benchmark leaves the
database as it found it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from django.db import connection, transaction

from operations.planner import plan_connect
from registry.models import Device, Host, Initiator, Router, Site, Zone
from routers.drivers import DRIVERS


class _Rollback(Exception):
    pass


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def _build(sites: int, devices: int, zones: int, rng: random.Random) -> None:
    platforms = sorted(str(p) for p in DRIVERS)
    Zone.objects.bulk_create([Zone(zone_id=z + 1) for z in range(zones)], ignore_conflicts=True)
    zone_rows = list(Zone.objects.filter(zone_id__lte=zones).order_by("zone_id"))
    site_rows = Site.objects.bulk_create(
        [
            Site(
                name=f"bench-site-{i}",
                display_name=f"BENCH-SITE-{i}",
                msan_id=100000 + i,
                management_ip=f"127.1.{i // 250}.{i % 250 + 1}",
                data_ip=f"127.2.{i // 250}.{i % 250 + 1}",
                router_port=24 + i % 20,  # valid on every platform (FOS VE ports are 24-43)
            )
            for i in range(sites)
        ]
    )
    Router.objects.bulk_create(
        [
            Router(
                site=site,
                name=f"bench-rtr-{i}",
                platform=platforms[i % len(platforms)],
                transport="ssh" if platforms[i % len(platforms)] in ("brocade_fos", "cisco_mds") else "telnet",
                host=site.management_ip,
                port=23,
                username="admin",
                secret_ref=f"file:bench-rtr-{i}",
            )
            for i, site in enumerate(site_rows)
        ]
    )
    # A link joins two routers of one protocol: a zone's devices are owned by sites of one kind
    # (FCIP for even zone numbers, iFCP for odd ones), and each question asks from a site of that kind.
    like = _sites_by_protocol(site_rows, platforms)
    # One host with one initiator port per site: an FCIP plan zones the requesting site's initiators.
    hosts = Host.objects.bulk_create([Host(site=site, name=f"bench-host-{i}") for i, site in enumerate(site_rows)])
    Initiator.objects.bulk_create([
        Initiator(host=host, wwn=":".join(f"{b:02x}" for b in (0x10, 0x00) + tuple((i + 1).to_bytes(6, "big"))))
        for i, host in enumerate(hosts)
    ])
    Device.objects.bulk_create(
        [
            Device(
                device_id=f"bench-dev-{i}",
                description=f"BENCHDEV{i}",
                wwn=":".join(f"{b:02x}" for b in (0x50, 0x00) + tuple((i + 1).to_bytes(6, "big"))),
                zone=zone_rows[i % len(zone_rows)],
                owner_site=rng.choice(like[zone_rows[i % len(zone_rows)].zone_id % 2]),
            )
            for i in range(devices)
        ]
    )


def _sites_by_protocol(site_rows: list[Site], platforms: list[str]) -> tuple[list[Site], list[Site]]:
    """(FCIP sites, iFCP sites), as `_build` gives site i the platform platforms[i % len(platforms)]."""
    fcip = [site for i, site in enumerate(site_rows) if DRIVERS[platforms[i % len(platforms)]].zones_initiators]
    return fcip, [site for site in site_rows if site not in fcip]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench planner")
    parser.add_argument("--sites", type=int, default=1000)
    parser.add_argument("--devices", type=int, default=10000)
    parser.add_argument("--zones", type=int, default=2000, help="devices spread evenly over the zones")
    parser.add_argument("--queries", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if Site.objects.filter(name__startswith="bench-site-").exists():
        print("refusing to run: bench-site-* rows already exist")
        return 2
    rng = random.Random(args.seed)
    latencies: dict[str, list[float]] = {"description": [], "wwn": [], "zone": []}
    try:
        with transaction.atomic():
            started = time.perf_counter()
            _build(args.sites, args.devices, args.zones, rng)
            if connection.vendor == "postgresql":
                # Fresh rows have no statistics yet; without them PostgreSQL plans sequential scans.
                with connection.cursor() as cursor:
                    for model in (Site, Router, Zone, Device, Host, Initiator):
                        cursor.execute(f"ANALYZE {model._meta.db_table}")
            print(
                f"built {args.sites} sites, {args.devices} devices, {args.zones} zones "
                f"in {time.perf_counter() - started:.1f} s"
            )
            devices = list(Device.objects.select_related("owner_site", "zone").order_by("pk"))
            like = _sites_by_protocol(list(Site.objects.filter(name__startswith="bench-site-").order_by("msan_id")),
                                      sorted(str(p) for p in DRIVERS))
            for i in range(args.queries):
                device = devices[rng.randrange(len(devices))]
                site = rng.choice(like[device.zone.zone_id % 2]).name
                if site == device.owner_site.name:
                    continue
                kind = ("description", "wwn", "zone")[i % 3]
                questions: dict[str, dict[str, Any]] = {
                    "description": {"device_description": device.description.lower()},
                    "wwn": {"wwn": device.wwn.upper()},
                    "zone": {"zone": device.zone.zone_id},
                }
                question = questions[kind]
                # sites are asked for by short name, display name or MSAN id, as users do
                question["site"] = (site, site.upper(), str(100000 + int(site.rsplit("-", 1)[1])))[(i // 3) % 3]
                t0 = time.perf_counter()
                plan = plan_connect(**question)
                latencies[kind].append((time.perf_counter() - t0) * 1000)
                assert plan.steps
            raise _Rollback
    except _Rollback:
        pass
    everything = [v for values in latencies.values() for v in values]
    for kind, values in latencies.items():
        if values:
            print(
                f"{kind:12s} n={len(values):5d} p50={statistics.median(values):7.2f} ms "
                f"p99={_percentile(values, 0.99):7.2f} ms"
            )
    print(
        f"planner_queries={len(everything)} "
        f"p50_ms={statistics.median(everything):.2f} p99_ms={_percentile(everything, 0.99):.2f}"
    )
    return 0

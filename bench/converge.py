"""`python -m bench converge --routers N --grants G --workers W`: a fleet rebuilt after a disaster.

The set-up is `python -m bench scale`'s (bench/scale.py: N simulated routers in farms, the service and W
worker processes of `--concurrency` threads, in network namespaces when root), with G grants spread over
the fleet's site pairs (each pair's owner gets G / pairs devices in the pair's zone, its requester holds
every one of them, FCIP grants with the requester's initiator). The routers start wiped: nothing of
flexzone's is on any of them, as after a site is rebuilt.

Converging is what an operator does then: a repair of every router, asked through the API (the root
admin certificate) one router per operation, so that the workers share them, each holding its router
within its session budget. The figures:
- converge_s: from the first request to the end of the last repair;
- ideal_s: the repairs' own times (claim to end) spread perfectly over W x concurrency slots, and never
  less than the longest one;
- efficiency: ideal_s / converge_s (1.0: every slot always busy);
- the most concurrent sessions any router's simulator held, against the smallest session budget;
- drift: what a reconcile check finds afterwards, unreadable routers included.

Its last line is the figures: `converge_s=… ideal_s=… efficiency=… max_router_sessions=…
min_session_budget=… drift=…`. Targets at N = 200, G = 2000, W = 4: efficiency >= 0.8, no router over its
budget, no drift. The quick form (tests/bench/test_converge.py, `make test`) runs 8 routers.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.scale import ENDED, reconcile_drift, serve_fleet, stop_farms, with_fleet_scratch
from lab.deployment import Deployment


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench converge", description=__doc__.split("\n\n")[0])
    parser.add_argument("--routers", type=int, default=200, help="simulated routers, an even number >= 4")
    parser.add_argument("--grants", type=int, default=2000, help="grants, spread over the site pairs")
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=8, help="operation threads per worker")
    parser.add_argument("--timing-scale", type=float, default=0.1, help="the routers' platform timing, scaled")
    parser.add_argument("--namespaces", choices=("auto", "on", "off"), default="auto",
                        help="workers and routers in network namespaces of their own (auto: when root)")
    args = parser.parse_args(argv)
    if args.routers < 4 or args.routers % 2:
        parser.error("--routers: an even number, at least 4")
    if not args.routers // 2 <= args.grants <= 50 * args.routers:
        parser.error("--grants: at least one per site pair, at most 50 per router")
    if not 1 <= args.workers <= 32 or args.concurrency < 1:
        parser.error("--workers 1..32 and --concurrency >= 1")
    return args


def main(argv: list[str]) -> int:
    return with_fleet_scratch(parse(argv), "converge", _run)


def _run(args: argparse.Namespace, server: str, scratch: Path, lab, farms: list[subprocess.Popen]) -> int:
    deployment = Deployment(server, label="converge", fcip=False, env={
        "FLEXZONE_OPS_WORKER_CONCURRENCY": str(args.concurrency),
        "FLEXZONE_OPS_TOTAL_TIMEOUT": str(max(180, 3 * args.routers))})
    try:
        pairs, budgets = serve_fleet(args, scratch, lab, farms, deployment, "converge")
        grants = _grant(pairs, args.grants)
        print(f"bench converge: {grants} grants over {len(pairs)} site pairs; the routers carry none of them",
              flush=True)
        converge_s, own, failed = _converge(deployment, sorted(budgets))
        drift, unreadable = reconcile_drift(deployment)
        stats = stop_farms(farms)
    finally:
        deployment.stop()
    slots = args.workers * args.concurrency
    ideal_s = max(max(own.values(), default=0.0), sum(own.values()) / slots)
    efficiency = ideal_s / converge_s if converge_s else 0.0
    peak = max((entry["peak"] for entry in stats.values()), default=0)
    over = sorted(name for name, entry in stats.items() if entry["peak"] > budgets.get(name, 0))
    print(f"repairs: {len(own)} routers, own time sum {sum(own.values()):.1f} s, longest "
          f"{max(own.values(), default=0.0):.2f} s, over {slots} slots; {len(failed)} failed")
    print(f"router sessions: the most at once on one router {peak} (smallest budget {min(budgets.values())}), "
          f"over budget: {len(over)} router(s){' ' + ', '.join(over[:10]) if over else ''}")
    print(f"converge_s={converge_s:.2f} ideal_s={ideal_s:.2f} efficiency={efficiency:.2f} max_router_sessions={peak} "
          f"min_session_budget={min(budgets.values())} drift={drift + unreadable + len(failed)}")
    return 0 if not over and not drift and not unreadable and not failed else 1


def _grant(pairs, count: int) -> int:
    """`count` grants over the pairs: each owner gets devices in its pair's zone beside the one it has,
    and each requester holds all of them (FCIP: zoning its own initiators)."""
    from operations.models import Grant
    from registry.models import Device, Initiator, Site

    per_pair = math.ceil(count / len(pairs))
    made = 0
    for pair in pairs:
        first = Device.objects.select_related("owner_site", "zone").get(description=pair.device)
        initiators = list(Initiator.objects.filter(host__site__name=pair.requester).values_list("wwn", flat=True))
        requester = Site.objects.get(name=pair.requester)
        devices = [first]
        for extra in range(1, min(per_pair, count - made)):
            number = int(first.wwn.replace(":", "")[-6:-2], 16)  # the fleet's device numbering (bench/scale.py)
            devices.append(Device.objects.create(
                device_id=f"{first.device_id}-{extra}", description=f"{first.description}-{extra}",
                wwn=f"50:00:00:{extra // 256:02x}:{extra % 256:02x}:{number // 256:02x}:{number % 256:02x}:03",
                zone=first.zone, owner_site=first.owner_site))
        Grant.objects.bulk_create(Grant(device=device, site=requester, exclusive=True, initiators=initiators,
                                        reason="bench converge") for device in devices)
        made += len(devices)
        if made >= count:
            break
    return made


def _converge(deployment: Deployment, routers: list[str]) -> tuple[float, dict[str, float], list[str]]:
    """A repair of each router through the API, all asked at once; (seconds from the first request to the
    end of the last repair, each repair's own seconds from claim to end, the routers whose repair failed)."""
    from operations.models import Operation

    clients = threading.local()  # a client (its TLS sessions) per requesting thread

    def ask(name: str) -> int:
        if not hasattr(clients, "client"):
            clients.client = deployment.client("root", timeout=120.0)
        return clients.client.request("POST", "/api/reconcile/", body={"repair": True, "router": name}).json()["id"]

    with ThreadPoolExecutor(max_workers=8) as requesting:
        asked = dict(zip(routers, requesting.map(ask, routers), strict=True))
    deadline = time.monotonic() + 1800
    while Operation.objects.filter(pk__in=list(asked.values())).exclude(state__in=ENDED).exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the repairs did not end within 30 minutes")
        time.sleep(0.1)
    ended = Operation.objects.filter(pk__in=list(asked.values()))
    last = max(finished for finished in ended.values_list("finished_at", flat=True) if finished is not None)
    first = min(ended.values_list("created_at", flat=True))
    names = {pk: name for name, pk in asked.items()}
    own, failed = {}, []
    for pk, state, began, finished, error in ended.values_list("pk", "state", "started_at", "finished_at", "error"):
        own[names[pk]] = (finished - began).total_seconds() if began and finished else 0.0
        if state != "succeeded":
            failed.append(names[pk])
            print(f"  repair of {names[pk]}: {state}: {error[:200]}")
    return (last - first).total_seconds(), own, failed

"""`python -m bench scale --routers N --workers W`: flexzone over many routers and several worker hosts.

What it sets up, all torn down at the end:
- N simulated routers in a platform mix (McData Eclipse, Nishan IPS 3000, Brocade FOS, Cisco MDS, in
  turn per pair of sites), served by a few farm processes (bench/scale_farm.py) with the platforms'
  own timing scaled by `--timing-scale` and their real session limits;
- the service as the lab deploys it (lab/deployment.py): a temporary database, `manage.py serve` (the
  REST API over mutual TLS), and W `manage.py worker` processes of `--concurrency` operation threads.
  Run as root, the routers and each worker get a network namespace of their own (lab/testbed.py),
  standing in for separate hosts: the workers reach the routers across the lab's WAN namespace and
  PostgreSQL over its UNIX socket. Otherwise (or `--namespaces off`) they are plain processes on
  loopback;
- the registry: N sites, one router each; sites 2k and 2k+1 are a pair of one platform, 2k+1 owns a
  device in a zone of the pair's own, and (FCIP) 2k has a host with an initiator.

The stream: every pair connects site 2k to its device and disconnects it again, over and over, through
REST (the root admin certificate), one request in flight per pair, so that the queue always holds
more than the workers can run and no two operations contend for one router. The figures count the
operations that ended in the measured window, which starts when every pair has ended one operation
(the logins are paid) and lasts `--seconds`:
- operations per second;
- op time p50 and p95 (the journal's run time, claim to end, under this load);
- efficiency: operations per second against the ideal W × concurrency ÷ mean op time (1.0: every
  operation slot of every worker always busy; with fewer pairs than slots, pairs ÷ mean op time);
- the most concurrent sessions any router's simulator held, against the smallest session budget, and
  how many routers went over their own budget;
- the database connections used (the most seen in pg_stat_activity, sampled, this process's excluded);
- drift: what reconcile (through the API, run by a worker) finds afterwards, unreadable routers
  included.

Its last line is the figures: `scale_ops_per_s=… scale_efficiency=… max_router_sessions=…
min_session_budget=… drift=…`. Targets at N = 200, W = 4: efficiency ≥ 0.8, no router over its
budget, no drift. The quick form (tests/bench/test_scale.py, `make test`) runs 16 routers and 2 workers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from lab.database import server_url
from lab.deployment import Deployment

ROOT = Path(__file__).resolve().parents[1]
MIX = ("mcdata_eclipse", "nishan_ips3000", "brocade_fos", "cisco_mds")
PORTS = {"mcdata_eclipse": 5, "nishan_ips3000": 6, "brocade_fos": 24, "cisco_mds": 10}
ROUTERS_PER_FARM = 50
ENDED = ("succeeded", "failed", "rolled_back", "cancelled")


@dataclass
class Pair:
    requester: str  # site short name
    device: str  # device description
    next_kind: str = "connect"
    in_flight: int | None = None  # operation id
    ended: int = 0


@dataclass
class Run:
    pairs: list[Pair]
    done: list[tuple[float, float, str]] = field(default_factory=list)  # (ended at, run s, state) in the window
    failures: list[str] = field(default_factory=list)
    max_connections: int = 0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--routers", type=int, default=200, help="simulated routers, an even number >= 4")
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=8, help="operation threads per worker")
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window")
    parser.add_argument("--timing-scale", type=float, default=0.1, help="the routers' platform timing, scaled")
    parser.add_argument("--namespaces", choices=("auto", "on", "off"), default="auto",
                        help="workers and routers in network namespaces of their own (auto: when root)")
    parser.add_argument("--affinity-wait", type=float, default=None,
                        help="FLEXZONE_OPS_AFFINITY_WAIT for the workers (0: no routing to the session holder)")
    args = parser.parse_args(argv)
    if args.routers < 4 or args.routers % 2:
        parser.error("--routers: an even number, at least 4")
    if not 1 <= args.workers <= 32 or args.concurrency < 1 or args.seconds <= 0:
        parser.error("--workers 1..32, --concurrency >= 1 and --seconds > 0")
    return args


def main(argv: list[str]) -> int:
    return with_fleet_scratch(parse(argv), "scale", _run)


def with_fleet_scratch(args: argparse.Namespace, name: str, run: Callable[..., int]) -> int:
    """`run(args, server, scratch, lab, farms)` with a scratch directory, the namespaces (`lab_for`) and a
    list for the farms it starts, all removed or killed afterwards whatever happens."""
    server = server_url()
    scratch = Path(tempfile.mkdtemp(prefix=f"fz-{name}-"))
    lab = None
    farms: list[subprocess.Popen] = []
    try:
        lab = lab_for(args, scratch)
        return run(args, server, scratch, lab, farms)
    finally:
        for farm in farms:
            if farm.poll() is None:
                farm.kill()
        try:
            if lab:
                lab.down()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)  # the farms' specs hold the routers' passwords


def _run(args: argparse.Namespace, server: str, scratch: Path, lab, farms: list[subprocess.Popen]) -> int:
    deployment = Deployment(server, label="scale", fcip=False, env={
        "FLEXZONE_OPS_WORKER_CONCURRENCY": str(args.concurrency),
        # The closing reconcile is one operation reading every router in turn (a login each where this
        # worker holds no session): at 200 routers that is more than the default 180 s.
        "FLEXZONE_OPS_TOTAL_TIMEOUT": str(max(180, 3 * args.routers)),
        **({"FLEXZONE_OPS_AFFINITY_WAIT": str(args.affinity_wait)} if args.affinity_wait is not None else {})})
    try:
        pairs, budgets = serve_fleet(args, scratch, lab, farms, deployment, "scale")
        run = Run(pairs)
        window = _stream(run, deployment, args)
        drift, unreadable = reconcile_drift(deployment)
        stats = stop_farms(farms)
    finally:
        deployment.stop()
    return _report(args, run, window, stats, budgets, drift, unreadable)


def serve_fleet(args: argparse.Namespace, scratch: Path, lab, farms: list[subprocess.Popen], deployment: Deployment,
                name: str) -> tuple[list[Pair], dict[str, int]]:
    """The routers (`args.routers`, in farms), the service and `args.workers` workers of `args.concurrency`
    threads, and the registry of the fleet (`fleet_registry`); returns its pairs and session budgets."""
    bind = lab.site("primary").mgmt_addr if lab else "127.0.0.1"
    spec = [{"name": f"sc{i:03d}-rtr", "platform": MIX[(i // 2) % len(MIX)], "host": bind,
             "password": secrets.token_urlsafe(12)} for i in range(args.routers)]
    addresses = start_farms(spec, args, scratch, lab, farms)
    deployment.start()
    print(f"bench {name}: {args.routers} routers, {args.workers} workers x {args.concurrency} threads, "
          f"{'network namespaces' if lab else 'plain processes'}; service at {deployment.url}", flush=True)
    use_database_of(deployment)
    fleet = fleet_registry(spec, addresses, deployment.secrets)
    database = deployment.database.socket_url() if lab else None
    for number in range(args.workers):
        site = lab.site(list(lab.sites)[number + 1]).netns if lab else None
        deployment.spawn(f"fz-{name}-worker{number + 1}", ["worker", "--concurrency", str(args.concurrency)],
                         netns=site, database_url=database)
    wait_for_workers(args.workers, deployment)
    return fleet


def lab_for(args: argparse.Namespace, scratch: Path):
    """The namespaces (one for the routers, one per worker), or None for plain processes."""
    if args.namespaces == "off" or (args.namespaces == "auto" and os.geteuid() != 0):
        return None
    from lab.testbed import Lab

    try:
        return Lab(prefix="fzscale", run_dir=scratch / "lab").up(sites=1 + max(args.workers, 1))
    except Exception as exc:  # noqa: BLE001 - auto falls back, saying why; `on` insists
        if args.namespaces == "on":
            raise
        print(f"bench scale: no network namespaces ({exc}); plain processes", file=sys.stderr)
        return None


def start_farms(spec: list[dict], args, scratch: Path, lab, farms: list[subprocess.Popen]) -> dict[str, dict]:
    addresses: dict[str, dict] = {}
    count = math.ceil(len(spec) / ROUTERS_PER_FARM)
    for number in range(count):
        part = scratch / f"farm{number}.json"
        part.write_text(json.dumps(spec[number::count]))
        part.chmod(0o600)  # it holds the routers' passwords
        argv = [sys.executable, "-m", "bench.scale_farm", str(part), "--timing-scale", str(args.timing_scale),
                "--seed", str(number * 1000)]
        farms.append(subprocess.Popen(lab.command("primary", argv) if lab else argv, cwd=ROOT, text=True,
                                      stdout=subprocess.PIPE, stdin=subprocess.DEVNULL))
    for farm in farms:
        assert farm.stdout is not None  # stdout=PIPE
        line = farm.stdout.readline()
        if not line:
            raise RuntimeError(f"a router farm stopped at start (exit {farm.wait()})")
        addresses.update(json.loads(line)["addresses"])
    return addresses


def stop_farms(farms: list[subprocess.Popen]) -> dict[str, dict]:
    stats: dict[str, dict] = {}
    for farm in farms:
        farm.send_signal(signal.SIGTERM)
    for farm in farms:
        try:
            out, _ = farm.communicate(timeout=60)  # its last line is the counts
        except subprocess.TimeoutExpired:
            farm.kill()
            raise RuntimeError("a router farm did not stop within 60 s of SIGTERM") from None
        lines = out.strip().splitlines()
        if lines:
            stats.update(json.loads(lines[-1])["stats"])
    return stats


def use_database_of(deployment: Deployment) -> None:
    os.environ["DATABASE_URL"] = deployment.database.url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
    import django

    django.setup()


def fleet_registry(spec: list[dict], addresses: dict[str, dict], secrets_dir: Path
                   ) -> tuple[list[Pair], dict[str, int]]:
    """The bench's sites, routers, zones, devices and FCIP hosts (the demo's routers go: their addresses
    are not ours to reach); returns the pairs and each router's session budget."""
    from operations.budget import budget_of
    from registry.models import Device, Host, Initiator, Router, Site, Zone

    Router.objects.all().delete()
    secrets_dir.mkdir(parents=True, exist_ok=True)
    first_msan = (max(Site.objects.values_list("msan_id", flat=True), default=0) or 0) + 1
    pairs, budgets = [], {}
    for index, entry in enumerate(spec):
        where = addresses[entry["name"]]
        platform, number = entry["platform"], index + 1
        site = Site.objects.create(name=f"sc{index:03d}", display_name=f"SC{index:03d}", msan_id=first_msan + index,
                                   management_ip=where["host"], data_ip=f"198.19.{index // 250}.{index % 250 + 1}",
                                   router_port=PORTS[platform])
        (secrets_dir / entry["name"]).write_text(entry["password"] + "\n")
        router = Router.objects.create(
            site=site, name=entry["name"], platform=platform, transport=where["transport"], host=where["host"],
            port=where["port"], username="admin", secret_ref=f"file:{entry['name']}", connect_timeout=30.0,
            command_timeout=20.0, ssh_host_key=where["host_key"], **({"vsan": 1} if platform == "cisco_mds" else {}))
        budgets[router.name] = budget_of(router)
        if index % 2 == 0:
            host = Host.objects.create(site=site, name=f"sc{index:03d}-h1")
            Initiator.objects.create(host=host, wwn=f"21:00:00:00:00:{number // 256:02x}:{number % 256:02x}:01")
            requester = site
        else:
            zone = Zone.objects.create(zone_id=2000 + index // 2, description=f"scale zone {index // 2}")
            device = Device.objects.create(device_id=f"sc-d{index // 2:03d}", description=f"SC-D{index // 2:03d}",
                                           wwn=f"50:00:00:00:00:{number // 256:02x}:{number % 256:02x}:02",
                                           zone=zone, owner_site=site)
            pairs.append(Pair(requester.name, device.description))
    return pairs, budgets


def wait_for_workers(count: int, deployment: Deployment, timeout: float = 120.0) -> None:
    from django.db import connection

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM procrastinate_workers")
            if cursor.fetchone()[0] >= count:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the {count} workers did not start within {timeout:g} s (logs: {deployment.procs.log_dir})")


def _stream(run: Run, deployment: Deployment, args) -> tuple[float, float]:
    """Keep one operation in flight per pair until the window has passed; returns the window (monotonic)."""
    from django.db import connection

    from cli.errors import CliError
    from operations.models import Operation

    clients = threading.local()  # a requests session per submitting thread
    window: list[float] = []

    def submit(pair: Pair) -> None:
        if not hasattr(clients, "client"):
            clients.client = deployment.client("root")
        path = "/api/connect/" if pair.next_kind == "connect" else "/api/disconnect/"
        try:
            response = clients.client.request("POST", path, body={"site": pair.requester,
                                                                  "device_description": pair.device})
            pair.in_flight = response.json()["id"]
        except CliError as exc:  # refused or unanswered: counted, and asked again next round
            run.failures.append(f"{pair.requester} {pair.next_kind} {pair.device}: {exc.message}"[:300])

    with ThreadPoolExecutor(max_workers=8) as pool, connection.cursor() as cursor:
        list(pool.map(submit, run.pairs))
        started = time.monotonic()
        while True:
            now = time.monotonic()
            if not window and all(pair.ended for pair in run.pairs):
                window = [now, now + args.seconds]
            if window and now >= window[1] or now - started > args.seconds + 600:
                break
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            run.max_connections = max(run.max_connections, cursor.fetchone()[0] - 1)
            flying = {pair.in_flight: pair for pair in run.pairs if pair.in_flight is not None}
            ended = Operation.objects.filter(pk__in=list(flying), state__in=ENDED).values_list(
                "pk", "state", "started_at", "finished_at", "error")
            for pk, state, began, finished, error in ended:
                pair = flying[pk]
                pair.in_flight, pair.ended = None, pair.ended + 1
                if window and began and finished:  # an operation that never started has no op time
                    run.done.append((now, (finished - began).total_seconds(), state))
                if state == "succeeded":
                    pair.next_kind = "disconnect" if pair.next_kind == "connect" else "connect"
                else:
                    run.failures.append(f"{pair.requester} {pair.next_kind} {pair.device}: {state}: {error}"[:300])
            list(pool.map(submit, [pair for pair in run.pairs if pair.in_flight is None]))
            time.sleep(0.05)
        _drain(run, Operation)
    return (window[0], window[1]) if window else (started, time.monotonic())


def _drain(run: Run, operation_model, timeout: float = 300.0) -> None:
    """Let the operations still in flight end (reconcile then sees a settled registry)."""
    flying = [pair.in_flight for pair in run.pairs if pair.in_flight is not None]
    deadline = time.monotonic() + timeout
    while operation_model.objects.filter(pk__in=flying).exclude(state__in=ENDED).exists():
        if time.monotonic() > deadline:
            run.failures.append(f"operations still running {timeout:g} s after the stream stopped")
            return
        time.sleep(0.2)


def reconcile_drift(deployment: Deployment) -> tuple[int, int]:
    """Reconcile through the API (a worker runs it): (differences found, routers it could not read)."""
    started = time.monotonic()
    client = deployment.client("root", timeout=900.0)
    op = client.request("POST", "/api/reconcile/", params={"wait": "600"}, body={"repair": False}).json()
    deadline = started + 1800
    while op["state"] not in ENDED:
        if time.monotonic() > deadline:
            raise RuntimeError(f"reconcile (operation {op['id']}) did not end within 30 minutes")
        time.sleep(0.5)
        op = client.get(op["url"])
    routers: dict[str, Any] = (op.get("result") or {}).get("routers", {})
    drift = sum(len(report.get(key, [])) for report in routers.values()
                for key in ("missing", "extra", "mismatched", "unresolved"))
    errors = [f"{name}: {report['error']}" for name, report in routers.items() if "error" in report]
    print(f"reconcile: {op['state']} in {time.monotonic() - started:.0f} s, {len(routers)} routers read"
          + "".join(f"\n  unreadable {error[:200]}" for error in errors[:5]), flush=True)
    return drift, len(errors) + (op["state"] != "succeeded")


def _report(args, run: Run, window: tuple[float, float], stats: dict[str, dict], budgets: dict[str, int],
            drift: int, unreadable: int) -> int:
    seconds = window[1] - window[0]
    times = sorted(run_s for _at, run_s, _state in run.done)
    ops_per_s = len(run.done) / seconds if seconds > 0 else 0.0
    mean_s = mean(times) if times else 0.0
    # At most one operation per pair is in flight: with fewer pairs than slots, the pairs are the limit.
    ideal = min(args.workers * args.concurrency, len(run.pairs)) / mean_s if mean_s else 0.0
    efficiency = ops_per_s / ideal if ideal else 0.0
    peak = max((entry["peak"] for entry in stats.values()), default=0)
    over = sorted(name for name, entry in stats.items() if entry["peak"] > budgets.get(name, 0))
    logins = sum(entry["started"] for entry in stats.values())
    failed = sum(1 for _at, _run_s, state in run.done if state != "succeeded")

    def pct(q: float) -> float:  # nearest rank
        return times[max(0, math.ceil(q * len(times)) - 1)] * 1000 if times else 0.0

    print(f"window {seconds:.1f} s: {len(run.done)} operations ended ({failed} not succeeded), "
          f"{ops_per_s:.2f} ops/s")
    print(f"op time (claim to end, under load): p50 {pct(0.5):.0f} ms, p95 {pct(0.95):.0f} ms, "
          f"mean {mean_s * 1000:.0f} ms")
    print(f"ideal min({args.workers} workers x {args.concurrency} threads, {len(run.pairs)} pairs) / mean op time "
          f"= {ideal:.2f} ops/s: "
          f"efficiency {efficiency:.2f}")
    print(f"router sessions: the most at once on one router {peak} (smallest budget {min(budgets.values())}), "
          f"over budget: {len(over)} router(s){' ' + ', '.join(over[:10]) if over else ''}; logins {logins}")
    print(f"database connections used: at most {run.max_connections}")
    print(f"reconcile afterwards: {drift} difference(s), {unreadable} router(s) unreadable")
    for failure in run.failures[:10]:
        print(f"  failure: {failure}")
    print(f"scale_ops_per_s={ops_per_s:.2f} scale_efficiency={efficiency:.2f} max_router_sessions={peak} "
          f"min_session_budget={min(budgets.values())} over_budget={len(over)} op_p50_ms={pct(0.5):.0f} "
          f"op_p95_ms={pct(0.95):.0f} db_connections={run.max_connections} drift={drift + unreadable}")
    return 0 if not over and not drift and not unreadable and not run.failures else 1

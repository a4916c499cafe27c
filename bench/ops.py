"""`python -m bench ops`: what the operations engine costs on top of the routers.

(a) framework overhead per operation (total_ms - router_ms from the journal: planning, locks,
    journal, verification bookkeeping) over add/remove pairs against simulators with no delay, p50
    and p95; also as the caller sees it (wall time of submit + execute, every commit included);
(b) warm/cold ratio: an add on pooled sessions vs the first add, which logs in, on two simulators
    with the McData Eclipse profile (~12 s from connect to prompt, 2.8 s per configuration command);
(c) parallel efficiency: 10 site pairs (20 simulated Nishan routers, 0.1 s per command, 0.3 s per
    configuration change), each router taking 10 operations; one pair's 10 operations alone vs all
    pairs at once (1.0 = perfect scaling: every pair runs as fast as if it were alone).

Operations run through `submit` + `execute` in this process, exactly the code a worker runs, without
queue latency. Simulators run as child processes on loopback. The benchmark's registry rows are
named `bench-ops-*` and deleted afterwards, with their journal rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q

from operations import ledger
from operations.intake import submit
from operations.models import Grant, Link, Operation
from operations.pool import pool
from operations.runner import execute, list_links
from registry.models import Device, Router, Site, Zone
from simulators.process import SimProcess

PREFIX = "bench-ops"
PASSWORD_ENV = "FLEXZONE_ROUTER_SECRET_BENCH_OPS"
PASSWORD = "bench-password"


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


@dataclass
class Pair:
    requester: Site
    owner: Site
    device: Device

    @property
    def request(self) -> dict:
        return {"site": self.requester.name, "device_description": self.device.description}


class BenchRegistry:
    """Sites, routers (each on its own simulator process) and devices, removed again on exit."""

    def __init__(self) -> None:
        self.sims: list[SimProcess] = []
        self.operations: list[int] = []
        self.counter = 0
        self.zone: Zone | None = None

    def __enter__(self) -> BenchRegistry:
        os.environ[PASSWORD_ENV] = PASSWORD
        used = set(Zone.objects.values_list("zone_id", flat=True))
        zone_id = next(z for z in range(4094, 0, -1) if z not in used)
        self.zone = Zone.objects.create(zone_id=zone_id, description=f"{PREFIX} zone")
        return self

    def __exit__(self, *exc: object) -> None:
        pool.close_all()
        for sim in self.sims:
            sim.stop()
        sites = Site.objects.filter(name__startswith=PREFIX)
        Grant.objects.filter(site__in=sites).delete()
        Link.objects.filter(site__in=sites).delete()
        Operation.objects.filter(
            Q(pk__in=self.operations) | Q(request__site__startswith=PREFIX) | Q(request__router__startswith=PREFIX)
        ).delete()
        Device.objects.filter(device_id__startswith=PREFIX).delete()
        Router.objects.filter(name__startswith=PREFIX).delete()
        sites.delete()
        if self.zone is not None:
            self.zone.delete()

    def site(self, platform: str, sim_args: list[str]) -> Site:
        self.counter += 1
        n = self.counter
        sim = SimProcess(
            platform, telnet="127.0.0.1:0", args=["--username", "admin", "--password", PASSWORD, *sim_args]
        )
        self.sims.append(sim)
        host, port = sim.start()["telnet"]
        site = Site.objects.create(
            name=f"{PREFIX}-{n}",
            display_name=f"{PREFIX.upper()}-{n}",
            msan_id=900000 + n,
            management_ip=host,
            data_ip=f"127.9.{n // 250}.{n % 250 + 1}",
            router_port=n % 4000,
        )
        Router.objects.create(
            site=site,
            name=f"{PREFIX}-rtr-{n}",
            platform=platform,
            transport="telnet",
            host=host,
            port=port,
            username="admin",
            secret_ref=f"env:{PASSWORD_ENV}",
            connect_timeout=30.0,
            command_timeout=15.0,
        )
        return site

    def pair(self, platform: str, sim_args: list[str]) -> Pair:
        if self.zone is None:
            raise RuntimeError("BenchRegistry makes its zone on entry: use it in a with statement")
        owner = self.site(platform, sim_args)
        requester = self.site(platform, sim_args)
        device = Device.objects.create(
            device_id=f"{PREFIX}-dev-{owner.pk}",
            description=f"{PREFIX.upper()}-DEV-{owner.pk}",
            wwn="20:00:00:00:{:02x}:{:02x}:{:02x}:01".format(*(owner.pk.to_bytes(3, "big"))),
            zone=self.zone,
            owner_site=owner,
        )
        return Pair(requester, owner, device)

    def run(self, kind: str, pair: Pair) -> Operation:
        op = submit(kind, pair.request, enqueue=False)
        self.operations.append(op.pk)
        done = execute(op.pk)
        if done.state != Operation.State.SUCCEEDED:
            raise RuntimeError(f"{kind} {pair.request}: {done.state}: {done.error}")
        return done


def measure_overhead(reg: BenchRegistry, ops: int) -> dict[str, float]:
    """Overhead per op as the journal records it (total_ms - router_ms, the issue's definition; the
    journal's clock necessarily stops before the statement that writes it) and as the caller sees it
    (wall time of submit + execute, every commit included, - router_ms)."""
    pair = reg.pair("nishan_ips3000", ["--timing-scale", "0"])
    reg.run("add", pair)  # logs in; not counted
    reg.run("remove", pair)
    overheads, journal, routers, cpu = [], [], [], []
    for i in range(ops):
        started, cpu_started = time.perf_counter(), time.thread_time()
        op = reg.run("add" if i % 2 == 0 else "remove", pair)
        wall_ms = (time.perf_counter() - started) * 1000
        cpu.append((time.thread_time() - cpu_started) * 1000)
        overheads.append(wall_ms - op.router_ms)
        journal.append(op.total_ms - op.router_ms)
        routers.append(op.router_ms)
    return {
        "p50": statistics.median(overheads),
        "p95": _percentile(overheads, 0.95),
        "journal_p50": statistics.median(journal),
        "journal_p95": _percentile(journal, 0.95),
        "router_p50": statistics.median(routers),
        "cpu_p50": statistics.median(cpu),
    }


def measure_warm_cold(reg: BenchRegistry, warm_adds: int, scale: float) -> tuple[float, float]:
    pair = reg.pair("mcdata_eclipse", ["--timing-scale", str(scale)])
    cold = reg.run("add", pair).total_ms
    warm = []
    for _ in range(warm_adds):
        reg.run("remove", pair)
        warm.append(reg.run("add", pair).total_ms)
    reg.run("remove", pair)
    return cold, statistics.mean(warm)


def measure_parallel(reg: BenchRegistry, pairs: int, ops_per_router: int, delays: list[str]) -> tuple[float, float]:
    streams = [reg.pair("nishan_ips3000", delays) for _ in range(pairs)]
    with ThreadPoolExecutor(2 * pairs) as workers:  # log in everywhere first, concurrently
        list(workers.map(lambda s: _in_thread(_warm, reg, s), streams))

    def stream(pair: Pair) -> float:
        started = time.perf_counter()
        for i in range(ops_per_router):
            reg.run("add" if i % 2 == 0 else "remove", pair)
        return time.perf_counter() - started

    before = stream(streams[0])
    started = time.perf_counter()
    with ThreadPoolExecutor(pairs) as workers:
        list(workers.map(lambda s: _in_thread(stream, s), streams))
    together = time.perf_counter() - started
    after = stream(streams[-1])  # alone again: the machine's load drifts, so average both sides
    return (before + after) / 2, together


def _warm(reg: BenchRegistry, pair: Pair) -> None:
    for site in (pair.owner, pair.requester):
        list_links(site.routers.get().name)


def _in_thread(func, *args):
    try:
        return func(*args)
    finally:
        connection.close()


class _Sealer:
    """Seals the ledger every `every` seconds on a thread of its own (a worker's chores, more often)."""

    def __init__(self, every: float) -> None:
        self.every, self.rounds, self.entries = every, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sealer", daemon=True)

    def __enter__(self) -> _Sealer:
        if self.every > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every):
                done = ledger.seal()
                self.rounds, self.entries = self.rounds + 1, self.entries + done.audit + done.operations
        finally:
            connection.close()


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench ops", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=100, help="operations measured for the overhead (a)")
    parser.add_argument("--warm-adds", type=int, default=2, help="warm adds averaged for (b)")
    parser.add_argument("--eclipse-scale", type=float, default=1.0, help="Eclipse timing scale for (b); 1 = seed")
    parser.add_argument("--pairs", type=int, default=10, help="site pairs (2 routers each) for (c)")
    parser.add_argument("--ops-per-router", type=int, default=10)
    parser.add_argument(
        "--parallel-delays",
        default="--timing-scale 1 --connect-delay 0.05 --login-delay 0.1 "
        "--command-delay 0.1 --mutating-delay 0.3 --jitter 0",
        help="simulator timing options for (c)",
    )
    parser.add_argument("--parts", default="abc", help="which measurements to run (default abc)")
    parser.add_argument("--ledger", type=float, default=0.0, metavar="SECONDS",
                        help="seal the ledger on a thread of its own every SECONDS while measuring, as the workers' "
                        "chores do every FLEXZONE_LEDGER_SEAL_EVERY (0: not at all)")
    args = parser.parse_args(argv)
    p50 = p95 = ratio = efficiency = float("nan")
    with BenchRegistry() as reg, _Sealer(args.ledger) as sealer:
        print(f"load average at start: {_load()} on {os.cpu_count()} CPUs", flush=True)
        if "a" in args.parts:
            overhead = measure_overhead(reg, args.ops)
            p50, p95 = overhead["journal_p50"], overhead["journal_p95"]
            print(
                f"(a) framework overhead per op (the journal's total_ms - router_ms), {args.ops} ops, 0 ms router "
                f"delay: p50 {p50:.1f} ms, p95 {p95:.1f} ms; seen by the caller (wall time of submit + execute, "
                f"both commits included, - router_ms): p50 {overhead['p50']:.1f} ms, p95 {overhead['p95']:.1f} ms "
                f"(router time p50 {overhead['router_p50']:.1f} ms; CPU used by this thread per op p50 "
                f"{overhead['cpu_p50']:.1f} ms)",
                flush=True,
            )
        if "b" in args.parts:
            cold, warm = measure_warm_cold(reg, args.warm_adds, args.eclipse_scale)
            ratio = warm / cold
            print(
                f"(b) Eclipse profile (scale {args.eclipse_scale}), add on two routers: cold {cold / 1000:.2f} s, "
                f"warm {warm / 1000:.2f} s, warm/cold {ratio:.3f}",
                flush=True,
            )
        if "c" in args.parts:
            alone, together = measure_parallel(reg, args.pairs, args.ops_per_router, args.parallel_delays.split())
            efficiency = alone / together
            print(
                f"(c) {args.pairs} site pairs = {2 * args.pairs} routers x {args.ops_per_router} ops each: "
                f"one pair alone {alone:.2f} s, all at once {together:.2f} s, efficiency {efficiency:.2f}",
                flush=True,
            )
    print(f"load average at end: {_load()}")
    if args.ledger:
        print(f"ledger: sealed every {args.ledger:g} s, {sealer.rounds} seals, {sealer.entries} entries")
    print(
        f"overhead_p50_ms={p50:.1f} overhead_p95_ms={p95:.1f} warm_cold_ratio={ratio:.3f} "
        f"parallel_efficiency={efficiency:.2f}"
    )
    return 0

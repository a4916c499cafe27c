"""`effective`: effective transfer rate vs file size once link setup and teardown are counted (Figure 15).

    effective rate = file size / (setup + transfer time + teardown)

The transfer time is measured through the SAN path of the bench (write, then read back). Setup and
teardown are either given (`Plan.setup_s`/`teardown_s`) or measured end to end on a pair of simulated
routers with the flexzone drivers: setup runs from the start of the add (connect, log in, add the link on
router A and router B concurrently, save) until a connection through both routers' data-path relays
reaches the target; teardown runs from the start of the remove until router A's data path refuses
connections. The simulators keep the seed's timing (about 12 s to log in, 2.7 s per configuration
command) scaled by `timing_scale`; the measured figures are reported as measured, with the scale.

What this does not yet include: the registry and the REST/operations service in front of the drivers,
and the WAN delay on the management sessions. When the service is up, give its measured add/remove
times (the operations journal's phase timings) as `setup_s`/`teardown_s`.
"""

from __future__ import annotations

import socket
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from lab.experiments.base import (
    Bench,
    Budget,
    Outcome,
    Progress,
    markdown_table,
    measured,
    size_label,
    write_csv,
    write_json,
    xdd,
)
from lab.plots import Panel, Series, figure
from lab.xdd import MIB, XddRun

GREETING = b"flexzone-effective\n"
A_DATA, B_DATA = "198.18.1.11", "198.18.2.11"  # configuration values only: the links name the peers' addresses


@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]
    repetitions: int
    setup_repetitions: int
    timing_scale: float
    setup_s: float | None = None
    teardown_s: float | None = None
    platform: str = "mcdata_eclipse"
    budget_s: float = 120.0

    @property
    def target_bytes(self) -> int:
        return max(self.sizes)


QUICK = Plan(sizes=(1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB), repetitions=1, setup_repetitions=2,
             timing_scale=0.05, budget_s=90)
FULL = Plan(sizes=(1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB, 2048 * MIB), repetitions=3,
            setup_repetitions=5, timing_scale=1.0, budget_s=1800)


class _Greeter:
    """Stands in for the storage target while timing setup: answers every connection with a greeting."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(GREETING)

    def close(self) -> None:
        self.sock.close()


def _path_works(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=2) as conn:
            return conn.recv(len(GREETING)) == GREETING
    except OSError:
        return False


def _wait(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the data path did not change state in time")
        time.sleep(0.01)


def measure_setup(plan: Plan, out: TextIO) -> list[dict[str, float]]:
    """Time add (until data flows through both routers) and remove (until router A refuses), per repetition."""
    from lab.datapath import DataPathRelay
    from routers.drivers import get_driver
    from routers.drivers.base import LinkSpec, RouterTarget
    from routers.platforms import Platform, Transport
    from simulators.server import SimRouter

    greeter = _Greeter()
    sims = [SimRouter(plan.platform, telnet=("127.0.0.1", 0), scale=plan.timing_scale, hostname=name, seed=i)
            for i, name in enumerate(("router-a", "router-b"))]
    relays: list[DataPathRelay] = []
    try:
        for sim in sims:
            sim.start()
        relay_b = DataPathRelay(("127.0.0.1", 0), greeter.address)
        b_address = relay_b.start()
        relay_a = DataPathRelay(("127.0.0.1", 0), b_address)
        a_address = relay_a.start()
        relays += [relay_b, relay_a]
        relay_a.follow(sims[0], peer=B_DATA)
        relay_b.follow(sims[1], peer=A_DATA)
        specs = [LinkSpec(port=3, zone=17, remote_ip=B_DATA, local_ip=A_DATA),
                 LinkSpec(port=3, zone=17, remote_ip=A_DATA, local_ip=B_DATA)]
        targets = [RouterTarget(Platform(plan.platform), *sim.addresses["telnet"], Transport.TELNET, "admin",
                                "password", name=f"router-{i}") for i, sim in enumerate(sims)]

        def change(index: int, add: bool) -> None:
            driver = get_driver(targets[index])
            driver.connect()
            try:
                (driver.add_link if add else driver.remove_link)(specs[index])
                driver.save_config()
            finally:
                driver.close()

        timings = []
        with ThreadPoolExecutor(2) as pool:
            for rep in range(1, plan.setup_repetitions + 1):
                started = time.monotonic()
                list(pool.map(lambda i: change(i, True), range(2)))
                _wait(lambda: _path_works(a_address), 30)
                setup = time.monotonic() - started
                started = time.monotonic()
                list(pool.map(lambda i: change(i, False), range(2)))
                _wait(lambda: not relay_a.link_up, 30)
                teardown = time.monotonic() - started
                print(f"effective: setup {setup:.2f} s, teardown {teardown:.2f} s (rep {rep}, timing scale "
                      f"{plan.timing_scale:g})", file=out, flush=True)
                timings.append({"repetition": rep, "setup_s": setup, "teardown_s": teardown})
        return timings
    finally:
        for relay in relays:
            relay.stop()
        for sim in sims:
            sim.stop()
        greeter.close()


def data_path_activation() -> tuple[float, float]:
    """Seconds from a link change to data flowing through routers A and B (up) / being refused (down)."""
    from lab.datapath import DataPathRelay

    greeter = _Greeter()
    relay_b = DataPathRelay(("127.0.0.1", 0), greeter.address)
    b_address = relay_b.start()
    relay_a = DataPathRelay(("127.0.0.1", 0), b_address)
    a_address = relay_a.start()
    try:
        started = time.monotonic()
        relay_b.set_link(True)
        relay_a.set_link(True)
        _wait(lambda: _path_works(a_address), 10)
        up = time.monotonic() - started
        started = time.monotonic()
        relay_a.set_link(False)
        relay_b.set_link(False)
        _wait(lambda: not _path_works(a_address), 10)
        return up, time.monotonic() - started
    finally:
        relay_a.stop()
        relay_b.stop()
        greeter.close()


def measure_setup_across_wan(bench: Bench, plan: Plan, out: TextIO) -> list[dict[str, float]]:
    """In the lab: the far router's add and remove sessions from the primary site, across the emulated WAN.

    The service configures both routers at once; the near one (at the primary site, like the service) has
    no WAN between them, so the far router's session is the critical path. The relays' own reaction to a
    link change is measured on loopback and added, so setup still ends when data can flow.
    """
    from lab.experiments.mgmt import RemoteRouter, Session, probe

    lab = bench.lab  # type: ignore[attr-defined]
    session = Session(plan.platform, plan.timing_scale)
    with RemoteRouter(lab, session, name="effective-sim") as router:
        rows, _ = probe(lab, router, plan.setup_repetitions, zone_base=500, ops="add,remove")
    up_s, down_s = data_path_activation()
    local = {"setup_s": up_s, "teardown_s": down_s}
    timings = []
    for rep in range(1, plan.setup_repetitions + 1):
        add = next((r for r in rows if r["rep"] == rep and r["op"] == "add" and r["ok"]), None)
        remove = next((r for r in rows if r["rep"] == rep and r["op"] == "remove" and r["ok"]), None)
        if add and remove:
            timings.append({"repetition": rep, "setup_s": add["seconds"] + local["setup_s"],
                            "teardown_s": remove["seconds"] + local["teardown_s"],
                            "far_router_add_s": add["seconds"], "far_router_remove_s": remove["seconds"],
                            "data_path_activation_s": local["setup_s"]})
            print(f"effective: setup {timings[-1]['setup_s']:.2f} s, teardown {timings[-1]['teardown_s']:.2f} s "
                  f"(rep {rep}, across the WAN)", file=out, flush=True)
    if not timings:
        raise RuntimeError("no add/remove succeeded across the WAN: " + "; ".join(r["error"] for r in rows))
    return timings


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    budget = Budget(plan.budget_s)
    if plan.setup_s is not None and plan.teardown_s is not None:
        timings = [{"repetition": 0, "setup_s": plan.setup_s, "teardown_s": plan.teardown_s}]
        source = "configured"
    elif getattr(bench, "lab", None) is not None:
        timings = measure_setup_across_wan(bench, plan, out)
        source = (f"measured from the primary site on a simulated {plan.platform} router across the WAN "
                  f"(profile {bench.profile}), timing scale {plan.timing_scale:g}, plus the data path's activation")
    else:
        timings = measure_setup(plan, out)
        source = f"measured on simulated {plan.platform} routers on loopback, timing scale {plan.timing_scale:g}"
    setup = statistics.median(t["setup_s"] for t in timings)
    teardown = statistics.median(t["teardown_s"] for t in timings)
    link = bench.raw_link_mb_s()
    steps = [(size, rep) for size in plan.sizes for rep in range(1, plan.repetitions + 1)]
    progress = Progress([2 * s / 1e8 + 0.6 for s, _ in steps], out, label="effective ")
    rows: list[dict[str, Any]] = []
    skipped = budget.skipped
    guess = 100.0
    for size, rep in steps:
        estimate = 2 * size / 1e6 / guess + 0.6
        if not budget.admit(estimate, f"{size_label(size)} rep {rep}", progress):
            continue
        progress.step(f"san {size_label(size)} rep {rep}")
        rates = []
        for op in ("write", "read"):
            run_ = XddRun(op, min(size, MIB), size)
            result, valid, reasons = measured(bench, partial(xdd, bench, "san", run_, expected_mb_s=guess))
            transfer_s = size / (result.mb_per_s * 1e6) if result.mb_per_s else float("inf")
            rows.append({"where": bench.where, "profile": bench.profile, "op": op, "size_bytes": size,
                         "repetition": rep, "transfer_mb_s": result.mb_per_s, "transfer_s": transfer_s,
                         "setup_s": setup, "teardown_s": teardown,
                         "effective_mb_s": size / 1e6 / (setup + transfer_s + teardown),
                         "link_mb_s": round(link, 3), "valid": valid, "health": "; ".join(reasons)})
            rates.append(max(result.mb_per_s, 0.05))
        guess = min(rates)
        progress.finished()
    return _write(bench, plan, folder, rows, timings, source, link, skipped, command)


def _write(bench: Bench, plan: Plan, folder: Path, rows: list[dict[str, Any]], timings: list[dict[str, float]],
           source: str, link: float, skipped: list[str], command: str) -> Outcome:
    setup = statistics.median(t["setup_s"] for t in timings)
    teardown = statistics.median(t["teardown_s"] for t in timings)
    write_csv(folder / "effective.csv", rows)
    write_csv(folder / "setup.csv", timings)
    write_json(folder / "effective.json", {"plan": asdict(plan), "environment": bench.environment(),
                                           "setup_source": source, "setup_s": setup, "teardown_s": teardown,
                                           "timings": timings, "link_mb_s": link, "rows": rows,
                                           "skipped": skipped})
    panels = []
    table = []
    for op in ("write", "read"):
        sizes = sorted({r["size_bytes"] for r in rows if r["op"] == op})
        eff = [statistics.median(r["effective_mb_s"] for r in rows if r["op"] == op and r["size_bytes"] == s)
               for s in sizes]
        raw = [statistics.median(r["transfer_mb_s"] for r in rows if r["op"] == op and r["size_bytes"] == s)
               for s in sizes]
        series = [Series("effective rate", sizes, eff), Series("transfer rate alone", sizes, raw, style="--s")]
        panels.append(Panel(f"{op}s: setup {setup:.2f} s + teardown {teardown:.2f} s counted", series,
                            {"raw TCP link (iperf3)": link}, xlabel="file size (bytes)", logy=True))
        table += [[op, size_label(s), r, e, f"{e / r:.0%}" if r else "-"] for s, r, e in zip(sizes, raw, eff,
                                                                                             strict=True)]
    plot = figure(folder / "effective.png", panels, f"Effective rate vs file size ({bench.where}, WAN {bench.profile})")
    notes = [f"Setup {setup:.2f} s and teardown {teardown:.2f} s (median of {len(timings)}; {source}).",
             "effective = size / (setup + transfer + teardown); MB/s = 10^6 bytes/s."]
    invalid = sum(1 for r in rows if not r["valid"])
    if invalid:
        notes.append(f"{invalid} passes were spoiled by the emulator (marked invalid in the CSV).")
    return Outcome("effective", "Effective transfer rate with setup and teardown counted (Figure 15)", folder,
                   command, markdown_table(["op", "file size", "transfer MB/s", "effective MB/s", "effective/transfer"],
                                           table), [plot], notes, skipped, valid=not invalid and bool(rows))

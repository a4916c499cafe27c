"""`filesizes`: whole-file write and read rates from 1 MB to 2 GB, with repetitions, by path.

Paths: `local-disk` (O_DIRECT on this host's disk: the local baseline), `san` (through both routers and
the WAN), `san-tls` (the same with the router-to-router hop encrypted) and `target` (fio next to nbdkit:
the raw speed of the target). Each repetition writes the whole file and then reads it back (reads lag
writes) with sequential records of min(file size, 1 MiB). Sizes that would not fit the remaining time
budget (judged from the rate measured at the previous size) are skipped and listed, so the run is bounded.
"""

from __future__ import annotations

import statistics
import sys
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

ALL_PATHS = ("local-disk", "target", "san", "san-tls")
LABELS = {"local-disk": "local disk (O_DIRECT)", "target": "target direct (no WAN)", "san": "SAN link",
          "san-tls": "SAN link, TLS data path"}


@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]
    repetitions: int
    paths: tuple[str, ...] = ALL_PATHS
    record: int = MIB
    queue_depth: int = 1
    budget_s: float = 120.0

    @property
    def target_bytes(self) -> int:
        return max(self.sizes)


QUICK = Plan(sizes=(1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB), repetitions=2, budget_s=120)
FULL = Plan(sizes=(1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB, 2048 * MIB), repetitions=5,
            budget_s=3600)


def _run(plan: Plan, size: int, op: str) -> XddRun:
    record = min(size, plan.record)
    return XddRun(op, record, size, "sequential", plan.queue_depth)


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    budget = Budget(plan.budget_s)
    steps = [(size, path, rep) for size in plan.sizes for path in plan.paths for rep in range(1, plan.repetitions + 1)]
    rate_guess = {path: 100.0 for path in plan.paths}
    progress = Progress([2 * s / 1e6 / 100.0 + 0.6 for s, _, _ in steps], out, label="filesizes ")
    print(f"filesizes: {len(steps)} write+read pairs on {bench.where} (profile {bench.profile}), "
          f"budget {plan.budget_s:.0f} s", file=out, flush=True)
    link = bench.raw_link_mb_s()
    print(f"filesizes: raw TCP rate of the link {link:.1f} MB/s", file=out, flush=True)
    rows: list[dict[str, Any]] = []
    skipped = budget.skipped
    for size, path, rep in steps:
        estimate = 2 * size / 1e6 / max(rate_guess[path], 0.05) + 0.6
        name = f"{path} {size_label(size)} rep {rep}"
        if not budget.admit(estimate, name, progress):
            continue
        progress.step(name)
        rates = []
        for op in ("write", "read"):
            result, valid, reasons = measured(
                bench, partial(xdd, bench, path, _run(plan, size, op), expected_mb_s=rate_guess[path]))
            rates.append(max(result.mb_per_s, 0.05))
            rows.append({"where": bench.where, "profile": bench.profile, "path": path, "repetition": rep,
                         **result.to_dict(), "link_mb_s": round(link, 3), "valid": valid,
                         "health": "; ".join(reasons)})
        rate_guess[path] = min(rates)
        progress.finished()
    if skipped:
        print(f"filesizes: time budget exhausted, {len(skipped)} write+read pairs skipped", file=out, flush=True)
    return _write(bench, plan, folder, rows, skipped, link, command)


def _stats(rows: list[dict[str, Any]], path: str, op: str, size: int) -> tuple[float, float, float] | None:
    values = [r["mb_per_s"] for r in rows if r["path"] == path and r["op"] == op and r["size_bytes"] == size]
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def _write(bench: Bench, plan: Plan, folder: Path, rows: list[dict[str, Any]], skipped: list[str], link: float,
           command: str) -> Outcome:
    write_csv(folder / "filesizes.csv", rows)
    write_json(folder / "filesizes.json", {"plan": asdict(plan), "environment": bench.environment(),
                                           "link_mb_s": link, "rows": rows, "skipped": skipped})
    panels = []
    for op in ("write", "read"):
        series = []
        for path in plan.paths:
            stats_by_size = [(s, _stats(rows, path, op, s)) for s in plan.sizes]
            points = [(s, st) for s, st in stats_by_size if st is not None]
            if points:
                series.append(Series(LABELS[path], [s for s, _ in points], [st[0] for _, st in points],
                                     low=[st[1] for _, st in points], high=[st[2] for _, st in points],
                                     style="--s" if path in ("local-disk", "target") else "-o"))
        panels.append(Panel(f"{op}s (median of {plan.repetitions}, bars min-max)", series,
                            {"raw TCP link (iperf3)": link}, xlabel="file size (bytes)"))
    plot = figure(folder / "filesizes.png", panels,
                  f"Whole-file transfer rate vs file size ({bench.where}, WAN {bench.profile})")
    header = ["op", "file size", *[LABELS[p] for p in plan.paths], "raw link"]
    table = []
    for op in ("write", "read"):
        for size in plan.sizes:
            stats = [_stats(rows, p, op, size) for p in plan.paths]
            if all(s is None for s in stats):
                continue
            table.append([op, size_label(size), *["-" if s is None else s[0] for s in stats], link])
    invalid = sum(1 for r in rows if not r["valid"])
    notes = ["MB/s = 10^6 bytes/s, median over repetitions; each repetition writes the file, then reads it back.",
             f"Records of min(file size, {size_label(plan.record)}), queue depth {plan.queue_depth}.",
             "local disk: fio psync with O_DIRECT on this machine's disk, bypassing its page cache (a cache below "
             "a virtual disk, in the hypervisor, is out of reach and may flatter it)."]
    tls = [_stats(rows, "san-tls", "read", s) for s in plan.sizes]
    plain = [_stats(rows, "san", "read", s) for s in plan.sizes]
    pairs = [(t[0], p[0]) for t, p in zip(tls, plain, strict=True) if t and p and p[0] > 0]
    if pairs:
        notes.append(f"TLS on the data path keeps {statistics.fmean(t / p for t, p in pairs):.0%} of the plain "
                     "SAN read rate (mean over sizes).")
    if invalid:
        notes.append(f"{invalid} passes were spoiled by the emulator (marked invalid in the CSV).")
    return Outcome("filesizes", "Transfer rate vs file size: SAN link vs local disk, with and without encryption",
                   folder, command, markdown_table(header, table), [plot], notes, skipped,
                   valid=not invalid and bool(rows))

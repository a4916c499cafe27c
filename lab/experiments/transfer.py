"""`transfer`: xdd-style write and read rates vs record size for several file sizes (the paper's Figures 3-10).

For every file size, access pattern (sequential, random) and record size, one write pass of the whole
extent is followed by a read pass of the same extent (reads lag writes), through the SAN path
(primary host -> router A -> WAN -> router B -> storage). The same sweep is run once against the
target directly (no WAN, no routers) for the largest file size: the raw speed of the target at each
record size. The raw TCP rate of the link (iperf3) is measured once. Each pass is bounded by a time
limit (xdd -timelimit), so a slow record size cannot hold the run hostage; a pass that hit the limit
is marked `truncated` (its rate is still a rate).
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
from lab.xdd import MIB, XddRun, prefill

KIB = 1024


@dataclass(frozen=True)
class Plan:
    file_sizes: tuple[int, ...]
    records: tuple[int, ...]
    patterns: tuple[str, ...] = ("sequential", "random")
    queue_depth: int = 1
    time_limit_s: float = 2.0
    passes: int = 1
    budget_s: float = 180.0

    @property
    def target_bytes(self) -> int:
        return max(self.file_sizes)


QUICK = Plan(file_sizes=(8 * MIB, 32 * MIB), records=(4 * KIB, 64 * KIB, 1 * MIB), time_limit_s=2.0, budget_s=150)
FULL = Plan(file_sizes=(64 * MIB, 512 * MIB, 2048 * MIB),
            records=(4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB),
            time_limit_s=20.0, passes=2, budget_s=3600)


@dataclass(frozen=True)
class Cell:
    path: str
    file_size: int
    record: int
    pattern: str
    op: str
    pass_no: int

    def run(self, plan: Plan) -> XddRun:
        return XddRun(self.op, self.record, self.file_size, self.pattern, plan.queue_depth, plan.time_limit_s)


def guess_mb_s(record: int) -> float:
    """A rough rate for estimates (ETA, budget): small records are per-request latency bound."""
    return min(250.0, record / 1e6 / 0.0003)


def estimate(cell: Cell, plan: Plan) -> float:
    return min(cell.file_size / 1e6 / guess_mb_s(cell.record), plan.time_limit_s) + 0.5


def cells(plan: Plan) -> list[Cell]:
    out = []
    # The SAN sweep first (a budget cut then spares the main result); the target's own speed is measured
    # on the largest extent, as short passes time poorly.
    for path, sizes in (("san", plan.file_sizes), ("target", (max(plan.file_sizes),))):
        for size in sizes:
            for pattern in plan.patterns:
                for record in plan.records:
                    if record > size:
                        continue
                    for pass_no in range(1, plan.passes + 1):
                        for op in ("write", "read"):
                            out.append(Cell(path, size, record, pattern, op, pass_no))
    return out


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    budget = Budget(plan.budget_s)
    todo = cells(plan)
    progress = Progress([estimate(c, plan) for c in todo], out, label="transfer ")
    print(f"transfer: {len(todo)} passes on {bench.where} (profile {bench.profile}), budget {plan.budget_s:.0f} s",
          file=out, flush=True)
    link = bench.raw_link_mb_s()
    print(f"transfer: raw TCP rate of the link {link:.1f} MB/s", file=out, flush=True)
    # Reads lag writes: the whole extent holds written data before any read pass (and every read pass
    # follows the write pass of the same extent).
    prefill(bench.place("target"), bench.uri("target"), plan.target_bytes)
    rows: list[dict[str, Any]] = []
    skipped = budget.skipped
    for cell in todo:
        est = estimate(cell, plan)
        name = (f"{cell.path} {size_label(cell.file_size)} {cell.pattern} {cell.op} "
                f"record {size_label(cell.record)} pass {cell.pass_no}")
        if not budget.admit(est, name, progress):
            continue
        progress.step(name)
        result, valid, reasons = measured(
            bench, partial(xdd, bench, cell.path, cell.run(plan), expected_mb_s=guess_mb_s(cell.record)))
        progress.finished()
        rows.append({"where": bench.where, "profile": bench.profile, "path": cell.path, "pass": cell.pass_no,
                     **result.to_dict(), "link_mb_s": round(link, 3), "valid": valid, "health": "; ".join(reasons)})
    if skipped:
        print(f"transfer: time budget exhausted, {len(skipped)} passes skipped", file=out, flush=True)
    return _write(bench, plan, folder, rows, skipped, link, command)


def _mean(rows: list[dict[str, Any]], **match: Any) -> float | None:
    values = [r["mb_per_s"] for r in rows if all(r[k] == v for k, v in match.items())]
    return statistics.fmean(values) if values else None


def _series(label: str, rows: list[dict[str, Any]], plan: Plan, style: str = "-o", **match: Any) -> Series:
    points = [(r, _mean(rows, record_bytes=r, **match)) for r in plan.records]
    kept = [(r, v) for r, v in points if v is not None]
    return Series(label, [r for r, _ in kept], [v for _, v in kept], style=style)


def _write(bench: Bench, plan: Plan, folder: Path, rows: list[dict[str, Any]], skipped: list[str], link: float,
           command: str) -> Outcome:
    write_csv(folder / "transfer.csv", rows)
    write_json(folder / "transfer.json", {"plan": asdict(plan), "environment": bench.environment(),
                                          "link_mb_s": link, "rows": rows, "skipped": skipped})
    plots = []
    for pattern in plan.patterns:
        panels = []
        for op in ("write", "read"):
            series = [_series(f"SAN, file {size_label(size)}", rows, plan, path="san", size_bytes=size,
                              pattern=pattern, op=op) for size in plan.file_sizes]
            series.append(_series("target direct (no WAN)", rows, plan, style="--s", path="target", pattern=pattern,
                                  op=op))
            panels.append(Panel(f"{pattern} {op}s", [s for s in series if s.x], {"raw TCP link (iperf3)": link},
                                xlabel="record size (bytes per request)"))
        plots.append(figure(folder / f"transfer-{pattern}.png", panels,
                            f"xdd-style {pattern} transfers vs record size ({bench.where}, WAN {bench.profile}, "
                            f"qd {plan.queue_depth})"))
    header = ["pattern", "op", "record", *[f"SAN {size_label(s)}" for s in plan.file_sizes], "target direct",
              "raw link"]
    table_rows = []
    for pattern in plan.patterns:
        for op in ("write", "read"):
            for record in plan.records:
                san = [_mean(rows, path="san", size_bytes=s, record_bytes=record, pattern=pattern, op=op)
                       for s in plan.file_sizes]
                target = _mean(rows, path="target", record_bytes=record, pattern=pattern, op=op)
                if all(v is None for v in san) and target is None:
                    continue
                table_rows.append([pattern, op, size_label(record), *["-" if v is None else v for v in san],
                                   "-" if target is None else target, link])
    invalid = sum(1 for r in rows if not r["valid"])
    notes = [f"MB/s = 10^6 bytes/s; queue depth {plan.queue_depth}; time limit {plan.time_limit_s:g} s per pass; "
             f"{plan.passes} pass(es) averaged.",
             f"{sum(1 for r in rows if r['truncated'])} of {len(rows)} passes hit the time limit (rate over the "
             "part transferred)."]
    if invalid:
        notes.append(f"{invalid} passes were spoiled by the emulator (marked invalid in the CSV).")
    return Outcome("transfer", "Block transfer rate vs record size (Figures 3-10)", folder, command,
                   markdown_table(header, table_rows), plots, notes, skipped, valid=not invalid and bool(rows))

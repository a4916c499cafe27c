"""`latency`: add / list / remove time vs WAN round-trip time (the paper's Figures 11-13), router phase.

For each round trip (0, 20, 40, 80, 160 ms; half of it each way), a fresh simulated router at the remote
site is driven from the primary site through the emulated WAN, and every operation (session set-up,
commands, save) is timed; `router_seconds` is the drivers' own account of the time spent waiting on the
router. Session-oriented CLIs cost a number of round trips per operation (the research measured ~24 for
a 20-command session), so the time grows linearly with the RTT; the slope is fitted and reported.

Not yet here: the registry and invocation phases of the split, which need the REST service at the
primary site (then: time the API request, and read the operation's phase timings from its journal).
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from netem.experiments.base import Bench, Budget, Outcome, Progress, markdown_table, write_csv, write_json
from netem.experiments.mgmt import RemoteRouter, Session, agreement, probe
from netem.plots import Panel, Series, figure

OPS = ("add", "list", "remove")


@dataclass(frozen=True)
class Plan:
    rtts_ms: tuple[float, ...]
    repetitions: int
    session: Session
    budget_s: float

    @property
    def target_bytes(self) -> int:
        return 1 << 20


QUICK = Plan(rtts_ms=(0, 40, 160), repetitions=2, session=Session(timing_scale=0.05), budget_s=150)
FULL = Plan(rtts_ms=(0, 20, 40, 80, 160), repetitions=20, session=Session(timing_scale=0.2), budget_s=3600)


def _profile(rtt_ms: float) -> Any:
    from netem.profiles import Impairment, LinkProfile

    return LinkProfile.symmetric(f"rtt{rtt_ms:g}", Impairment(delay_ms=rtt_ms / 2))


def fit_slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a + b x; returns (a, b)."""
    if len(xs) < 2:
        return (ys[0] if ys else 0.0), 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    lab = getattr(bench, "lab", None)
    if lab is None:
        raise RuntimeError("latency needs the lab (root, --where lab): delay is emulated between namespaces")
    budget = Budget(plan.budget_s)
    per_op = 3 * plan.session.timing_scale * 20 + 1
    progress = Progress([plan.repetitions * len(OPS) * (per_op + r / 1000 * 24) + 3 for r in plan.rtts_ms], out,
                        label="latency ")
    rows: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []
    skipped: list[str] = []
    try:
        for i, rtt in enumerate(plan.rtts_ms):
            estimate = progress.estimates[i]
            if not budget.allows(estimate):
                skipped.append(f"rtt {rtt:g} ms")
                progress.finished()
                continue
            progress.step(f"RTT {rtt:g} ms: {plan.repetitions} x add/list/remove")
            lab.impair("primary", "remote", _profile(rtt))
            with RemoteRouter(lab, plan.session) as router, lab.measurement() as health:
                result, final = probe(lab, router, plan.repetitions)
            for row in result:
                rows.append({"rtt_ms": rtt, **row, "valid": health.valid, "health": "; ".join(health.reasons)})
            points.append({"rtt_ms": rtt, "agree": agreement(final), "final": final, "valid": health.valid})
            progress.finished()
    finally:
        lab.clear()
    return _write(bench, plan, folder, rows, points, skipped, command)


def _write(bench: Bench, plan: Plan, folder: Path, rows: list[dict[str, Any]], points: list[dict[str, Any]],
           skipped: list[str], command: str) -> Outcome:
    write_csv(folder / "latency.csv", rows)
    write_json(folder / "latency.json", {"plan": asdict(plan), "environment": bench.environment(), "rows": rows,
                                         "points": points, "skipped": skipped})
    series, table, notes = [], [], []
    for op in OPS:
        rtts = [p["rtt_ms"] for p in points]
        med = []
        for rtt in rtts:
            values = [r["seconds"] for r in rows if r["op"] == op and r["rtt_ms"] == rtt and r["ok"]]
            med.append(statistics.median(values) if values else float("nan"))
        kept = [(x, y) for x, y in zip(rtts, med, strict=True) if y == y]
        if kept:
            series.append(Series(f"{op} (median)", [x for x, _ in kept], [y for _, y in kept]))
            a, b = fit_slope([x for x, _ in kept], [y for _, y in kept])
            notes.append(f"{op}: {a:.2f} s + {b * 1000:.1f} ms per ms of RTT (= {b * 1000:.1f} round trips).")
        for rtt, value in zip(rtts, med, strict=True):
            router = [r["router_seconds"] for r in rows if r["op"] == op and r["rtt_ms"] == rtt and r["ok"]]
            fails = sum(1 for r in rows if r["op"] == op and r["rtt_ms"] == rtt and not r["ok"])
            table.append([op, f"{rtt:g}", value, statistics.median(router) if router else "-", fails])
    plot = figure(folder / "latency.png",
                  [Panel("operation time vs WAN round trip (router phase)", series, {}, xlabel="RTT (ms)",
                         ylabel="seconds", logx=False, byte_ticks=False)],
                  f"Add / list / remove vs RTT ({plan.session.platform} simulator, timing scale "
                  f"{plan.session.timing_scale:g})", columns=1)
    disagree = [p["rtt_ms"] for p in points if p["agree"] is False]
    notes.append("Registry/invocation phases: not measured yet (need the REST service); times are the router "
                 "phase as a service would see it (session set-up, commands, save).")
    if disagree:
        notes.append(f"Router and probe disagreed on the links held after RTT {disagree} ms.")
    invalid = sum(1 for p in points if not p["valid"])
    if invalid:
        notes.append(f"{invalid} points were spoiled by the emulator (marked invalid).")
    return Outcome("latency", "Operation time vs WAN latency (Figures 11-13, router phase)", folder, command,
                   markdown_table(["op", "RTT ms", "median s", "router s", "failures"], table), [plot], notes,
                   skipped, valid=not invalid and bool(rows))

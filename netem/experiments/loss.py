"""`loss`: success rate and time of add / list / remove vs packet loss (the paper's Figure 14), router phase.

Loss is applied to both directions of the WAN (so a request/reply exchange is lost with 1-(1-p)^2), over
a fixed round trip. At every loss rate a fresh simulated router at the remote site is driven from the
primary site; each operation has a bounded time (connect and command timeouts), so an operation that TCP
cannot complete counts as a failure instead of hanging the run. After every point the router's links are
read back in a fresh session and compared with what the probe believes it created (agreement check: a
lost reply to an applied add shows up here). The full run does >= 50 operations per point.

Not yet here: the same through the REST service (registry/router agreement from the registry's side).
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
    loss_pct: tuple[float, ...]
    repetitions: int  # add/list/remove cycles per point: 3 operations each
    rtt_ms: float
    session: Session
    budget_s: float

    @property
    def target_bytes(self) -> int:
        return 1 << 20


QUICK = Plan(loss_pct=(0, 6, 12, 30), repetitions=2, rtt_ms=20, session=Session(timing_scale=0.05, op_timeout=10),
             budget_s=180)
FULL = Plan(loss_pct=(0, 2, 4, 6, 8, 10, 12, 16, 20, 25, 30), repetitions=17, rtt_ms=20,
            session=Session(timing_scale=0.2, op_timeout=30), budget_s=5400)


def _profile(loss: float, rtt_ms: float) -> Any:
    from netem.profiles import Impairment, LinkProfile

    return LinkProfile.symmetric(f"loss{loss:g}", Impairment(delay_ms=rtt_ms / 2, loss_pct=loss))


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    lab = getattr(bench, "lab", None)
    if lab is None:
        raise RuntimeError("loss needs the lab (root, --where lab): loss is emulated between namespaces")
    budget = Budget(plan.budget_s)
    per_op = 3 * plan.session.timing_scale * 20 + 1 + plan.rtt_ms / 1000 * 24
    estimates = [plan.repetitions * len(OPS) * per_op * (1 + loss / 10) + 3 for loss in plan.loss_pct]
    progress = Progress(estimates, out, label="loss ")
    rows: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []
    skipped: list[str] = []
    try:
        for i, loss in enumerate(plan.loss_pct):
            if not budget.allows(estimates[i]):
                skipped.append(f"loss {loss:g} %")
                progress.finished()
                continue
            progress.step(f"loss {loss:g} % both ways, RTT {plan.rtt_ms:g} ms: {plan.repetitions * len(OPS)} ops")
            lab.impair("primary", "remote", _profile(loss, plan.rtt_ms))
            with RemoteRouter(lab, plan.session) as router, lab.measurement() as health:
                result, final = probe(lab, router, plan.repetitions)
            for row in result:
                rows.append({"loss_pct": loss, **row, "valid": health.valid, "health": "; ".join(health.reasons)})
            ok = sum(1 for r in result if r["ok"])
            points.append({"loss_pct": loss, "ops": len(result), "ok": ok, "success_rate": ok / len(result),
                           "agree": agreement(final), "final": final, "valid": health.valid})
            progress.finished()
    finally:
        lab.clear()
    return _write(bench, plan, folder, rows, points, skipped, command)


def _write(bench: Bench, plan: Plan, folder: Path, rows: list[dict[str, Any]], points: list[dict[str, Any]],
           skipped: list[str], command: str) -> Outcome:
    write_csv(folder / "loss.csv", rows)
    write_csv(folder / "loss-points.csv", [{k: v for k, v in p.items() if k != "final"} for p in points])
    write_json(folder / "loss.json", {"plan": asdict(plan), "environment": bench.environment(), "rows": rows,
                                      "points": points, "skipped": skipped})
    losses = [p["loss_pct"] for p in points]
    success = Series("success rate (%)", losses, [100 * p["success_rate"] for p in points])
    time_series = []
    table = []
    for op in OPS:
        med = []
        for loss in losses:
            values = [r["seconds"] for r in rows if r["op"] == op and r["loss_pct"] == loss and r["ok"]]
            med.append(statistics.median(values) if values else float("nan"))
        kept = [(x, y) for x, y in zip(losses, med, strict=True) if y == y]
        if kept:
            time_series.append(Series(f"{op} (median of successes)", [x for x, _ in kept], [y for _, y in kept]))
    for p in points:
        times = [r["seconds"] for r in rows if r["loss_pct"] == p["loss_pct"] and r["ok"]]
        table.append([f"{p['loss_pct']:g}", p["ops"], f"{100 * p['success_rate']:.0f}%",
                      statistics.median(times) if times else "-", max(times) if times else "-",
                      {True: "yes", False: "NO", None: "unread"}[p["agree"]]])
    plot = figure(folder / "loss.png", [
        Panel("success rate vs loss (both directions)", [success], {}, xlabel="loss per direction (%)",
              ylabel="% of operations", logx=False, byte_ticks=False),
        Panel("operation time vs loss", time_series, {}, xlabel="loss per direction (%)", ylabel="seconds",
              logx=False, byte_ticks=False),
    ], f"Operations under packet loss ({plan.session.platform} simulator, RTT {plan.rtt_ms:g} ms, timing scale "
       f"{plan.session.timing_scale:g})")
    failures: dict[str, int] = {}
    for r in rows:
        if not r["ok"]:
            kind = r["error"].split(":")[0]
            failures[kind] = failures.get(kind, 0) + 1
    notes = [f"Each point: {plan.repetitions} add/list/remove cycles; operation time limit "
             f"{plan.session.op_timeout:g} s (connect and command).",
             "Failures by kind: " + (", ".join(f"{k} {v}" for k, v in sorted(failures.items())) or "none") + "."]
    invalid = sum(1 for p in points if not p["valid"])
    if invalid:
        notes.append(f"{invalid} points were spoiled by the emulator (marked invalid).")
    return Outcome("loss", "Operation success and time vs packet loss (Figure 14, router phase)", folder, command,
                   markdown_table(["loss %", "ops", "success", "median s", "max s", "router/probe agree"], table),
                   [plot], notes, skipped, valid=not invalid and bool(rows))

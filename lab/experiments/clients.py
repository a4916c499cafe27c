"""`clients`: aggregate block throughput vs the number of concurrent clients (1 .. N).

Each client is one fio job with its own NBD connection and its own extent of the target (xdd -targets N),
all running at once through the SAN path; the aggregate is fio's group report (bytes of all jobs over
the common runtime). Each client writes its extent, then reads it back (reads lag writes). The same
is measured against the target directly (no WAN, no routers) as the raw speed of the target at that
concurrency.

Beside it, the registry/API operation rate vs concurrent clients (lab/experiments/api_clients.py): the real
REST service over mutual TLS on loopback, 1 .. N client threads with their own keep-alive sessions, shortened to
what is left of the budget; its table and plot join this experiment's in the report, its raw data sits beside
clients.csv as api_clients.{csv,json}.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from lab.experiments import api_clients
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


@dataclass(frozen=True)
class Plan:
    clients: tuple[int, ...]
    size_per_client: int
    record: int = MIB
    repetitions: int = 1
    paths: tuple[str, ...] = ("san", "target")
    time_limit_s: float = 10.0
    budget_s: float = 120.0
    api: api_clients.ApiPlan | None = None  # the registry/API half; QUICK and FULL have it

    @property
    def target_bytes(self) -> int:
        return max(self.clients) * self.size_per_client


QUICK = Plan(clients=(1, 2, 4), size_per_client=16 * MIB, time_limit_s=5, budget_s=90, api=api_clients.QUICK)
FULL = Plan(clients=(1, 2, 4, 8, 16), size_per_client=128 * MIB, repetitions=3, time_limit_s=30, budget_s=1800,
            api=api_clients.FULL)
LABELS = {"san": "SAN link (aggregate)", "target": "target direct (no WAN)", "san-tls": "SAN link, TLS"}


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    budget = Budget(plan.budget_s)
    steps = [(n, path, rep) for n in plan.clients for path in plan.paths for rep in range(1, plan.repetitions + 1)]
    # A pass takes what its bytes take at ~100 MB/s, at most its time limit: the budget admits a cell by this
    # estimate, as transfer and filesizes do by theirs.
    estimates = [2 * min(plan.time_limit_s, n * plan.size_per_client / 1e8) + 1 for n, _, _ in steps]
    progress = Progress(estimates, out, label="clients ")
    link = bench.raw_link_mb_s()
    rows: list[dict[str, Any]] = []
    skipped = budget.skipped
    for (n, path, rep), estimate in zip(steps, estimates, strict=True):
        name = f"{path} {n} clients rep {rep}"
        if not budget.admit(estimate, name, progress):
            continue
        progress.step(name)
        for op in ("write", "read"):
            run_ = XddRun(op, plan.record, plan.size_per_client, time_limit_s=plan.time_limit_s, clients=n)
            result, valid, reasons = measured(bench, partial(xdd, bench, path, run_, expected_mb_s=10))
            rows.append({"where": bench.where, "profile": bench.profile, "path": path, "repetition": rep,
                         **result.to_dict(), "link_mb_s": round(link, 3), "valid": valid,
                         "health": "; ".join(reasons)})
        progress.finished()
    write_csv(folder / "clients.csv", rows)
    write_json(folder / "clients.json", {"plan": asdict(plan), "environment": bench.environment(),
                                         "link_mb_s": link, "rows": rows, "skipped": skipped})

    def median(path: str, op: str, n: int) -> float | None:
        values = [r["mb_per_s"] for r in rows if r["path"] == path and r["op"] == op and r["clients"] == n]
        return statistics.median(values) if values else None

    panels = []
    for op in ("write", "read"):
        series = []
        for path in plan.paths:
            points = [(n, median(path, op, n)) for n in plan.clients]
            kept = [(n, v) for n, v in points if v is not None]
            if kept:
                series.append(Series(LABELS.get(path, path), [n for n, _ in kept], [v for _, v in kept],
                                     style="--s" if path == "target" else "-o"))
        panels.append(Panel(f"aggregate {op} rate", series, {"raw TCP link (iperf3)": link},
                            xlabel="concurrent clients", byte_ticks=False))
    plot = figure(folder / "clients.png", panels,
                  f"Aggregate throughput vs concurrent clients ({bench.where}, WAN {bench.profile}, "
                  f"{size_label(plan.size_per_client)} each)")
    table = [[op, n, *["-" if (v := median(p, op, n)) is None else v for p in plan.paths], link]
             for op in ("write", "read") for n in plan.clients]
    invalid = sum(1 for r in rows if not r["valid"])
    notes = [f"Each client: {size_label(plan.size_per_client)} in {size_label(plan.record)} records, its own NBD "
             f"connection; time limit {plan.time_limit_s:g} s per pass; MB/s = 10^6 bytes/s."]
    if invalid:
        notes.append(f"{invalid} passes were spoiled by the emulator (marked invalid in the CSV).")
    tables = [markdown_table(["op", "clients", *[LABELS.get(p, p) for p in plan.paths], "raw link"], table)]
    plots, api_ok = [plot], True
    if plan.api is not None:
        print(f"clients: registry/API operations, {', '.join(map(str, plan.api.clients))} clients", file=out,
              flush=True)
        try:
            api = api_clients.run(plan.api.within(budget.left()), folder)
        except Exception as exc:  # noqa: BLE001 - the block half stands on its own; the report says what failed
            api_ok = False
            notes.append(f"Registry/API operation rate: FAILED ({type(exc).__name__}: {str(exc)[:300]}).")
        else:
            api_ok = api.errors == 0
            tables.append("Registry/API operations over mutual TLS:\n\n" + api.table)
            plots.append(api.plot)
            notes += api.notes + ([f"API: {api.errors} requests failed (see api_clients.csv)."] if api.errors else [])
    return Outcome("clients", "Aggregate throughput vs concurrent clients", folder, command, "\n\n".join(tables),
                   plots, notes, skipped, valid=not invalid and bool(rows) and api_ok)

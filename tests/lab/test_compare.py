"""The report's comparison with the seed, from raw data written as the experiments write it.

Each fixture hands a few rows to the experiment's own writer (latency._write, loss._write, ...), which writes
the CSV, JSON and plots of a real run; the comparison then reads that folder back. No root, no lab, no
service: seconds.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lab.experiments import compare, effective, latency, loss, transfer
from lab.experiments.base import Outcome
from lab.experiments.compare import COMPARED, NOT_MEASURED, PAPER, SEED, Measured, SeedFigure, comparison, measured
from lab.experiments.report import write_report
from lab.experiments.service import ServiceSettings
from lab.xdd import MIB, XddResult


class PaperBench:
    """What the writers ask of a bench: its environment."""

    where = "lab"
    profile = "none"

    def environment(self) -> dict[str, Any]:
        return {"where": self.where, "profile": self.profile, "backend": "fixture"}


def operation(kind: str, rep: int, registry: float, invocation: float, router: float,
              state: str = "succeeded") -> dict[str, Any]:
    """A row as LabService.operation() returns it (milliseconds, the journal's split)."""
    total = registry + invocation + router
    return {"kind": kind, "rep": rep, "state": state, "attempts": 2, "error": "", "registry_ms": registry,
            "invocation_ms": invocation, "router_ms": router, "total_ms": total, "wall_ms": total + 20}


def latency_outcome(folder: Path, *, scale: float = 1.0, spoiled: tuple[float, ...] = ()) -> Outcome:
    """Adds at 0 and 40 ms RTT with per-operation sessions (and pooled ones, which the comparison ignores)."""
    plan = replace(latency.QUICK, rtts_ms=(0, 40), service=ServiceSettings(timing_scale=scale),
                   sessions=("per-operation", "pooled"))
    ops = {0: [operation("add", 1, 300, 700, 17000), operation("add", 2, 200, 800, 19000),
               operation("add", 3, 100, 400, 15500), operation("add", 4, 90, 10, 40000, state="failed"),
               operation("list", 1, 50, 50, 13000)],
           40: [operation("add", 1, 100, 100, 9000)]}
    rows, points = [], []
    for rtt, results in ops.items():
        valid = rtt not in spoiled
        for sessions in plan.sessions:
            for row in results if sessions == "per-operation" else [operation("add", 1, 10, 10, 80)]:
                rows.append({"rtt_ms": rtt, "sessions": sessions, "op": row["kind"], "ok": row["state"] == "succeeded",
                             "seconds": row["total_ms"] / 1000, **row, "valid": valid,
                             "health": "" if valid else "packets late"})
        points.append({"rtt_ms": rtt, "valid": valid, "health": [], "emulator": {}, "remeasured_after": []})
    folder.mkdir(parents=True, exist_ok=True)
    return latency._write(PaperBench(), plan, folder, rows, [], [], points, [], "lab all", {})


def loss_outcome(folder: Path, successes: dict[float, tuple[int, int]]) -> Outcome:
    """Per loss rate (ok, ops): that many add/list/remove operations, the first `ok` of them successful."""
    plan = replace(loss.QUICK, loss_pct=tuple(successes))
    rows, points = [], []
    for pct, (ok, ops) in successes.items():
        for i in range(ops):
            row = operation(loss.OPS[i % 3], 1 + i // 3, 50, 150, 2000, state="succeeded" if i < ok else "rolled_back")
            rows.append({"loss_pct": pct, "op": row["kind"], "ok": i < ok, "seconds": row["total_ms"] / 1000, **row,
                         "valid": True, "health": ""})
        points.append({"loss_pct": pct, "ops": ops, "ok": ok, "success_rate": ok / ops, "agree": True, "drift": {},
                       "final": {}, "repaired": False, "agree_after_repair": None, "valid": True, "health": "",
                       "remeasured_after": ""})
    folder.mkdir(parents=True, exist_ok=True)
    return loss._write(PaperBench(), plan, folder, rows, points, [], "lab all", {})


def xdd_row(op: str, size: int, record: int, mb_per_s: float, *, valid: bool = True) -> dict[str, Any]:
    result = XddResult(op, "sequential", record, size, 1, size, size / (mb_per_s * 1e6), mb_per_s, 1.0, 1.0, 2.0,
                       1.0, False)
    return {"where": "lab", "profile": "none", "path": "san", "pass": 1, **result.to_dict(), "link_mb_s": 110.0,
            "valid": valid, "health": "" if valid else "packets late"}


def transfer_outcome(folder: Path) -> Outcome:
    plan = replace(transfer.QUICK, file_sizes=(4 * MIB, 8 * MIB), records=(64 * 1024, MIB), patterns=("sequential",))
    rows = [xdd_row("write", 8 * MIB, MIB, 60.0), xdd_row("write", 8 * MIB, MIB, 66.0),
            xdd_row("read", 8 * MIB, MIB, 90.0), xdd_row("read", 8 * MIB, MIB, 500.0, valid=False),
            xdd_row("write", 8 * MIB, 64 * 1024, 20.0), xdd_row("read", 4 * MIB, MIB, 200.0),
            {**xdd_row("read", 8 * MIB, MIB, 300.0), "path": "target"}]
    folder.mkdir(parents=True, exist_ok=True)
    return transfer._write(PaperBench(), plan, folder, rows, [], 110.0, "lab all")


def effective_outcome(folder: Path) -> Outcome:
    plan = replace(effective.QUICK, sizes=(4 * MIB, 16 * MIB), repetitions=3, setup_s=1.0, teardown_s=0.5)
    timings = [{"repetition": 1, "setup_s": 1.0, "teardown_s": 0.5}]
    rows = []
    for size in plan.sizes:
        for rep, rate in enumerate((40.0, 50.0, 45.0), start=1):
            for op in ("write", "read"):
                transfer_s = size / (rate * 1e6)
                rows.append({"where": "lab", "profile": "none", "op": op, "size_bytes": size, "repetition": rep,
                             "transfer_mb_s": rate, "transfer_s": transfer_s, "setup_s": 1.0, "teardown_s": 0.5,
                             "effective_mb_s": size / 1e6 / (1.5 + transfer_s), "link_mb_s": 110.0, "valid": True,
                             "health": ""})
    folder.mkdir(parents=True, exist_ok=True)
    return effective._write(PaperBench(), plan, folder, rows, timings, "configured", 110.0, [], "lab all")


def table_rows(section: str) -> dict[str, list[str]]:
    """The comparison table's rows by quantity."""
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    return {row[0]: row for row in cells[1:]}


def test_every_seed_figure_has_a_unit_and_says_where_in_the_seed_it_comes_from():
    for figure in SEED.values():
        assert figure.unit and figure.source.startswith(PAPER)
    assert SEED["op_total"].text() == "~20 (< 20)" and SEED["san_read"].text() == "70–80"
    assert SEED["effective_read"].low is None and SEED["effective_read"].text() == "not published"


def test_a_bound_on_either_side_bounds_the_ratio_and_bounds_on_both_sides_give_none():
    rate = SeedFigure("rate", "MB/s", 50.0, "fixture", bound="≥")
    time_ = SeedFigure("time", "s", 10.0, "fixture", bound="≥", lower_is_better=True)
    assert compare.ratio(rate, Measured(100.0, "")) == "≤ 2.00×"  # the seed did at least 50: at most twice
    assert compare.ratio(time_, Measured(5.0, "")) == "≥ 2.00×"  # the seed took at least 10 s
    assert compare.ratio(time_, Measured(5.0, "", at_least=True)) == "— (bounds on both sides)"
    assert compare.ratio(replace(rate, bound=""), Measured(100.0, "", at_least=True)) == "≥ 2.00×"


def test_operation_time_is_the_median_add_at_the_lowest_round_trip_with_per_operation_sessions(tmp_path):
    ours = measured([latency_outcome(tmp_path / "latency")])
    # the three successful adds at 0 ms: totals 18.0, 20.0, 16.0 s; router 17.0, 19.0, 15.5 s; rest 1.0, 1.0, 0.5 s
    assert ours["op_total"].value == pytest.approx(18.0)
    assert ours["op_router"].value == pytest.approx(17.0)
    assert ours["op_rest"].value == pytest.approx(1.0)
    assert "add at 0 ms RTT, per-operation sessions, median of 3" in ours["op_total"].condition
    assert compare.ratio(SEED["op_total"], ours["op_total"]) == f"{20 / 18:.2f}×"
    # the seed gives its login alone: its router part is at least 12 s, its registry + invocation at most 8 s
    assert compare.ratio(SEED["op_router"], ours["op_router"]) == f"≥ {12 / 17:.2f}×"
    assert compare.ratio(SEED["op_rest"], ours["op_rest"]) == "≤ 8.00×"


def test_times_on_routers_faster_than_the_seeds_are_shown_without_a_ratio(tmp_path):
    ours = measured([latency_outcome(tmp_path / "latency", scale=0.05)])
    assert compare.ratio(SEED["op_total"], ours["op_total"]) == "— (routers simulated at 0.05 × the seed's timing)"
    assert compare.ratio(SEED["op_router"], ours["op_router"]).startswith("— (routers simulated at 0.05")
    assert compare.ratio(SEED["op_rest"], ours["op_rest"]) == "≤ 8.00×"  # flexzone's own time: no simulator in it


def test_a_point_the_emulator_spoiled_is_not_compared(tmp_path):
    ours = measured([latency_outcome(tmp_path / "latency", spoiled=(0,))])
    assert ours["op_total"].value == pytest.approx(9.2) and "add at 40 ms RTT" in ours["op_total"].condition


def test_loss_gives_success_at_four_percent_and_the_last_loss_before_a_failure(tmp_path):
    outcome = loss_outcome(tmp_path / "loss", {0: (6, 6), 4: (6, 6), 8: (6, 6), 12: (5, 6), 16: (6, 6)})
    ours = measured([outcome])
    assert ours["success_at_4"].value == 100 and "6 of 6 operations" in ours["success_at_4"].condition
    assert compare.ratio(SEED["success_at_4"], ours["success_at_4"]) == "1.00×"
    limit = ours["loss_limit"]
    assert limit.value == 8 and not limit.at_least and "the next point, 12 %, had 83 %" in limit.condition
    assert compare.ratio(SEED["loss_limit"], limit) == "2.00×"


def test_when_every_loss_point_succeeds_the_limit_is_a_lower_bound(tmp_path):
    ours = measured([loss_outcome(tmp_path / "loss", {0: (3, 3), 12: (3, 3), 30: (3, 3)})])
    assert ours["loss_limit"].at_least and ours["loss_limit"].value == 30
    assert compare.ratio(SEED["loss_limit"], ours["loss_limit"]) == "≥ 7.50×"
    assert ours["success_at_4"].value is None and "4 % not among the valid points, 0, 12, 30 %" in \
        ours["success_at_4"].condition
    assert compare.ratio(SEED["success_at_4"], ours["success_at_4"]) == "—"


def test_block_rate_is_the_largest_extent_and_record_through_the_san_valid_passes_only(tmp_path):
    ours = measured([transfer_outcome(tmp_path / "transfer")])
    assert ours["san_write"].value == pytest.approx(63.0)  # mean of 60 and 66 (8 MiB, 1 MiB records)
    assert ours["san_read"].value == pytest.approx(90.0)  # the spoiled 500 MB/s pass and the target's are left out
    assert "SAN path, sequential writes, 8 MiB extent, 1 MiB records, mean of 2" in ours["san_write"].condition
    assert "raw link 110 MB/s" in ours["san_write"].condition
    assert compare.ratio(SEED["san_write"], ours["san_write"]) == f"{63 / 80:.2f}–{63 / 70:.2f}×"


def test_block_rate_keeps_to_the_largest_record_when_the_budget_left_the_largest_extent_with_small_ones(tmp_path):
    plan = replace(transfer.QUICK, file_sizes=(8 * MIB, 64 * MIB), records=(16 * 1024, MIB), patterns=("sequential",))
    rows = [xdd_row("write", 64 * MIB, 16 * 1024, 38.0), xdd_row("write", 8 * MIB, MIB, 120.0),
            xdd_row("read", 64 * MIB, 16 * 1024, 43.0), xdd_row("read", 8 * MIB, MIB, 130.0)]
    folder = tmp_path / "transfer"
    folder.mkdir()
    ours = measured([transfer._write(PaperBench(), plan, folder, rows, [], 110.0, "lab all")])
    assert ours["san_write"].value == pytest.approx(120.0) and ours["san_read"].value == pytest.approx(130.0)
    assert "8 MiB extent, 1 MiB records" in ours["san_write"].condition


def test_the_effective_rate_is_compared_with_nothing_since_the_seed_published_no_number(tmp_path):
    ours = measured([effective_outcome(tmp_path / "effective")])
    # 16 MiB at 45 MB/s (the median repetition) with 1.5 s of setup and teardown
    expected = 16 * MIB / 1e6 / (1.5 + 16 * MIB / 45e6)
    assert ours["effective_read"].value == pytest.approx(expected)
    assert "setup 1.00 s + teardown 0.50 s counted (configured)" in ours["effective_read"].condition
    assert compare.ratio(SEED["effective_read"], ours["effective_read"]) == "— (the seed published no number)"


def test_an_experiment_that_did_not_run_or_failed_is_not_measured(tmp_path):
    failed = Outcome("latency", "latency (failed)", tmp_path / "latency", "lab all", "", [], ["FAILED: boom"],
                     valid=False)
    section = comparison([failed, transfer_outcome(tmp_path / "transfer")])
    rows = table_rows(section)
    total = rows[SEED["op_total"].quantity]
    assert total[3] == NOT_MEASURED and total[4] == "latency failed, see its section" and total[5] == "—"
    success = rows[SEED["success_at_4"].quantity]
    assert success[2:5] == ["100", NOT_MEASURED, "loss did not run"]
    assert rows[SEED["san_read"].quantity][3] == "90.0"
    assert len(rows) == len(SEED)


def test_the_report_of_lab_all_opens_with_the_comparison(tmp_path):
    outcomes = [latency_outcome(tmp_path / "latency"),
                loss_outcome(tmp_path / "loss", {0: (3, 3), 4: (3, 3), 12: (2, 3)}),
                transfer_outcome(tmp_path / "transfer"), effective_outcome(tmp_path / "effective")]
    path = write_report(tmp_path, outcomes, {"where": "lab"}, command="lab all",
                        first_sections=[(COMPARED, comparison(outcomes))])
    report = path.read_text()
    assert report.index(f"- {COMPARED}") < report.index("- [Operation time")
    assert report.index(f"## {COMPARED}") < report.index("## Operation time")
    section = report[report.index(f"## {COMPARED}"):report.index('<a id="latency">')]
    rows = table_rows(section)
    assert rows[SEED["loss_limit"].quantity][2:4] == ["4", "4"]
    assert rows[SEED["op_total"].quantity][5] == f"{20 / 18:.2f}×"
    assert NOT_MEASURED not in section
    assert re.search(r"Where in the seed \(DICE Management Framework, 2007\) each figure comes from:\n"
                     r"  - operation time \(Figures 11–13\): under 20 s\n", section)

"""The loss experiment's report: the curve per point and every failed operation with its reason.

Rows as LabService.operation() returns them, with error texts in the engine's own wording (taken from a
quick run at 20 and 30 % loss), handed to loss._write, which writes the CSV, JSON, plot and the Markdown of
a real run. No root, no lab, no service.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from lab.experiments import loss
from lab.experiments.report import write_report

LOGIN_TIMEOUT = ("router remote-rtr: time limit reached after 2 attempts: connect: 198.18.2.10: no login prompt "
                 "within 4 s; nothing was changed on any router")
GAVE_UP = ("router remote-rtr: gave up after 3 attempts: connect: 198.18.2.10: no login prompt within 1 s; "
           "nothing was changed on any router")
LIMIT_ONLY = ("router remote-rtr: time limit reached after 2 attempts: remote-rtr: the operation's time limit was "
              "reached")
INTERNAL = ("internal error: StepFailed: router remote-rtr: time limit reached after 2 attempts: ifcp list: Pattern "
            "not detected: 'ips3000\\-a\\S*[#>]\\s*$' in output.")
RESET = ("router primary-rtr: gave up after 5 attempts: ifcp add: OSError: [Errno 104] Connection reset by peer "
         "(rolled back)")
REFUSED = "router remote-rtr: gave up after 5 attempts: connect: ConnectionRefusedError: [Errno 111] Connection refused"


class Bench:
    """What the writer asks of a bench: its environment."""

    def environment(self) -> dict[str, Any]:
        return {"where": "lab", "profile": "none", "backend": "fixture"}


def row(loss_pct: float, kind: str, rep: int, state: str = "succeeded", attempts: int | None = None,
        error: str = "", seconds: float = 2.0) -> dict[str, Any]:
    """One operation's row as loss._measure_point() makes it."""
    first_try = {"add": 2, "list": 1, "remove": 2}[kind]
    return {"loss_pct": loss_pct, "op": kind, "ok": state == "succeeded", "seconds": seconds, "kind": kind, "rep": rep,
            "state": state, "attempts": first_try if attempts is None else attempts, "error": error,
            "registry_ms": 40.0, "invocation_ms": 300.0, "router_ms": seconds * 1000 - 340, "total_ms": seconds * 1000,
            "wall_ms": seconds * 1000 + 20, "valid": True, "health": ""}


def point(loss_pct: float, rows: list[dict[str, Any]], agree: bool = True) -> dict[str, Any]:
    ok = sum(1 for r in rows if r["loss_pct"] == loss_pct and r["ok"])
    ops = sum(1 for r in rows if r["loss_pct"] == loss_pct)
    return {"loss_pct": loss_pct, "ops": ops, "ok": ok, "success_rate": ok / ops, "agree": agree, "drift": {},
            "final": {}, "repaired": False, "agree_after_repair": None, "valid": True, "health": "",
            "remeasured_after": ""}


def written(folder: Path, rows: list[dict[str, Any]]) -> Any:
    losses = tuple(dict.fromkeys(r["loss_pct"] for r in rows))
    folder.mkdir(parents=True, exist_ok=True)
    return loss._write(Bench(), loss.QUICK, folder, rows, [point(x, rows) for x in losses], [], "lab loss", {})


def table_rows(markdown: str, header: str) -> list[list[str]]:
    """The body of the Markdown table whose header line starts with `header`, as cells."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    body = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        body.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return body


@pytest.mark.parametrize(("state", "error", "reason"), [
    ("failed", LOGIN_TIMEOUT, "operation time limit reached: router timeout"),
    ("failed", GAVE_UP, "retries used up: router timeout"),
    ("failed", LIMIT_ONLY, "operation time limit reached"),
    ("failed", INTERNAL, "engine internal error: router timeout"),
    ("rolled_back", RESET, "retries used up: connection reset or closed"),
    ("failed", REFUSED, "retries used up: connection refused"),
    ("failed", "router remote-rtr: gave up after 1 attempt: connect: ConnectionRefusedError: [Errno 111] Connection "
               "refused", "retries used up: connection refused"),
    ("failed", "router remote-rtr: zone 2 is not defined", "other: router remote-rtr: zone 2 is not defined"),
    ("refused", "409 another operation holds XRAID2", "refused by the API"),
    ("error", "no answer: timed out", "no answer from the API"),
])
def test_a_failure_is_named_by_how_the_engine_ended_it_and_the_router_error_behind_it(state, error, reason):
    assert loss.failure_reason(row(20, "add", 1, state, error=error)) == reason


LEFT = ("router remote-rtr: time limit reached after 2 attempts: ifcp list: Pattern not detected in output.; left "
        "configuring for reconcile, which the settle chore runs once the router answers: remote-rtr port 4 zone 2 -> "
        "198.18.1.11 (configuring) (rollback failed: router remote-rtr: the operation's time limit was reached)")


@pytest.mark.parametrize(("state", "error", "left"), [
    ("failed", LOGIN_TIMEOUT, "nothing changed"),
    ("rolled_back", RESET, "rolled back"),
    ("rolled_back", "router remote-rtr: gave up after 4 attempts: x (rolled back: 1 link(s) put back)", "rolled back"),
    ("failed", LEFT, "left for the settle chore"),
    ("failed", "router remote-rtr: gave up after 4 attempts: x; not put back, left for the settle chore: 1 link(s)",
     "left for the settle chore"),
    ("failed", INTERNAL, ""),
])
def test_what_a_failed_operation_left_on_the_routers_is_read_from_its_error(state, error, left):
    failed = row(30, "add", 1, state, error=error)
    assert loss.undo(failed) == left
    assert loss.failure_reason(failed).startswith(("operation time limit reached", "retries used up",
                                                   "engine internal error"))


def test_every_failed_operation_is_listed_with_its_router_state_attempts_and_reason(tmp_path):
    rows = [row(0, "add", 1), row(0, "list", 1), row(0, "remove", 1),
            row(20, "add", 1, "failed", 3, LOGIN_TIMEOUT, 10.1), row(20, "list", 1, attempts=2, seconds=5.4),
            row(20, "remove", 1),
            row(30, "add", 1, "rolled_back", 6, RESET, 20.1), row(30, "list", 1, "failed", 2, INTERNAL, 10.0),
            row(30, "remove", 1, "failed", 3, LOGIN_TIMEOUT, 11.4)]
    outcome = written(tmp_path, rows)
    failed = table_rows(outcome.table, "| loss % | operation |")
    assert [cells[:6] for cells in failed] == [
        ["20", "add #1", "remote-rtr", "failed", "3", "10.1"],
        ["30", "add #1", "primary-rtr", "rolled_back", "6", "20.1"],
        ["30", "list #1", "remote-rtr", "failed", "2", "10.0"],
        ["30", "remove #1", "remote-rtr", "failed", "3", "11.4"]]
    assert [cells[6] for cells in failed] == ["operation time limit reached: router timeout",
                                              "retries used up: connection reset or closed",
                                              "engine internal error: router timeout",
                                              "operation time limit reached: router timeout"]
    assert [cells[7] for cells in failed] == ["nothing changed", "rolled back", "-", "nothing changed"]
    assert failed[2][8].startswith("internal error: StepFailed: router remote-rtr")
    assert "Failed operations (4):" in outcome.table
    report = write_report(tmp_path, [outcome], Bench().environment()).read_text()
    listed = "| 30 | remove #1 | remote-rtr | failed | 3 | 11.4 | operation time limit reached: router timeout |"
    assert listed in report


def test_the_curve_shows_each_point_with_its_retries_failures_by_reason_and_agreement(tmp_path):
    rows = [row(0, "add", 1), row(0, "list", 1), row(0, "remove", 1),
            row(20, "add", 1, attempts=3, seconds=6.0), row(20, "list", 1, attempts=2, seconds=9.0),
            row(20, "remove", 1, seconds=3.0),
            row(30, "add", 1, "failed", 3, LOGIN_TIMEOUT, 10.1), row(30, "list", 1, "failed", 2, LOGIN_TIMEOUT),
            row(30, "remove", 1, "rolled_back", 4, RESET, 12.0)]
    curve = table_rows(written(tmp_path, rows).table, "| loss % | ops |")
    assert [cells[:5] for cells in curve] == [["0", "3", "100%", "2", "2"], ["20", "3", "100%", "6", "9"],
                                              ["30", "3", "0%", "-", "-"]]
    assert [cells[8:] for cells in curve] == [
        ["0", "-", "yes"], ["2", "-", "yes"],
        ["0", "operation time limit reached: router timeout x2, retries used up: connection reset or closed x1", "yes"]]


def test_a_run_without_failures_says_so_and_its_files_carry_empty_reasons(tmp_path):
    rows = [row(pct, kind, 1) for pct in (0, 20, 30) for kind in loss.OPS]
    outcome = written(tmp_path, rows)
    assert "Failed operations: no failures." in outcome.table
    assert "Failures by reason: none." in outcome.notes
    with open(tmp_path / "loss.csv", newline="") as f:
        assert [r["reason"] for r in csv.DictReader(f)] == [""] * 9
    with open(tmp_path / "loss-points.csv", newline="") as f:
        assert [(r["loss_pct"], r["failures"], r["retried"]) for r in csv.DictReader(f)] == [
            ("0", "", "0"), ("20", "", "0"), ("30", "", "0")]


def test_the_files_carry_each_failure_reason_and_each_points_failures(tmp_path):
    rows = [row(20, "add", 1, "failed", 3, GAVE_UP, 10.1), row(20, "list", 1), row(20, "remove", 1)]
    written(tmp_path, rows)
    with open(tmp_path / "loss.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [(r["op"], r["router"], r["reason"]) for r in table] == [
        ("add", "remote-rtr", "retries used up: router timeout"), ("list", "", ""), ("remove", "", "")]
    data = json.loads((tmp_path / "loss.json").read_text())
    assert data["points"][0]["failures"] == "retries used up: router timeout x1"
    assert data["rows"][0]["reason"] == "retries used up: router timeout"


@pytest.mark.parametrize("plan", [loss.QUICK, loss.FULL], ids=["quick", "full"])
def test_each_plan_measures_the_seeds_limit_20_and_30_percent_within_its_budget(plan):
    assert {4, 20, 30} <= set(plan.loss_pct)
    # The budget admits a point only when its estimate fits in what is left: every point must fit.
    assert sum(loss._estimate(plan, pct) for pct in plan.loss_pct) <= plan.budget_s


def test_an_error_text_with_a_bar_or_line_breaks_stays_in_its_own_cell(tmp_path):
    error = "router remote-rtr: gave up after 4 attempts: ifcp add: rejected:\n  E_ZONE | zone 2 busy"
    outcome = written(tmp_path, [row(30, "add", 1, "failed", 4, error), row(30, "list", 1), row(30, "remove", 1)])
    line = next(line for line in outcome.table.splitlines() if line.startswith("| 30 | add #1 |"))
    assert line.endswith("| retries used up | - | router remote-rtr: gave up after 4 attempts: ifcp add: rejected: "
                         "E_ZONE \\| zone 2 busy |")
    assert len(line.replace("\\|", "").split("|")) == 11  # nine cells


def lab_parser():
    import argparse

    from lab.command import add_arguments

    parser = argparse.ArgumentParser(prog="python -m lab")
    add_arguments(parser)
    return parser


def test_loss_runs_only_the_points_given_with_the_plans_other_settings():
    from lab.experiments.commands import _plan

    plan = _plan("loss", vars(lab_parser().parse_args(["loss", "--loss", "20,30"])))
    assert plan.loss_pct == (20.0, 30.0)
    assert (plan.repetitions, plan.service) == (loss.FULL.repetitions, loss.FULL.service)
    assert _plan("loss", vars(lab_parser().parse_args(["loss", "--quick"]))).loss_pct == loss.QUICK.loss_pct


@pytest.mark.parametrize("given", ["20,x", "120", "-1", "20,20", ""])
def test_a_loss_point_outside_0_to_100_or_repeated_is_refused_naming_the_option(given, capsys):
    with pytest.raises(SystemExit):
        lab_parser().parse_args(["loss", "--loss", given])
    assert "--loss" in capsys.readouterr().err

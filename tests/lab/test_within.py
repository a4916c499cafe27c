"""`lab all --within S`: the whole run's time shared out among the experiments as it goes."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from lab.experiments import commands
from lab.experiments.base import Outcome
from lab.experiments.commands import SELFCHECK, Window


class Clock:
    """time.monotonic as the module under test reads it, moved on by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(commands.time, "monotonic", clock)
    return clock


def parser() -> argparse.ArgumentParser:
    from lab.command import add_arguments

    parser = argparse.ArgumentParser(prog="python -m lab")
    add_arguments(parser)
    return parser


def test_each_part_gets_what_is_left_in_proportion_to_its_budget_and_passes_on_what_it_leaves(clock):
    window = Window(250, {"a": 100, "b": 300, SELFCHECK: 100})
    out = io.StringIO()
    assert window.share("a", out) == pytest.approx(50)  # 250 x 100 / 500
    clock.now += 10  # a took 10 s of its 50: b and the self-check share the 240 s left
    window.used("a")
    assert window.share("b", out) == pytest.approx(180)  # 240 x 300 / 400
    clock.now += 200  # b overran its share by 20 s
    window.used("b")
    assert window.share(SELFCHECK, out) == pytest.approx(40)
    clock.now += 40
    window.used(SELFCHECK)
    assert "a: 50 s of the 250 s left (--within), its plan's budget 100 s" in out.getvalue()
    assert window.table().splitlines()[2:] == ["| a | 100 | 50 | 10 |", "| b | 300 | 180 | 200 |",
                                               "| selfcheck | 100 | 40 | 40 |"]


def test_a_part_never_gets_more_than_its_plans_budget_and_nothing_once_the_time_is_up(clock):
    window = Window(10_000, {"a": 100, "b": 300})
    assert window.share("a", io.StringIO()) == 100
    clock.now += 20_000
    window.used("a")
    assert window.share("b", io.StringIO()) == 0


@pytest.mark.parametrize("given", ["0", "-5", "x", "inf", "nan", ""])
def test_a_run_time_that_is_not_a_number_of_seconds_above_zero_is_refused_naming_the_option(given, capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["all", "--within", given])
    assert "--within" in capsys.readouterr().err


def test_only_all_takes_a_run_time():
    assert parser().parse_args(["all", "--within", "5400"]).within == 5400
    with pytest.raises(SystemExit):
        parser().parse_args(["loss", "--within", "5400"])


def test_lab_all_runs_each_experiment_on_its_share_and_the_report_shows_the_shares(clock, monkeypatch, tmp_path):
    """The experiments themselves are outside this unit: each is replaced by one that takes 30 s of the
    clock and notes the budget its plan was given."""
    from lab.experiments import base

    given: dict[str, float] = {}

    def run_one(name, bench, plan, folder, out, command):
        given[name] = plan.budget_s
        clock.now += 30
        return Outcome(name, name, folder, command, "", [])

    @contextlib.contextmanager
    def no_bench(*args, **kwargs):
        class Bench:
            def environment(self):
                return {}
        yield Bench()

    monkeypatch.setattr(commands, "_run_one", run_one)
    monkeypatch.setattr(base, "open_bench", no_bench)
    monkeypatch.setattr("lab.database.server_url", lambda: "postgres://nobody@127.0.0.1:1/none")
    options = vars(parser().parse_args(["all", "--where", "loopback", "--within", "3000",
                                        "--results", str(tmp_path)]))
    assert commands.run_experiment(options, out=io.StringIO()) == 0
    plans = {name: commands._plan(name, options).budget_s for name in ("transfer", "filesizes", "effective", "clients")}
    assert list(given) == list(plans)
    left = 3000.0
    for index, name in enumerate(plans):  # no self-check on loopback: the four share the whole
        waiting = sum(list(plans.values())[index:])
        assert given[name] == pytest.approx(min(plans[name], left * plans[name] / waiting))
        left -= 30
    report = next(tmp_path.glob("*/report.md")).read_text()
    assert "## Time shared out (--within 3000)" in report
    assert f"| transfer | {plans['transfer']:.0f} | {given['transfer']:.0f} | 30 |" in report

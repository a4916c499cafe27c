"""`lab all --within S`: the whole run's time shared out among the experiments as it goes."""

from __future__ import annotations

import argparse
import contextlib
import io
from types import SimpleNamespace

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
    monkeypatch.setattr(commands, "time", SimpleNamespace(monotonic=clock))
    return clock


def parser() -> argparse.ArgumentParser:
    from lab.command import add_arguments

    parser = argparse.ArgumentParser(prog="python -m lab")
    add_arguments(parser)
    return parser


def test_each_part_gets_what_is_left_in_proportion_to_its_budget_and_passes_on_what_it_leaves(clock):
    window = Window(300, {"a": 100, "b": 300}, set_aside=50)  # the experiments share 250 s
    out = io.StringIO()
    assert window.share("a", out) == pytest.approx(62.5)  # 250 x 100 / 400
    clock.now += 10  # a took 10 s of its share: b gets what is left, up to its budget
    window.used("a")
    assert window.share("b", out) == pytest.approx(240)
    clock.now += 260  # b overran by 20 s: the self-check still gets what it needs
    window.used("b")
    assert window.last(SELFCHECK, 100, 50, out) == pytest.approx(50)
    clock.now += 45
    window.used(SELFCHECK)
    clock.now += 5
    assert "a: 62 s of the 250 s left (--within), its plan's budget 100 s" in out.getvalue()
    assert window.table().splitlines()[2:] == ["| a | 100 | 62 | 10 |", "| b | 300 | 240 | 260 |",
                                               "| selfcheck | 100 | 50 | 45 |", "| testbed up and down | | | 5 |"]


def test_a_part_never_gets_more_than_its_plans_budget_and_nothing_once_the_time_is_up(clock):
    window = Window(10_000, {"a": 100, "b": 300})
    assert window.share("a", io.StringIO()) == 100
    assert window.last(SELFCHECK, 1200, 600, io.StringIO()) == 1200  # all that is left, up to its budget
    clock.now += 20_000
    assert window.share("b", io.StringIO()) == 0


@pytest.mark.parametrize("option", ["--within", "--budget"])
@pytest.mark.parametrize("given", ["0", "-5", "x", "inf", "nan", ""])
def test_a_time_that_is_not_a_number_of_seconds_above_zero_is_refused_naming_the_option(option, given, capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["all", option, given])
    assert option in capsys.readouterr().err


def test_only_all_takes_a_run_time():
    assert parser().parse_args(["all", "--within", "5400"]).within == 5400
    with pytest.raises(SystemExit):
        parser().parse_args(["loss", "--within", "5400"])


def stand_ins(monkeypatch, clock, took: float) -> dict[str, float]:
    """The experiments are outside this unit: each is replaced by one that takes `took` s of the clock
    and notes the budget its plan was given (in the dict returned); no data path, no database."""
    from lab.experiments import base

    given: dict[str, float] = {}

    def run_one(name, bench, plan, folder, out, command):
        given[name] = plan.budget_s
        clock.now += took
        return Outcome(name, name, folder, command, "", [])

    @contextlib.contextmanager
    def no_bench(*args, **kwargs):
        yield SimpleNamespace(environment=lambda: {})

    monkeypatch.setattr(commands, "_run_one", run_one)
    monkeypatch.setattr(base, "open_bench", no_bench)
    monkeypatch.setattr("lab.database.server_url", lambda: "postgres://nobody@127.0.0.1:1/none")
    return given


def test_lab_all_runs_each_experiment_on_its_share_and_the_report_shows_the_shares(clock, monkeypatch, tmp_path):
    given = stand_ins(monkeypatch, clock, 30)
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


@pytest.mark.parametrize("selfcheck", [True, False])
def test_in_the_lab_the_self_check_gets_what_it_needs_even_after_the_experiments_overran(
        selfcheck, clock, monkeypatch, tmp_path):
    """Each experiment takes 500 s, more than the whole run's 3000 s allow; the lab and the self-check's own
    run are stood in for too."""
    given = stand_ins(monkeypatch, clock, 500)

    @contextlib.contextmanager
    def no_lab(options, where, sites=2):
        yield SimpleNamespace(down=lambda: None, up=lambda sites: None), True

    def checks(lab, folder, quick, budget_s, out):
        given[SELFCHECK] = budget_s
        return "Verdict: **PASSED**", True

    monkeypatch.setattr(commands, "_lab", no_lab)
    monkeypatch.setattr(commands, "_selfcheck", checks)
    monkeypatch.setattr(commands.os, "geteuid", lambda: 0)
    options = vars(parser().parse_args(["all", "--where", "lab", "--within", "3000", "--results", str(tmp_path)]
                                       + ([] if selfcheck else ["--no-selfcheck"])))
    assert commands.run_experiment(options, out=io.StringIO()) == 0
    need = commands._selfcheck_need(options) if selfcheck else 0
    first = commands._plan("transfer", options).budget_s
    assert given["transfer"] == pytest.approx((3000 - need) * first / sum(
        commands._plan(name, options).budget_s for name in commands.EXPERIMENTS))
    assert list(given) == [*commands.EXPERIMENTS, *([SELFCHECK] if selfcheck else [])]
    if selfcheck:
        assert given[SELFCHECK] == pytest.approx(need)  # nothing was left: what its checks need, still


@pytest.fixture
def budgets(monkeypatch):
    """Budget as the experiments make it, on a clock the test moves, and a Progress to admit cells with."""
    from lab.experiments import base

    clock = Clock()
    monkeypatch.setattr(base, "time", SimpleNamespace(monotonic=clock))
    return clock, (lambda seconds, learn=True: base.Budget(seconds, start=clock.now, learn=learn)), \
        base.Progress([], io.StringIO())


def test_a_learning_budget_scales_estimates_by_how_the_cells_of_their_kind_held_up(budgets):
    clock, budget, progress = budgets
    learning, fixed = budget(100), budget(100, learn=False)
    for cell in ("A", "B", "C", "D", "E"):
        for each in (learning, fixed):
            admitted = each.admit(40, cell, progress, kind="iFCP")
            assert admitted == (each is learning or cell != "E")  # fixed: 40 s > the 36 s left
        clock.now += 16  # each cell takes 0.4 of its estimate
        learning.done()
        fixed.done()
    assert learning.scale("iFCP") == pytest.approx(0.5)  # 0.4, with a margin of 1.25
    assert fixed.scale("iFCP") == 1.0
    assert learning.skipped == [] and fixed.skipped == ["E"]
    # A kind with no cell run yet takes the other kinds' ratio with a larger margin, 1.5: 0.6, so 40 s
    # count as 24, more than the 20 s left.
    assert learning.scale("FCIP") == pytest.approx(0.6)
    assert not learning.admit(40, "FCIP 0 ms", progress, kind="FCIP")
    assert learning.admit(30, "FCIP 0 ms, smaller", progress, kind="FCIP")  # 18 s of the 20 s left


@pytest.mark.parametrize(("took", "scale"), [(1, 0.25), (80, 2.5)])
def test_a_learning_budget_never_trusts_an_estimate_more_than_fourfold_and_scales_up_one_too_low(
        took, scale, budgets):
    clock, budget, progress = budgets
    learning = budget(1000)
    assert learning.admit(40, "first", progress)
    clock.now += took
    learning.done()
    assert learning.scale() == pytest.approx(scale)
    assert learning.allows((1000 - took) / scale - 1) and not learning.allows((1000 - took) / scale + 1)


def test_only_the_cells_own_time_is_learnt_not_what_runs_between_them(budgets):
    clock, budget, progress = budgets
    learning = budget(1000)
    assert learning.admit(40, "first", progress)
    clock.now += 20
    learning.done()
    clock.now += 300  # e.g. the next links' service started
    assert learning.admit(40, "second", progress)
    assert learning.scale() == pytest.approx(0.625)


def test_a_cell_measured_again_needs_the_longer_of_its_estimate_and_its_first_measurement(budgets):
    clock, budget, progress = budgets
    learning = budget(100)
    assert learning.admit(40, "spoiled", progress)
    clock.now += 30
    assert learning.again(40)  # 40 s of the 70 s left
    clock.now += 30
    learning.done()
    assert learning.scale() == pytest.approx(1.25 * 60 / 80)  # two measurements, two estimates
    tight = budget(100)
    assert tight.admit(40, "slow", progress)
    clock.now += 55
    assert not tight.again(40)  # its first measurement took 55 s, more than the 45 s left


def test_an_experiment_that_fails_reports_its_exceptions_notes_beside_the_message(monkeypatch, tmp_path):
    """measured() adds what the emulated WAN saw as a note; `lab all` prints and reports it, not fio alone."""
    def run(*args, **kwargs):
        exc = RuntimeError("fio rc 1: server disconnected unexpectedly")
        exc.add_note("the emulated WAN in that window: primary>remote: delay emulator is not running")
        raise exc

    monkeypatch.setattr(commands, "experiment", lambda name: SimpleNamespace(run=run))
    out = io.StringIO()
    outcome = commands._run_one("filesizes", None, None, tmp_path, out, "lab filesizes")
    assert not outcome.valid
    for text in (out.getvalue(), outcome.notes[0]):
        assert "server disconnected" in text and "delay emulator is not running" in text, text

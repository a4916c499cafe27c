"""The experiments' sub-commands of `python -m lab` (`transfer`, `filesizes`, `all`), also `python -m lab.experiments`.

    lab transfer  [--quick] [--where auto|lab|loopback] [--wan SPEC] [--results DIR] [--budget S]
    lab filesizes [--quick] ...
    lab effective [--quick] [--setup-s S --teardown-s S | --timing-scale F] ...
    lab clients   [--quick] ...
    lab latency   [--quick] ...      (lab only)
    lab loss      [--quick] [--loss PCT,...] ... (lab only)
    lab sites     [--quick] ...      (lab only)
    lab all       [--quick] [--within S] ...  every experiment that exists, then report.md with every plot
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from lab.experiments.base import Bench, Outcome

# Experiments are imported when run: matplotlib and friends stay out of `lab up`'s start-up.
EXPERIMENTS: dict[str, str] = {
    "transfer": "xdd-style write/read rate vs record size for several file sizes (Figures 3-10)",
    "filesizes": "1 MB .. 2 GB whole-file rates: SAN link vs local disk, with and without TLS",
    "effective": "effective rate vs file size with link setup and teardown counted (Figure 15)",
    "clients": "aggregate block throughput vs 1..N concurrent clients",
    "latency": "add/list/remove time vs WAN RTT 0..160 ms through the service, registry/invocation/router split"
    " (Figures 11-13)",
    "loss": "add/list/remove success and time vs packet loss 0..30 percent through the service, agreement checked"
    " (Figure 14)",
    "sites": "five sites, a platform mix with FCIP: every site connects to every other site's array at once;"
    " per-path operation time and transfer rate",
}
LAB_ONLY = ("latency", "loss", "sites")  # their impairments exist only between the lab's namespaces
# They start the flexzone service, on a temporary PostgreSQL database of their own (lab.database).
NEEDS_DATABASE = ("clients", "latency", "loss", "sites")
ACTIONS = (*EXPERIMENTS, "all")


def experiment(name: str) -> Any:
    return importlib.import_module(f"lab.experiments.{name}")


def add_subcommands(sub: Any) -> None:
    """Register the experiment actions on the `lab` sub-parser set."""
    for name in ACTIONS:
        parser = sub.add_parser(name, help=EXPERIMENTS.get(name, "every experiment, then report.md with every plot"))
        parser.add_argument("--quick", action="store_true", help="the short variant (about a few minutes)")
        parser.add_argument("--where", choices=["auto", "lab", "loopback"], default="auto",
                            help="lab namespaces (root) or loopback without an emulated WAN; auto: lab if root")
        parser.add_argument("--wan", default="none", help="impairment both ways between the sites, e.g. delay=10ms")
        parser.add_argument("--results", type=Path, default=None, help="results root (default lab-results/)")
        parser.add_argument("--budget", type=_seconds("--budget"), default=None,
                            help="time budget per experiment in seconds")
        if name in ("transfer", "filesizes", "all"):
            parser.add_argument("--queue-depth", type=int, default=None,
                                help="outstanding requests per client (xdd -queuedepth; default 1)")
        if name in ("transfer", "all"):
            parser.add_argument("--passes", type=int, default=None, help="passes per cell (xdd -passes)")
        if name in ("effective", "all"):
            parser.add_argument("--setup-s", type=float, default=None,
                                help="use this link setup time instead of measuring it on simulated routers")
            parser.add_argument("--teardown-s", type=float, default=None, help="ditto for the teardown time")
            parser.add_argument("--timing-scale", type=float, default=None,
                                help="scale of the simulators' seed timing when measuring setup (quick: 0.05)")
        if name == "loss":
            parser.add_argument("--loss", type=_loss_points, default=None, metavar="PCT[,PCT...]",
                                help="only these loss points, each 0..100 percent, e.g. 20,30 (default: the plan's)")
        if name == "all":
            parser.add_argument("--no-selfcheck", action="store_true", help="skip the emulator self-check")
            parser.add_argument("--within", type=_seconds("--within"), default=None, metavar="S",
                                help="the whole run's time in seconds, shared out as it goes: what the "
                                "self-check needs is set aside, then each experiment gets what is left in "
                                "proportion to its plan's budget, never more than that budget (default: every "
                                "plan's own budget)")


def run_experiment(options: dict[str, Any], out: TextIO | None = None) -> int:
    """Run the experiment named by options["action"] (or all of them) and write its results folder."""
    from lab.database import NoPostgres, server_url
    from lab.experiments.base import open_bench, results_folder
    from lab.experiments.compare import COMPARED, comparison
    from lab.experiments.report import write_report

    out = out or sys.stdout
    action = options["action"]
    command = " ".join([invoked_as(), *(shlex.quote(a) for a in sys.argv[1:])])
    where = options.get("where") or "auto"
    if where == "auto":
        where = "lab" if os.geteuid() == 0 else "loopback"
    if where == "lab" and os.geteuid() != 0:
        print("the lab needs root (network namespaces); use --where loopback", file=sys.stderr)
        return 2
    names = list(EXPERIMENTS) if action == "all" else [action]
    if where != "lab" and any(name in LAB_ONLY for name in names):
        if action != "all":
            print(f"{action} needs the lab (root, --where lab)", file=sys.stderr)
            return 2
        names = [name for name in names if name not in LAB_ONLY]
    if any(name in NEEDS_DATABASE for name in names):
        try:
            server_url()
        except NoPostgres as exc:  # before anything starts: one line saying what to set
            print(f"lab {action}: {exc}", file=sys.stderr)
            return 2
    plans = {name: _plan(name, options) for name in names}
    target_bytes = max(plan.target_bytes for plan in plans.values())
    folder = results_folder(action, options.get("results"))
    print(f"results: {folder}", file=out, flush=True)
    outcomes: list[Outcome] = []
    extra: list[tuple[str, str]] = []
    checks_passed = True
    selfcheck = action == "all" and where == "lab" and not options.get("no_selfcheck")
    window = Window(options["within"], {name: plan.budget_s for name, plan in plans.items()},
                    set_aside=_selfcheck_need(options) if selfcheck else 0.0) if options.get("within") else None
    with _lab(options, where, sites=5 if "sites" in names else 2) as (lab, owned):
        data_path = any(name not in LAB_ONLY for name in names)
        with open_bench(where, target_bytes, lab=lab, profile=options.get("wan") or "none",
                        data_path=data_path) as bench:
            for name in names:
                sub = folder / name if action == "all" else folder
                sub.mkdir(parents=True, exist_ok=True)
                plan = plans[name] if window is None else replace(plans[name], budget_s=window.share(name, out))
                outcomes.append(_run_one(name, bench, plan, sub, out, command))
                if window is not None:
                    window.used(name)
            environment = bench.environment()
        # Last, on a fresh testbed when it is ours: once any lab.clear() has stopped the delay emulators, the
        # fallback backend reports "delay emulator is not running" for every later window
        # (lab/backends.py, FallbackBackend.end_window keys on the stopped emulator's stats file).
        if selfcheck and lab is not None:
            if owned:
                lab.down()
                lab.up(2)
            budget = _selfcheck_budget(options) if window is None else window.last(
                SELFCHECK, _selfcheck_budget(options), _selfcheck_need(options), out)
            verdict, checks_passed = _selfcheck(lab, folder, options.get("quick", False), budget, out)
            extra.append(("Emulator self-check", verdict))
            if window is not None:
                window.used(SELFCHECK)
    if window is not None:
        extra.append((f"Time shared out (--within {window.seconds:g})", window.table()))
    if action == "all" and where != "lab":
        extra.append(("Not run on loopback", ", ".join(LAB_ONLY) + ": they need the lab's emulated WAN "
                      "(run as root with --where lab)."))
    # `all` runs every experiment: the report opens with the seed's figures beside this run's.
    first = [(COMPARED, comparison(outcomes))] if action == "all" else []
    report = write_report(folder, outcomes, environment, command=command, first_sections=first,
                          extra_sections=extra)
    for outcome in outcomes:
        print(f"\n## {outcome.title}\n{outcome.table}", file=out)
        for note in outcome.notes:
            print(f"- {note}", file=out)
    for title, body in first:
        print(f"\n## {title}\n{body}", file=out)
    print(f"\nreport: {report}", file=out, flush=True)
    return 0 if all(o.valid for o in outcomes) and checks_passed else 1


def invoked_as() -> str:
    """The program as its user typed it, for the report: `python -m lab` or `python -m lab.experiments`
    (or the name of the program that called the lab's code)."""
    program = Path(sys.argv[0])
    if program.name != "__main__.py":
        return program.name
    return "python -m " + ("lab.experiments" if program.parent.name == "experiments" else "lab")


def _loss_points(text: str) -> tuple[float, ...]:
    """`--loss 20,30`: the loss points to run, percentages from 0 to 100, given once each."""
    try:
        points = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--loss: {text!r} is not a comma-separated list of numbers") from None
    if any(not 0 <= point <= 100 for point in points) or len(set(points)) != len(points):
        raise argparse.ArgumentTypeError(f"--loss: each point must be from 0 to 100 percent, given once ({text!r})")
    return points


def _seconds(option: str) -> Callable[[str], float]:
    """The type of an option given in seconds (`--within 5400`): a number above zero, or an error naming it."""

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option}: {text!r} is not a number of seconds") from None
        if not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"{option}: a time must be a number of seconds above 0 ({text!r})")
        return value

    return seconds


SELFCHECK = "selfcheck"


@dataclass
class Part:
    """One part of a run under --within: its plan's budget, the share it was given, when it started, how long
    it took."""

    own: float
    share: float
    started: float
    took: float = 0.0


class Window:
    """`lab all --within S`: the whole run's time, shared out as it goes. What the self-check needs (its
    checks' estimates, half as much again) is set aside first, as it runs last and a check cut short
    fails; then, when its turn comes, each experiment gets the time left in proportion to its plan's
    budget among those still to run, never more than that budget, and what one leaves unused goes to
    those after it. Its plan then skips, and lists, the cells that do not fit, as with its own budget."""

    def __init__(self, seconds: float, budgets: dict[str, float], set_aside: float = 0.0) -> None:
        self.seconds, self.start = seconds, time.monotonic()
        self.deadline = self.start + seconds - set_aside  # the experiments'
        self.waiting = dict(budgets)
        self.parts: dict[str, Part] = {}

    def share(self, name: str, out: TextIO) -> float:
        """An experiment's share, when its turn comes."""
        left = max(0.0, self.deadline - time.monotonic())
        own = self.waiting[name]
        share = min(own, left * own / sum(self.waiting.values()))
        del self.waiting[name]
        return self._begin(name, own, share, left, out)

    def last(self, name: str, own: float, need: float, out: TextIO) -> float:
        """The self-check's time: all that is left, at least what it needs, at most its own budget."""
        left = max(0.0, self.start + self.seconds - time.monotonic())
        return self._begin(name, own, min(own, max(need, left)), left, out)

    def _begin(self, name: str, own: float, share: float, left: float, out: TextIO) -> float:
        self.parts[name] = Part(own, share, time.monotonic())
        print(f"{name}: {share:.0f} s of the {left:.0f} s left (--within), its plan's budget {own:.0f} s", file=out,
              flush=True)
        return share

    def used(self, name: str) -> None:
        part = self.parts[name]
        part.took = time.monotonic() - part.started

    def table(self) -> str:
        """Markdown: each part's plan budget, its share and what it took; the rest of the time so far went to
        bringing the testbed up and down."""
        lines = ["| part | plan's budget s | share s | took s |", "|---|---|---|---|"]
        lines += [f"| {name} | {part.own:.0f} | {part.share:.0f} | {part.took:.0f} |"
                  for name, part in self.parts.items()]
        rest = time.monotonic() - self.start - sum(part.took for part in self.parts.values())
        lines.append(f"| testbed up and down | | | {rest:.0f} |")
        return "\n".join(lines)


def _plan(name: str, options: dict[str, Any]) -> Any:
    module = experiment(name)
    plan = module.QUICK if options.get("quick") else module.FULL
    if options.get("budget"):
        plan = replace(plan, budget_s=float(options["budget"]))
    if name in ("transfer", "filesizes") and options.get("queue_depth"):
        plan = replace(plan, queue_depth=options["queue_depth"])
    if name == "transfer" and options.get("passes"):
        plan = replace(plan, passes=options["passes"])
    if name == "loss" and options.get("loss"):
        plan = replace(plan, loss_pct=options["loss"])
    if name == "effective":
        if (options.get("setup_s") is None) != (options.get("teardown_s") is None):
            raise SystemExit("give both --setup-s and --teardown-s, or neither (then they are measured)")
        if options.get("setup_s") is not None:
            plan = replace(plan, setup_s=options["setup_s"], teardown_s=options["teardown_s"])
        if options.get("timing_scale") is not None:
            plan = replace(plan, timing_scale=options["timing_scale"])
    return plan


def _run_one(name: str, bench: Bench, plan: Any, folder: Path, out: TextIO, command: str) -> Outcome:
    """Run one experiment; a failure becomes an invalid outcome in the report instead of ending `lab all`."""
    from lab.experiments.base import Outcome

    started = time.monotonic()
    try:
        outcome: Outcome = experiment(name).run(bench, plan, folder, out=sys.stderr, command=command)
    except Exception as exc:  # noqa: BLE001 - reported, and the remaining experiments still run
        # The notes carry the cause when the message is only the symptom (measured(): a dead emulator).
        detail = "; ".join([str(exc), *getattr(exc, "__notes__", ())])
        print(f"{name}: FAILED after {time.monotonic() - started:.0f} s: {detail}", file=out, flush=True)
        return Outcome(name, f"{name} (failed)", folder, command, "", [], [f"FAILED: {type(exc).__name__}: {detail}"],
                       valid=False)
    print(f"{name}: done in {time.monotonic() - started:.0f} s, {len(outcome.plots)} plots in {folder}", file=out,
          flush=True)
    return outcome


@contextlib.contextmanager
def _lab(options: dict[str, Any], where: str, sites: int = 2) -> Iterator[tuple[Any, bool]]:
    """(the lab to run in, whether we brought it up and take it down afterwards), or (None, False) on loopback;
    a lab we bring up has `sites` sites (the experiments on two use the first two)."""
    if where != "lab":
        yield None, False
        return
    from lab.testbed import DEFAULT_PREFIX, Lab

    lab = Lab(prefix=options.get("prefix") or DEFAULT_PREFIX, run_dir=options.get("run_dir"))
    owned = not lab.is_up
    if owned:
        lab.up(sites)
    try:
        yield lab, owned
    finally:
        if owned:
            lab.down()


def _selfcheck_budget(options: dict[str, Any]) -> float:
    return 240.0 if options.get("quick") else 1200.0


def _selfcheck_need(options: dict[str, Any]) -> float:
    """What the self-check's checks take by their own estimates, half as much again."""
    from lab.selfcheck import FULL, QUICK

    return 1.5 * sum(check.estimate() for check in (QUICK if options.get("quick") else FULL))


def _selfcheck(lab: Any, folder: Path, quick: bool, budget_s: float, out: TextIO) -> tuple[str, bool]:
    """Run the emulator self-check (lab.selfcheck) into folder/selfcheck within budget_s; return its verdict
    (Markdown) and whether it passed."""
    from lab.selfcheck import FULL, QUICK, run_checks

    try:
        report = run_checks(lab, QUICK if quick else FULL, mode="quick" if quick else "full", budget_s=budget_s)
    except Exception as exc:  # noqa: BLE001 - the report still gets written, saying so
        print(f"selfcheck: FAILED to run: {exc}", file=out, flush=True)
        return f"Verdict: **did not run** ({type(exc).__name__}: {str(exc)[:300]}).", False
    report.write(folder / "selfcheck")
    verdict = "PASSED" if report.passed else "FAILED"
    print(f"selfcheck {verdict}: {report.summary_line()}", file=out, flush=True)
    failed = [f"{r.profile} {r.kind}: " + ("; ".join(r.health) or "outside target") for r in report.rows
              if not (r.within_target and r.valid)]
    short = f"; cut short: {report.aborted}" if report.aborted else ""
    text = (f"Verdict: **{verdict}** ({report.summary_line()}{short}). Raw data: `selfcheck/selfcheck.csv`, "
            "`selfcheck/selfcheck.json`." + "".join(f"\n- {line}" for line in failed))
    return text, report.passed


def build_parser() -> argparse.ArgumentParser:
    from lab.testbed import DEFAULT_PREFIX

    parser = argparse.ArgumentParser(prog="python -m lab.experiments", description=__doc__.split("\n")[0])
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="name prefix of the lab's namespaces")
    parser.add_argument("--run-dir", type=Path, default=None, help="lab state, PID files, logs (default .lab/)")
    sub = parser.add_subparsers(dest="action", metavar="EXPERIMENT")
    sub.required = True
    add_subcommands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_experiment(vars(build_parser().parse_args(argv)))

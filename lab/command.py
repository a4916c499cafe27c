"""The lab's command line: `python -m lab ...`, from the repository root.

    lab up [--sites N] [--backend NAME]   create the testbed (idempotent)
    lab down                              stop lab processes, delete lab namespaces (also after a crash)
    lab status                            what is up, where, with which profiles
    lab impair [A B] --forward SPEC [--reverse SPEC]   change the impairment at runtime
    lab exec SITE -- COMMAND ...          run a command inside a site's namespace (`wan`: the WAN's)
    lab selfcheck [--quick]               measure delay, loss and TCP throughput against targets
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lab.experiments import commands as experiments
from lab.profiles import Impairment, LinkProfile
from lab.selfcheck import FULL, QUICK, results_dir, run_checks
from lab.testbed import DEFAULT_PREFIX, Lab


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="name prefix of the lab's namespaces")
    parser.add_argument("--run-dir", type=Path, default=None, help="state, PID files, logs (default .lab/PREFIX/)")
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    up = sub.add_parser("up", help="create the testbed")
    up.add_argument("--sites", type=int, default=2, help="number of sites (primary, remote, site3, ...)")
    up.add_argument("--backend", choices=["tc-netem", "nft-nfqueue"], default=None,
                    help="force a backend instead of probing")
    sub.add_parser("down", help="tear the testbed down")
    sub.add_parser("status", help="show the testbed")
    impair = sub.add_parser("impair", help="apply an impairment between two sites")
    impair.add_argument("sites", nargs="*", default=["primary", "remote"], help="two site names")
    impair.add_argument("--forward", default="none", help="e.g. delay=20ms,jitter=2ms,loss=1%%,rate=100mbit")
    impair.add_argument("--reverse", default=None, help="default: same as --forward")
    run_in = sub.add_parser("exec", help="run a command inside a site (or `wan`), e.g. exec primary -- ping ...")
    run_in.add_argument("site")
    run_in.add_argument("argv", nargs=argparse.REMAINDER, help="the command (after --)")
    check = sub.add_parser("selfcheck", help="check delay, loss and throughput against the targets")
    check.add_argument("--quick", action="store_true", help="a short run (about a minute)")
    check.add_argument("--results", type=Path, default=None, help="results root (default lab-results/)")
    check.add_argument("--budget", type=float, default=None, help="time budget in seconds")
    experiments.add_subcommands(sub)  # every experiment and `all` (lab/experiments/commands.py)


def run(options: dict[str, Any], out: Any = None) -> int:
    out = out or sys.stdout
    if options["action"] in experiments.ACTIONS:
        return experiments.run_experiment(options, out)
    if os.geteuid() != 0:
        print("the lab needs root (network namespaces)", file=sys.stderr)
        return 2
    lab = Lab(prefix=options["prefix"], run_dir=options.get("run_dir"))
    action = options["action"]
    if action == "up":
        lab.up(options["sites"], backend=options.get("backend"))
        print(json.dumps(lab.status(), indent=1), file=out)
    elif action == "down":
        lab.down()
        print(f"lab {lab.prefix} is down", file=out)
    elif action == "status":
        print(json.dumps(lab.status(), indent=1), file=out)
    elif action == "impair":
        if len(options["sites"]) != 2:
            print("impair needs exactly two site names", file=sys.stderr)
            return 2
        forward = Impairment.parse(options["forward"])
        reverse = forward if options["reverse"] is None else Impairment.parse(options["reverse"])
        a, b = options["sites"]
        lab.impair(a, b, LinkProfile("cli", forward, reverse))
        print(json.dumps(lab.status()["profiles"], indent=1), file=out)
    elif action == "exec":
        argv = options["argv"][1:] if options["argv"][:1] == ["--"] else options["argv"]
        if not argv or not lab.is_up:
            print("exec needs an up lab and a command: lab exec SITE -- COMMAND ...", file=sys.stderr)
            return 2
        return subprocess.run(lab.command(options["site"], argv)).returncode
    elif action == "selfcheck":
        return selfcheck(lab, quick=options["quick"], results=options.get("results"), budget=options.get("budget"),
                         out=out)
    return 0


def selfcheck(lab: Lab, *, quick: bool, results: Path | None, budget: float | None, out: Any) -> int:
    """Run the self-check on the lab (bringing it up and down if it was not up) and print the verdict."""
    mode = "quick" if quick else "full"
    owned = not lab.is_up
    if owned:
        lab.up(2)
    try:
        report = run_checks(lab, QUICK if quick else FULL, mode=mode, budget_s=budget or (240 if quick else 1200))
    finally:
        if owned:
            lab.down()
    directory = results_dir(results, mode)
    report.write(directory)
    env = report.environment
    print(f"results: {directory}", file=out)
    print(f"backend={env['backend']} kernel={env['kernel']} "
          f"tcp_cc_default={env['tcp_congestion_control_default']} "
          f"tcp_cc_used={','.join(sorted({r.extra['congestion_control'] for r in report.rows if r.kind == 'tcp'}))}",
          file=out)
    print(f"selfcheck {'PASSED' if report.passed else 'FAILED'}" + (f" ({report.aborted})" if report.aborted else ""),
          file=out)
    print(report.summary_line(), file=out, flush=True)
    return 0 if report.passed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab", description="The flexzone lab: emulated WAN sites.")
    add_arguments(parser)
    return run(vars(parser.parse_args(argv)))

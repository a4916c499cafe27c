"""The lab's self-check: does the emulated WAN do what its profile says?

For each profile it measures, between the primary and the remote site,
* the round-trip time with ping (median of the probes) against the configured round trip,
* the loss of request/reply probes against 1 - (1 - p_forward)(1 - p_reverse),
* bulk TCP throughput with a loss-based congestion control (reno or cubic, set per socket) against
  the Mathis prediction MSS/RTT * 1.22/sqrt(p) using the measured RTT and the configured loss.
Targets: delay within +/-(1 ms + 2 %), loss within +/-0.5 percentage points, throughput within a factor
of 2 of Mathis. Profiles with a rate cap and no loss check instead that bulk TCP gets 80-105 % of the rate.
Every measurement is bracketed by the emulator's health window; a spoiled one is repeated (three tries in
all) and, if still spoiled, counts as a failure.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lab.measure import MATHIS_C, MSS, iperf3, mathis_mbit, ping
from lab.profiles import GilbertElliott, Impairment, LinkProfile
from lab.testbed import Lab

DEFAULT_RESULTS = Path(__file__).resolve().parent.parent / "lab-results"


@dataclass(frozen=True)
class Targets:
    delay_abs_ms: float = 1.0
    delay_rel: float = 0.02
    loss_pp: float = 0.5
    mathis_factor: float = 2.0
    rate_low: float = 0.8  # bulk TCP through a lossless rate cap gets at least 80 % of it ...
    rate_high: float = 1.05  # ... and never noticeably more


# Loss is counted over many probes, sent fast: the sampling error of n probes at loss p is
# sqrt(p(1-p)/n), which at 2 % and 20,000 probes is 0.1 pp, a fifth of the 0.5 pp target, so an
# exact emulator fails the check by chance less than once in a million runs (at 5,000 probes, once
# in a hundred).
FAST_PROBES = 0.00025

@dataclass(frozen=True)
class Check:
    """What to measure under one profile."""

    profile: LinkProfile
    delay_probes: int = 200
    delay_interval: float = 0.01
    loss_probes: int = 0
    loss_interval: float = FAST_PROBES
    tcp_cc: str | None = None
    tcp_seconds: float = 0
    tcp_omit: float = 0

    @property
    def rtt_interval(self) -> float:
        """Seconds between RTT probes: wide enough that jitter never makes a probe wait for the one ahead.

        A FIFO delay stage holds a packet behind an earlier one that drew a longer delay; with probes
        further apart than the jitter range of both directions that cannot happen, so the median RTT is
        the configured one.
        """
        spread = 2 * (self.profile.forward.jitter_ms + self.profile.reverse.jitter_ms) / 1000.0
        return max(self.delay_interval, spread + 0.005 if spread else 0.0)

    def estimate(self) -> float:
        rtt = self.profile.rtt_ms / 1000.0
        return ((self.delay_probes * self.rtt_interval + rtt + 0.5)
                + (self.loss_probes * self.loss_interval + rtt + 1 if self.loss_probes else 0)
                + (self.tcp_seconds + self.tcp_omit + 2 if self.tcp_cc else 0) + 0.5)


def _profile(name: str, forward: str, reverse: str) -> LinkProfile:
    return LinkProfile(name, Impairment.parse(forward), Impairment.parse(reverse))


QUICK = [
    Check(_profile("clear", "none", "none"), delay_probes=100),
    Check(_profile("rtt10-rate20", "delay=5ms,rate=20mbit", "delay=5ms"), delay_probes=100, tcp_cc="cubic",
          tcp_seconds=5, tcp_omit=1),
    Check(_profile("rtt20-loss2", "delay=10ms,loss=2%", "delay=10ms"), loss_probes=20_000, tcp_cc="reno",
          tcp_seconds=15, tcp_omit=3),
]

FULL = [
    Check(_profile("clear", "none", "none")),
    Check(_profile("rtt10-rate20", "delay=5ms,rate=20mbit", "delay=5ms"), tcp_cc="cubic", tcp_seconds=10,
          tcp_omit=2),
    Check(_profile("rtt40-rate100", "delay=20ms,rate=100mbit", "delay=20ms"), tcp_cc="cubic", tcp_seconds=10,
          tcp_omit=2),
    Check(_profile("rtt20-loss1", "delay=10ms,loss=1%", "delay=10ms"), loss_probes=40_000, tcp_cc="reno",
          tcp_seconds=60, tcp_omit=5),
    Check(_profile("rtt40-loss2", "delay=20ms,loss=2%", "delay=20ms"), loss_probes=40_000, tcp_cc="cubic",
          tcp_seconds=60, tcp_omit=5),
    Check(_profile("rtt80-loss1-both", "delay=40ms,loss=1%", "delay=40ms,loss=1%"), loss_probes=40_000,
          tcp_cc="reno", tcp_seconds=60, tcp_omit=5),
    Check(_profile("rtt160-loss4", "delay=80ms,loss=4%", "delay=80ms"), loss_probes=40_000, tcp_cc="reno",
          tcp_seconds=60, tcp_omit=5),
    Check(LinkProfile("rtt40-jitter5-burst2",
                      Impairment(delay_ms=20, jitter_ms=5, burst=GilbertElliott(p=0.01, r=0.5)),
                      Impairment(delay_ms=20, jitter_ms=5)), delay_probes=400, loss_probes=80_000),
]


@dataclass
class Row:
    """One measurement of the self-check, flat enough for CSV."""

    profile: str
    kind: str
    configured: float
    measured: float
    error: float
    unit: str
    within_target: bool
    valid: bool
    attempts: int
    health: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    started: str
    mode: str
    environment: dict[str, Any]
    targets: Targets
    rows: list[Row] = field(default_factory=list)
    aborted: str = ""

    def worst(self, kind: str) -> float:
        values = [r.error for r in self.rows if r.kind == kind]
        return max(values, key=abs) if values else math.nan

    def ratios(self) -> list[float]:
        return [r.extra["ratio"] for r in self.rows if r.kind == "tcp"]

    @property
    def passed(self) -> bool:
        return bool(self.rows) and not self.aborted and all(r.within_target and r.valid for r in self.rows)

    def summary_line(self) -> str:
        ratios = self.ratios() or [math.nan]
        return (f"delay_err_ms={self.worst('delay'):.3f} loss_err_pp={self.worst('loss'):.3f} "
                f"mathis_ratio_min={min(ratios):.3f} mathis_ratio_max={max(ratios):.3f}")

    def to_dict(self) -> dict[str, Any]:
        return {"started": self.started, "mode": self.mode, "passed": self.passed, "aborted": self.aborted,
                "summary": self.summary_line(), "environment": self.environment, "targets": asdict(self.targets),
                "rows": [asdict(r) for r in self.rows]}

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "selfcheck.json").write_text(json.dumps(self.to_dict(), indent=1, default=str))
        with open(directory / "selfcheck.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["profile", "kind", "configured", "measured", "error", "unit", "within_target", "valid",
                             "attempts", "backend", "kernel", "congestion_control", "health"])
            for r in self.rows:
                writer.writerow([r.profile, r.kind, f"{r.configured:.4f}", f"{r.measured:.4f}", f"{r.error:.4f}",
                                 r.unit, r.within_target, r.valid, r.attempts, self.environment.get("backend"),
                                 self.environment.get("kernel"),
                                 r.extra.get("congestion_control",
                                             self.environment.get("tcp_congestion_control_default")),
                                 "; ".join(r.health)])


class Progress:
    """Prints one line per step with elapsed time and an ETA from the steps' estimates."""

    def __init__(self, total_estimate: float, steps: int, out: Callable[[str], None]) -> None:
        self.start = time.monotonic()
        self.remaining = total_estimate
        self.consumed = 0.0
        self.steps = steps
        self.done = 0
        self.out = out

    def step(self, label: str, estimate: float) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        # Scale what is left by how fast the estimates have come true so far (a busy host runs slower).
        pace = elapsed / self.consumed if self.consumed > 5 else 1.0
        self.out(f"[{self.done:2d}/{self.steps}] {_clock(elapsed)} elapsed, ETA {_clock(self.remaining * pace)}  "
                 f"{label}")
        self.remaining = max(0.0, self.remaining - estimate)
        self.consumed += estimate


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60:02d}:{int(seconds) % 60:02d}"


def _measure(lab: Lab, attempt: Callable[[], Any], tries: int = 3) -> tuple[Any, list[str], dict[str, Any], int]:
    """Run a measurement in a health window; repeat it (up to `tries` times) while the emulator spoils it."""
    for n in range(1, tries + 1):
        with lab.measurement() as health:
            value = attempt()
        if health.valid or n == tries:
            return value, health.reasons, health.details, n
    raise AssertionError("unreachable")


def run_checks(lab: Lab, checks: list[Check], *, mode: str, targets: Targets = Targets(), budget_s: float = 900,
               out: Callable[[str], None] | None = None) -> Report:
    """Run the checks on an up lab (primary <-> remote) and return the report; never exceeds budget_s by much."""
    out = out or (lambda line: print(line, file=sys.stderr, flush=True))
    report = Report(datetime.now(UTC).isoformat(timespec="seconds"), mode, lab.environment(), targets)
    steps = sum(1 + bool(c.loss_probes) + bool(c.tcp_cc) for c in checks)
    progress = Progress(sum(c.estimate() for c in checks), steps, out)
    deadline = time.monotonic() + budget_s
    try:
        for check in checks:
            if time.monotonic() + check.estimate() > deadline:
                report.aborted = f"time budget of {budget_s:.0f} s exhausted before {check.profile.name}"
                out(report.aborted)
                break
            lab.impair("primary", "remote", check.profile)
            report.rows += _run_check(lab, check, targets, progress)
    finally:
        lab.clear()
    for row in report.rows:
        mark = "ok " if row.within_target and row.valid else "BAD"
        note = f" [{'; '.join(row.health)}]" if row.health else ""
        out(f"{mark} {row.profile:22s} {row.kind:5s} configured {row.configured:9.3f} measured "
            f"{row.measured:9.3f} {row.unit}{note}")
    return report


def _run_check(lab: Lab, check: Check, targets: Targets, progress: Progress) -> list[Row]:
    profile = check.profile
    remote = lab.site("remote").addr
    rows = []

    progress.step(f"{profile.name}: RTT, {check.delay_probes} probes", check.delay_probes * check.rtt_interval + 1)
    result, reasons, details, tries = _measure(lab, lambda: ping(
        lab, "primary", remote, count=check.delay_probes, interval=check.rtt_interval,
        expected_rtt_ms=profile.rtt_ms))
    rtt = result.rtt_median
    error = rtt - profile.rtt_ms
    tolerance = targets.delay_abs_ms + targets.delay_rel * profile.rtt_ms
    rows.append(Row(profile.name, "delay", profile.rtt_ms, rtt, error, "ms", abs(error) <= tolerance, not reasons,
                    tries, reasons, {"ping": result.to_dict(), "tolerance": tolerance, "emulator": details}))

    if check.loss_probes:
        progress.step(f"{profile.name}: loss, {check.loss_probes} probes", check.loss_probes * check.loss_interval + 1)
        before = lab.backend.counters()
        result, reasons, details, tries = _measure(lab, lambda: ping(
            lab, "primary", remote, count=check.loss_probes, interval=check.loss_interval,
            expected_rtt_ms=profile.rtt_ms))
        after = lab.backend.counters()
        expected = profile.round_trip_loss * 100
        error = result.loss * 100 - expected
        rows.append(Row(profile.name, "loss", expected, result.loss * 100, error, "%", abs(error) <= targets.loss_pp,
                        not reasons, tries, reasons,
                        {"ping": result.to_dict(), "nft_counters_before": before, "nft_counters_after": after,
                         "emulator": details}))

    cc = check.tcp_cc
    if cc and profile.forward.rate_mbit and not profile.forward.mean_loss:
        rate = profile.forward.rate_mbit
        progress.step(f"{profile.name}: TCP {check.tcp_cc} through a {rate:g} Mbit/s cap, {check.tcp_seconds:g} s",
                      check.tcp_seconds + check.tcp_omit + 2)
        tcp, reasons, details, tries = _measure(lab, lambda: iperf3(
            lab, "primary", "remote", seconds=check.tcp_seconds, omit=check.tcp_omit, cc=cc))
        ratio = tcp.mbit / rate
        rows.append(Row(profile.name, "rate", rate, tcp.mbit, ratio - 1, "Mbit/s",
                        targets.rate_low <= ratio <= targets.rate_high, not reasons, tries, reasons,
                        {"ratio": ratio, "congestion_control": tcp.congestion_control, "iperf3": tcp.to_dict(),
                         "emulator": details}))
    elif cc:
        progress.step(f"{profile.name}: TCP {check.tcp_cc} {check.tcp_seconds:g} s (+{check.tcp_omit:g} s omitted)",
                      check.tcp_seconds + check.tcp_omit + 2)
        predicted = mathis_mbit(rtt, profile.forward.mean_loss)
        tcp, reasons, details, tries = _measure(lab, lambda: iperf3(
            lab, "primary", "remote", seconds=check.tcp_seconds, omit=check.tcp_omit, cc=cc))
        ratio = tcp.mbit / predicted
        rows.append(Row(profile.name, "tcp", predicted, tcp.mbit, ratio - 1, "Mbit/s",
                        1 / targets.mathis_factor <= ratio <= targets.mathis_factor, not reasons, tries, reasons,
                        {"ratio": ratio, "congestion_control": tcp.congestion_control, "iperf3": tcp.to_dict(),
                         "rtt_ms_for_model": rtt, "loss_for_model": profile.forward.mean_loss, "mss": MSS,
                         "mathis_c": MATHIS_C, "emulator": details}))
    return rows


def results_dir(root: Path | None, mode: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return (root or DEFAULT_RESULTS) / f"selfcheck-{mode}-{stamp}"

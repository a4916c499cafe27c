"""The delay emulator's own health: a run it spoiled is flagged, a clean run is not."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from lab.measure import ping
from lab.profiles import GilbertElliott, Impairment, LinkProfile

pytestmark = pytest.mark.root


def test_a_clean_run_is_valid_and_reports_its_counters(lab):
    lab.impair("primary", "remote", LinkProfile.symmetric("d10", Impairment(delay_ms=10)))
    reasons = []
    # A busy CI host can genuinely spoil one run (the health check is then right); three in a row cannot.
    for _attempt in range(3):
        with lab.measurement() as health:
            result = ping(lab, "primary", lab.site("remote").addr, count=100, interval=0.01, expected_rtt_ms=20)
        if health.valid:
            break
        reasons.append(health.reasons)
    assert result.received == 100
    assert health.valid, reasons
    details = health.details["primary>remote"]
    assert details["seen"] == details["released"] == 100
    assert details["dropped_queue"] == details["kernel_queue_drops"] == 0
    assert 0 <= details["late_ms_mean"] < 0.5


def test_a_full_emulator_queue_spoils_the_run(lab):
    lab.backend.max_held = 5
    lab.impair("primary", "remote", LinkProfile.symmetric("d50", Impairment(delay_ms=50)))
    with lab.measurement() as health:
        # A preload of 40 probes arrives at once: more than the 5 packets the emulator may hold.
        ping(lab, "primary", lab.site("remote").addr, count=40, interval=0.01, expected_rtt_ms=100)
    assert not health.valid
    assert any("queue full" in reason for reason in health.reasons), health.reasons


def test_an_emulator_that_stalls_releases_late_and_spoils_the_run(lab):
    lab.impair("primary", "remote", LinkProfile.symmetric("d20", Impairment(delay_ms=20)))
    pid_name = "emu-primary-remote"

    def stall() -> None:
        time.sleep(0.5)
        lab.procs.signal(pid_name, signal.SIGSTOP)
        time.sleep(0.3)
        lab.procs.signal(pid_name, signal.SIGCONT)

    staller = threading.Thread(target=stall)
    with lab.measurement() as health:
        staller.start()
        ping(lab, "primary", lab.site("remote").addr, count=150, interval=0.01, expected_rtt_ms=40)
        staller.join()
    assert not health.valid
    assert any("late" in reason for reason in health.reasons), health.reasons
    assert health.details["primary>remote"]["late_ms_max"] > 100


def test_bursty_loss_comes_from_the_emulator_and_matches_its_model(lab):
    burst = GilbertElliott(p=0.02, r=0.25)
    lab.impair("primary", "remote", LinkProfile("ge", Impairment(delay_ms=1, burst=burst), Impairment()))
    with lab.measurement() as health:
        result = ping(lab, "primary", lab.site("remote").addr, count=6000, interval=0.001, expected_rtt_ms=2)
    assert health.valid, health.reasons
    details = health.details["primary>remote"]
    assert details["dropped_burst"] == result.sent - result.received
    # Mean loss 7.4 %. Loss comes in renewal cycles (good runs of mean 50, bursts of mean 4), so over
    # 6,000 packets the loss fraction has a standard deviation of about 0.9 points: +/- 3.5 points
    # is ~4 standard deviations, tight enough to catch a wrong model, loose enough not to flake.
    assert result.loss == pytest.approx(burst.mean_loss, abs=0.035)


def test_a_profile_change_the_emulator_did_not_take_stops_the_run_instead_of_being_recorded(lab):
    """The backend changes a running emulator's delay with SIGHUP. If the emulator does not answer, or answers
    still emulating the old delay (here: a config it could not read), applying the profile fails loudly;
    measuring on would record one profile while the hop emulates another."""
    lab.impair("primary", "remote", LinkProfile.symmetric("d10", Impairment(delay_ms=10)))
    tag = "emu-primary-remote"
    config = lab.backend.run_dir / f"{tag}.json"
    lab.procs.signal(tag, signal.SIGSTOP)
    try:
        with pytest.raises(RuntimeError, match="did not answer a reload"):
            lab.impair("primary", "remote", LinkProfile.symmetric("d20", Impairment(delay_ms=20)))
    finally:
        lab.procs.signal(tag, signal.SIGCONT)

    lab.procs.signal(tag, signal.SIGSTOP)
    failure: list[BaseException] = []

    def apply() -> None:
        try:
            lab.impair("primary", "remote", LinkProfile.symmetric("d30", Impairment(delay_ms=30)))
        except BaseException as exc:  # noqa: BLE001 - examined below
            failure.append(exc)

    applier = threading.Thread(target=apply)
    applier.start()
    try:
        deadline = time.monotonic() + 5
        while '"delay_ms": 30' not in config.read_text().replace(".0", ""):
            assert time.monotonic() < deadline, config.read_text()
            time.sleep(0.01)
        config.write_text("{ not json")  # what the stopped emulator finds when it reads on
    finally:
        lab.procs.signal(tag, signal.SIGCONT)
        applier.join(10)
    assert failure and isinstance(failure[0], RuntimeError), failure
    assert "kept" in str(failure[0]) and "JSONDecodeError" in str(failure[0]), failure[0]

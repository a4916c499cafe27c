"""The delay emulator's scheduling, driven without a kernel queue (no root needed)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.emulator import BurstLoss, DelayEmulator
from lab.nfqueue import NF_ACCEPT, NF_DROP
from lab.profiles import GilbertElliott, Impairment

ROOT = Path(__file__).resolve().parents[2]


class VerdictLog:
    """Stands in for the kernel side of NfQueue: records the verdicts the emulator issues."""

    queue_num = 7

    def __init__(self) -> None:
        self.single: list[tuple[int, int]] = []
        self.batches: list[tuple[int, int]] = []

    def verdict(self, packet_id: int, verdict: int) -> None:
        self.single.append((packet_id, verdict))

    def verdict_batch(self, max_packet_id: int, verdict: int) -> None:
        self.batches.append((max_packet_id, verdict))


def emulator(imp: Impairment, tmp_path, max_held: int = 1000) -> tuple[DelayEmulator, VerdictLog]:
    log = VerdictLog()
    return DelayEmulator(log, imp, max_held=max_held, stats_path=tmp_path / "s.json", seed=1), log


def test_jitter_never_lets_a_packet_overtake_the_one_ahead(tmp_path):
    emu, _ = emulator(Impairment(delay_ms=20, jitter_ms=10), tmp_path)
    now = time.monotonic()
    for packet_id in range(500):
        emu.admit(packet_id, now + packet_id * 0.001)
    dues = [due for due, _ in emu.held]
    assert dues == sorted(dues)
    assert [pid for _, pid in emu.held] == list(range(500))
    assert min(d - (now + i * 0.001) for i, d in enumerate(dues)) >= 0.010 - 1e-9


def test_due_packets_are_accepted_with_one_batch_verdict_up_to_the_last_due_id(tmp_path):
    emu, log = emulator(Impairment(delay_ms=5), tmp_path)
    start = time.monotonic() - 1.0
    for packet_id in range(10):
        emu.admit(packet_id, start)  # due long ago
    for packet_id in range(10, 20):
        emu.admit(packet_id, time.monotonic() + 10)  # not due for 10 s
    emu.release_due()
    assert log.batches == [(9, NF_ACCEPT)]
    assert len(emu.held) == 10
    assert emu.window.released == 10 and emu.window.late_ms_max > 900


def test_a_full_queue_drops_and_counts_instead_of_holding_more(tmp_path):
    emu, log = emulator(Impairment(delay_ms=50), tmp_path, max_held=3)
    for packet_id in range(5):
        emu.admit(packet_id, time.monotonic())
    assert log.single == [(3, NF_DROP), (4, NF_DROP)]
    assert emu.window.dropped_queue == 2 and emu.window.max_held == 3


def test_a_new_window_resets_the_health_counters_but_not_the_totals(tmp_path):
    emu, _ = emulator(Impairment(delay_ms=50), tmp_path, max_held=1)
    emu.admit(1, time.monotonic())
    emu.admit(2, time.monotonic())
    emu.new_window()
    assert emu.window.dropped_queue == 0 and emu.total.dropped_queue == 1
    assert (tmp_path / "s.json").exists()


def test_gilbert_elliott_loses_the_steady_state_share_in_bursts():
    model = GilbertElliott(p=0.02, r=0.25)
    loss = BurstLoss(model, random.Random(4))
    outcomes = [loss.lose() for _ in range(200_000)]
    assert sum(outcomes) / len(outcomes) == pytest.approx(model.mean_loss, rel=0.08)
    bursts = "".join("x" if lost else "." for lost in outcomes).split(".")
    lengths = [len(b) for b in bursts if b]
    assert sum(lengths) / len(lengths) == pytest.approx(model.mean_burst, rel=0.08)


def test_time_spent_in_the_kernel_queue_counts_towards_the_delay_and_is_reported(tmp_path):
    emu, _ = emulator(Impairment(delay_ms=20), tmp_path)
    now = time.monotonic()
    emu.admit(1, now, arrival=now - 0.005)
    emu.admit(2, now, arrival=now + 1)  # a stamp from the future is clamped to now
    assert emu.held[0][0] == pytest.approx(now + 0.015)
    assert emu.held[1][0] == pytest.approx(now + 0.020)
    assert emu.window.ingress_ms_max == pytest.approx(5.0)
    assert emu.snapshot()["window"]["ingress_ms_mean"] == pytest.approx(2.5)


@pytest.mark.root
def test_the_emulator_survives_a_storm_of_window_and_dump_signals_and_keeps_dumping(tmp_path):
    """The backend signals every emulator twice per measurement (SIGUSR1, SIGUSR2) while the emulator dumps
    its stats once a second on its own. A signal arriving inside a dump once made the two dumps race over
    one temporary file: the emulator died on FileNotFoundError, and without --queue-bypass its hop dropped
    every packet (fio: "server disconnected unexpectedly"). Here a real emulator process, bound to a queue
    in a network namespace of its own, takes a few thousand of those signals."""
    config, stats = tmp_path / "imp.json", tmp_path / "stats.json"
    config.write_text(json.dumps(Impairment(delay_ms=5).to_dict()))
    proc = subprocess.Popen(["unshare", "--net", sys.executable, "-m", "lab.emulator", "--queue", "311",
                             "--config", str(config), "--stats", str(stats), "--no-realtime"],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not stats.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        sent, until = 0, time.monotonic() + 3
        while time.monotonic() < until and proc.poll() is None:
            os.kill(proc.pid, (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP)[sent % 3])
            sent += 1
            if sent % 50 == 0:
                time.sleep(0.001)
        assert proc.poll() is None, f"the emulator died after {sent} signals: {proc.stderr.read()[-1500:]}"
        before = json.loads(stats.read_text())["dump_seq"]
        os.kill(proc.pid, signal.SIGUSR2)
        deadline = time.monotonic() + 2
        while json.loads(stats.read_text())["dump_seq"] <= before:
            assert time.monotonic() < deadline, "a dump asked for with SIGUSR2 never came"
            time.sleep(0.01)
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0, proc.stderr.read()[-1500:] if proc.stderr else ""
    final = json.loads(stats.read_text())
    assert final["impairment"]["delay_ms"] == 5 and not list(tmp_path.glob("*.tmp"))


def test_a_reload_of_a_bad_config_keeps_the_last_impairment_and_still_answers_with_a_dump(tmp_path):
    emu, _ = emulator(Impairment(delay_ms=7), tmp_path)

    def broken() -> Impairment:
        raise ValueError("half-written config")

    emu.reload = broken
    emu.request("reload")
    emu.serve_requests()
    assert emu.impairment.delay_ms == 7 and emu.running
    dumped = json.loads((tmp_path / "s.json").read_text())
    assert dumped["dump_seq"] == 1 and dumped["reload_error"] == "ValueError: half-written config"
    emu.reload = lambda: Impairment(delay_ms=9)
    for what in ("reload", "window", "stop"):
        emu.request(what)
    emu.serve_requests()
    assert emu.delay == pytest.approx(0.009) and not emu.running and emu.requests == set()
    assert json.loads((tmp_path / "s.json").read_text())["reload_error"] == ""

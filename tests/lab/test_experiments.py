"""The transfer and filesizes experiments: real fio, nbdkit and relays; CSV, PNG and the report come out."""

from __future__ import annotations

import csv
import shutil
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

from lab.experiments import clients, effective, filesizes, latency, loss, transfer
from lab.experiments.base import LabBench, LoopbackBench, measured, xdd
from lab.xdd import MIB, FioError, XddRun
from simulators.roundtrips import least

pytestmark = pytest.mark.skipif(not (shutil.which("fio") and shutil.which("nbdkit") and shutil.which("iperf3")),
                                reason="fio, nbdkit and iperf3 are needed (make lab-tools)")

TINY_TRANSFER = replace(transfer.QUICK, file_sizes=(4 * MIB, 8 * MIB), records=(64 * 1024, MIB), time_limit_s=1.0,
                        budget_s=60)
TINY_FILESIZES = replace(filesizes.QUICK, sizes=(1 * MIB, 4 * MIB), repetitions=2, budget_s=60)


@pytest.fixture(scope="module")
def loopback():
    """One loopback bench (nbdkit, four relay processes) shared by this module's loopback tests."""
    with LoopbackBench(32 * MIB) as bench:
        yield bench


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, path


def assert_sane_rates(table: list[dict[str, str]]) -> None:
    assert table
    for row in table:
        rate = float(row["mb_per_s"])
        assert 0.1 < rate < 100_000, row
        assert float(row["link_mb_s"]) > 1
        assert int(row["bytes"]) > 0


def test_transfer_on_loopback_writes_csv_json_and_a_plot_per_pattern(loopback, tmp_path):
    plan = replace(TINY_TRANSFER, file_sizes=(4 * MIB,))
    outcome = transfer.run(loopback, plan, tmp_path)
    table = rows(tmp_path / "transfer.csv")
    assert_sane_rates(table)
    assert {r["path"] for r in table} == {"san", "target"}
    assert {(r["pattern"], r["op"]) for r in table} == {(p, o) for p in ("sequential", "random")
                                                        for o in ("write", "read")}
    # reads lag writes: within each cell the write pass comes first
    san = [(r["size_bytes"], r["record_bytes"], r["pattern"], r["op"]) for r in table if r["path"] == "san"]
    assert all(san[i][3] == "write" and san[i + 1][3] == "read" and san[i][:3] == san[i + 1][:3]
               for i in range(0, len(san), 2))
    assert (tmp_path / "transfer.json").exists()
    assert [p.name for p in outcome.plots] == ["transfer-sequential.png", "transfer-random.png"]
    for plot in outcome.plots:
        assert_png(plot)
    assert "| sequential | write | 64 KiB |" in outcome.table


def test_filesizes_on_loopback_compares_every_path_with_and_without_tls(loopback, tmp_path):
    plan = replace(TINY_FILESIZES, repetitions=1)
    outcome = filesizes.run(loopback, plan, tmp_path)
    table = rows(tmp_path / "filesizes.csv")
    assert_sane_rates(table)
    assert {r["path"] for r in table} == {"local-disk", "target", "san", "san-tls"}
    assert len(table) == 2 * 4 * 2  # sizes x paths x (write, read)
    assert all(r["truncated"] == "False" for r in table)
    assert_png(outcome.plots[0])


def test_a_run_stops_at_its_time_budget_and_lists_what_it_skipped(loopback, tmp_path):
    plan = replace(TINY_TRANSFER, budget_s=1.5)
    started = time.monotonic()
    outcome = transfer.run(loopback, plan, tmp_path)
    assert time.monotonic() - started < 30
    assert outcome.skipped
    assert len(rows(tmp_path / "transfer.csv")) + len(outcome.skipped) == len(transfer.cells(plan))


def test_effective_rate_counts_the_measured_setup_and_teardown_of_a_link(loopback, tmp_path):
    plan = replace(effective.QUICK, sizes=(1 * MIB, 8 * MIB), setup_repetitions=1, timing_scale=0.02)
    outcome = effective.run(loopback, plan, tmp_path)
    (timing,) = rows(tmp_path / "setup.csv")
    setup, teardown = float(timing["setup_s"]), float(timing["teardown_s"])
    # login, add and save on both routers at 2 % of the seed's timing, and the data path must carry bytes
    assert 0.1 < setup < 10 and 0.1 < teardown < 10
    table = rows(tmp_path / "effective.csv")
    assert len(table) == 4
    for row in table:
        size, transfer_s = int(row["size_bytes"]), float(row["transfer_s"])
        assert float(row["effective_mb_s"]) == pytest.approx(size / 1e6 / (setup + transfer_s + teardown))
        assert float(row["effective_mb_s"]) < float(row["transfer_mb_s"])
    big = [float(r["effective_mb_s"]) for r in table if r["size_bytes"] == str(8 * MIB)]
    small = [float(r["effective_mb_s"]) for r in table if r["size_bytes"] == str(MIB)]
    assert min(big) > max(small)  # setup is amortised over larger files
    assert_png(outcome.plots[0])


def test_concurrent_clients_each_move_their_own_extent_and_the_aggregate_is_reported(loopback, tmp_path):
    plan = replace(clients.QUICK, clients=(1, 3), size_per_client=4 * MIB, api=None)  # API half: test_api_clients
    outcome = clients.run(loopback, plan, tmp_path)
    table = rows(tmp_path / "clients.csv")
    assert_sane_rates(table)
    for row in table:
        assert int(row["bytes"]) == int(row["clients"]) * 4 * MIB
    assert {(r["path"], r["clients"]) for r in table} == {(p, n) for p in ("san", "target") for n in ("1", "3")}
    assert_png(outcome.plots[0])


@pytest.mark.root
@pytest.mark.slow
def test_transfer_in_the_lab_goes_through_both_routers_across_the_wan(lab, tmp_path):
    with LabBench(lab, TINY_TRANSFER.target_bytes) as bench:
        assert bench.uri("san").startswith(f"nbd://{lab.site('primary').data_addr}:")
        outcome = transfer.run(bench, replace(TINY_TRANSFER, patterns=("sequential",)), tmp_path)
        relays = [name for name in lab.procs.names() if name.startswith("xdd-relay")]
        assert len(relays) == 4
    assert_sane_rates(rows(tmp_path / "transfer.csv"))
    assert all(r["valid"] == "True" for r in rows(tmp_path / "transfer.csv"))
    assert_png(outcome.plots[0])
    assert not [name for name in lab.procs.names() if name.startswith("xdd-")]


@pytest.mark.root
@pytest.mark.slow
def test_filesizes_in_the_lab_with_an_emulated_wan_delay(lab, tmp_path):
    plan = replace(TINY_FILESIZES, repetitions=1)
    with LabBench(lab, plan.target_bytes, profile="delay=5ms") as bench:
        outcome = filesizes.run(bench, plan, tmp_path)
        assert bench.environment()["backend"]
    table = rows(tmp_path / "filesizes.csv")
    assert_sane_rates(table)
    # every request through the WAN waits at least the 10 ms round trip (the emulator never releases early)
    assert min(float(r["latency_ms"]) for r in table if r["path"] in ("san", "san-tls")) > 9.5
    assert {r["profile"] for r in table} == {"delay=5ms"}
    assert_png(outcome.plots[0])
    assert lab.profiles == {}


@pytest.mark.root
def test_a_transfer_a_dead_emulator_cut_off_fails_naming_the_emulator(lab):
    """Without --queue-bypass a dead delay emulator drops its hop's packets: fio can only say the server went
    away. The failure carries what the health window saw, so the report names the cause."""
    with LabBench(lab, 4 * MIB, profile="delay=5ms") as bench:
        emulators = [name for name in lab.procs.names() if name.startswith("emu-")]
        assert len(emulators) == 2
        for name in emulators:
            lab.procs.signal(name, signal.SIGKILL)
        with pytest.raises(FioError) as caught:
            measured(bench, lambda: xdd(bench, "san", XddRun("write", MIB, MIB)))
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "delay emulator is not running" in notes, (str(caught.value), notes)
    assert lab.profiles == {}


@pytest.mark.root
@pytest.mark.slow
def test_latency_grows_with_the_round_trip_across_the_wan_on_the_fcip_pair(lab, tmp_path):
    """The FCIP pair (FOS at primary, MDS across the WAN, both over SSH); test_service_experiments.py runs the
    iFCP one."""
    plan = replace(latency.QUICK, rtts_ms=(0, 100), repetitions=1, links=("FCIP",))
    with LabBench(lab, plan.target_bytes, data_path=False) as bench:
        outcome = latency.run(bench, plan, tmp_path)
    table = rows(tmp_path / "latency.csv")
    assert {r["op"] for r in table} == {"add", "list", "remove"}
    assert {(r["links"], r["wan_router"]) for r in table} == {("FCIP", "cisco_mds")}
    assert all(r["ok"] == "True" for r in table), table
    for op in ("add", "list", "remove"):
        near, far = (float(r["seconds"]) for rtt in ("0", "100") for r in table if r["op"] == op
                     and float(r["rtt_ms"]) == float(rtt))
        assert far - near > 0.2  # an SSH session's commands cost several round trips: 100 ms each
        assert int(next(r for r in table if r["op"] == op)["remote_turns"]) >= least("cisco_mds", op)
    assert_png(outcome.plots[0])
    assert lab.profiles == {}


@pytest.mark.root
@pytest.mark.slow
def test_loss_experiment_counts_successes_and_checks_router_agreement(lab, tmp_path):
    plan = replace(loss.QUICK, loss_pct=(0, 10), repetitions=1)
    with LabBench(lab, plan.target_bytes, data_path=False) as bench:
        outcome = loss.run(bench, plan, tmp_path)
    points = rows(tmp_path / "loss-points.csv")
    assert [float(p["loss_pct"]) for p in points] == [0, 10]
    assert points[0]["success_rate"] == "1.0" and points[0]["agree"] == "True"
    assert int(points[1]["ops"]) == 3
    assert_png(outcome.plots[0])


def test_the_data_path_follows_a_link_change_within_a_fraction_of_a_second():
    up, down = effective.data_path_activation()
    assert 0 < up < 1 and 0 < down < 1

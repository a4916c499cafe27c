"""xdd-style runs: fio's nbd engine against a real nbdkit on loopback, and the fio JSON in xdd's units."""

from __future__ import annotations

import json
import shutil

import pytest

from lab.xdd import MIB, FioError, LocalPlace, NbdTarget, XddRun, free_port, parse_fio_json, prefill, xdd_nbd

needs_tools = pytest.mark.skipif(not (shutil.which("fio") and shutil.which("nbdkit")), reason="fio/nbdkit missing")


def test_xdd_options_map_onto_fio_options():
    run = XddRun("read", 128 * 1024, 64 * MIB, pattern="random", queue_depth=8, time_limit_s=5)
    opts = run.fio_options()
    assert "--rw=randread" in opts and "--bs=131072" in opts and f"--size={64 * MIB}" in opts
    assert "--iodepth=8" in opts and "--runtime=5" in opts
    assert "--time_based" not in opts  # a pass ends at its size or its time limit, whichever comes first


def test_several_clients_become_fio_jobs_on_their_own_extents():
    opts = XddRun("write", MIB, 8 * MIB, clients=4).fio_options()
    assert "--numjobs=4" in opts and "--group_reporting" in opts and f"--offset_increment={8 * MIB}" in opts
    assert XddRun("write", MIB, 8 * MIB, clients=4).total_bytes == 32 * MIB


def test_timeout_allows_draining_what_is_in_flight_after_the_time_limit():
    shallow = XddRun("write", MIB, 64 * MIB, queue_depth=1, time_limit_s=8)
    deep = XddRun("write", MIB, 64 * MIB, queue_depth=8, time_limit_s=8)
    assert deep.timeout() > shallow.timeout() > 8


@pytest.mark.parametrize("bad", [dict(op="copy"), dict(pattern="zigzag"), dict(size_bytes=MIB + 1)])
def test_impossible_runs_are_refused(bad):
    args = dict(op="read", record_bytes=MIB, size_bytes=4 * MIB) | bad
    with pytest.raises(ValueError):
        XddRun(**args)


def test_fio_json_is_found_after_the_nbd_engines_chatter():
    body = {"jobs": [{"error": 0, "write": {"io_bytes": 10, "bw_bytes": 2_000_000}}]}
    text = "fio: connected to NBD server\n" + json.dumps(body)
    assert parse_fio_json(text, "write")["bw_bytes"] == 2_000_000
    with pytest.raises(FioError):
        parse_fio_json("fio: connected to NBD server\nno report", "write")


@pytest.fixture
def target():
    place = LocalPlace()
    nbd = NbdTarget(place, "127.0.0.1", free_port(), 16 * MIB).start()
    yield nbd
    nbd.stop()
    place.stop_all()


@needs_tools
def test_a_write_then_read_pass_moves_every_byte_at_a_positive_rate(target):
    prefill(target.place, target.uri, 16 * MIB)
    results = [xdd_nbd(target.place, target.uri, XddRun(op, 64 * 1024, 8 * MIB, queue_depth=2))
               for op in ("write", "read")]
    for result in results:
        assert result.bytes == 8 * MIB and not result.truncated
        assert 0.5 < result.mb_per_s < 100_000
        assert result.iops > 0 and result.latency_ms > 0


@needs_tools
def test_random_reads_with_a_time_limit_stop_early_and_say_so(target):
    result = xdd_nbd(target.place, target.uri,
                     XddRun("read", 4096, 16 * MIB, pattern="random", time_limit_s=0.3))
    assert 0 < result.bytes <= 16 * MIB
    assert result.seconds < 5
    assert result.truncated == (result.bytes < 16 * MIB)

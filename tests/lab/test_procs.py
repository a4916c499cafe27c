"""Lab processes are tracked by PID and start time, so a stale PID file never hits a stranger."""

from __future__ import annotations

import os

from lab.procs import ProcessTable


def test_a_started_process_is_found_by_name_and_stopped(tmp_path):
    procs = ProcessTable(tmp_path)
    proc = procs.start("sleeper", ["sleep", "30"])
    try:
        assert procs.pid("sleeper") == proc.pid
        assert procs.names() == ["sleeper"]
    finally:
        procs.stop("sleeper")
    assert proc.poll() is not None
    assert procs.pid("sleeper") is None and procs.names() == []


def test_a_pid_file_whose_start_time_does_not_match_is_stale_and_ignored(tmp_path):
    procs = ProcessTable(tmp_path)
    procs.pid_dir.mkdir(parents=True)
    # Our own PID with a start time it never had: a recycled PID must not be signalled.
    (procs.pid_dir / "ghost.pid").write_text(f"{os.getpid()} 1\n")
    assert procs.pid("ghost") is None
    procs.stop("ghost")
    assert not (procs.pid_dir / "ghost.pid").exists()

"""The quick self-check meets its targets on this machine, and its results say how they were made.

It runs as docs/architecture.md shows it, `python -m lab selfcheck --quick`, in a subprocess with nothing of ours in its
environment (no database: the self-check needs none), on a lab the fixture brought up on the fallback backend.
"""

from __future__ import annotations

import json

import pytest

from tests.support.lab import run_lab

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_quick_selfcheck_meets_the_delay_loss_and_mathis_targets(lab, tmp_path):
    done = run_lab(["--prefix", lab.prefix, "--run-dir", str(lab.run_dir), "selfcheck", "--quick", "--budget", "120",
                    "--results", str(tmp_path / "results")], tmp_path)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    lines = done.stdout.splitlines()
    assert lines[2] == "selfcheck PASSED", done.stdout
    assert any("ETA" in line for line in done.stderr.splitlines())
    (directory,) = (tmp_path / "results").iterdir()
    assert lines[0] == f"results: {directory}" and directory.name.startswith("selfcheck-quick-")
    saved = json.loads((directory / "selfcheck.json").read_text())
    assert {row["kind"] for row in saved["rows"]} == {"delay", "loss", "tcp", "rate"}
    assert saved["environment"]["backend"] == lab.backend_name
    assert lines[1].startswith(f"backend={lab.backend_name} kernel={saved['environment']['kernel']} ")
    assert saved["environment"]["kernel"]
    assert saved["environment"]["tcp_congestion_control_default"]
    assert {row["extra"]["congestion_control"] for row in saved["rows"] if row["kind"] == "tcp"} == {"reno"}
    assert all(row["extra"]["congestion_control"] for row in saved["rows"] if row["kind"] == "rate")
    assert (directory / "selfcheck.csv").read_text().count("\n") == len(saved["rows"]) + 1
    assert lines[3].startswith("delay_err_ms=")
    assert lab.is_up and not json.loads((lab.run_dir / "state.json").read_text())["profiles"], \
        "the self-check leaves the lab it found up, with the link clear"
    assert not (tmp_path / "default.sqlite3").exists()

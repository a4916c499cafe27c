"""The quick self-check meets its targets on this machine, and its results say how they were made."""

from __future__ import annotations

import json

import pytest

from netem.selfcheck import QUICK, results_dir, run_checks

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_quick_selfcheck_meets_the_delay_loss_and_mathis_targets(lab, tmp_path):
    lines: list[str] = []
    report = run_checks(lab, QUICK, mode="quick", budget_s=120, out=lines.append)
    directory = results_dir(tmp_path, "quick")
    report.write(directory)

    assert report.passed, "\n".join(lines)
    kinds = {row.kind for row in report.rows}
    assert kinds == {"delay", "loss", "tcp", "rate"}
    assert any("ETA" in line for line in lines)
    saved = json.loads((directory / "selfcheck.json").read_text())
    assert saved["environment"]["backend"] == lab.backend_name
    assert saved["environment"]["kernel"]
    assert saved["environment"]["tcp_congestion_control_default"]
    assert {row["extra"]["congestion_control"] for row in saved["rows"] if row["kind"] == "tcp"} == {"reno"}
    assert all(row["extra"]["congestion_control"] for row in saved["rows"] if row["kind"] == "rate")
    assert (directory / "selfcheck.csv").read_text().count("\n") == len(report.rows) + 1
    assert report.summary_line().startswith("delay_err_ms=")
    assert not lab.profiles, "the self-check leaves the link clear"

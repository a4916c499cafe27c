"""The lab commands the README and docs/ show, run as a user would: `python -m lab ...` in a subprocess, in an
environment that holds nothing of ours but what the test gives it (no DATABASE_URL unless given), with the
default SQLite file moved where the test can see that nothing touched it.

The documents' own lines are read, so a lab command added to them without a quick form here fails this test.
`selfcheck --quick` runs as a user would in test_selfcheck.py (in a lab the fixture brought up on the
fallback backend, so that every kernel checks the same one); `all --quick` runs here, on loopback and with a
budget of seconds per experiment: in the lab its experiments take minutes (latency and loss through the
service in the lab are tested in test_experiments.py and test_service_experiments.py).
"""

from __future__ import annotations

import csv
import os
import re
from urllib.parse import urlsplit

import psycopg
import pytest

from lab.database import maintenance_url
from tests.support.docs import guide_documents, shell_lines
from tests.support.lab import run_lab

SHOWN = re.compile(r"^(?:sudo (?:--preserve-env=DATABASE_URL )?)?\.venv/bin/python -m lab ([^#]*?)\s*(?:#.*)?$")
# What each lab command shown runs in the tests.
QUICK = {
    "selfcheck --quick": "tests/lab/test_selfcheck.py",
    "all --quick": ["all", "--quick", "--where", "loopback", "--budget", "3", "--setup-s", "2", "--teardown-s", "1"],
}
PLOTS = ("transfer/transfer-sequential.png", "transfer/transfer-random.png", "filesizes/filesizes.png",
         "effective/effective.png", "clients/clients.png", "clients/api_clients.png")


def readme_lab_commands() -> list[str]:
    return [found.group(1) for document in guide_documents() for line in shell_lines(document.read_text())
            if (found := SHOWN.match(line))]


def lab_databases(server: str, pid: int) -> set[str]:
    """The databases the lab process `pid` made (flexzone_lab_<label>_<pid>_<token>) and left on the server."""
    with psycopg.connect(maintenance_url(server), autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'flexzone\\_lab\\_%'").fetchall()
    return {name for (name,) in rows if f"_{pid}_" in name}


def test_every_lab_command_the_readme_shows_has_a_quick_form_here():
    commands = readme_lab_commands()
    assert commands and set(commands) <= set(QUICK), commands


def test_lab_all_without_postgresql_stops_at_once_saying_what_to_set(tmp_path):
    results = tmp_path / "results"
    for env in ({}, {"DATABASE_URL": f"sqlite:///{tmp_path / 'other.sqlite3'}"}):
        done = run_lab([*QUICK["all --quick"], "--results", str(results)], tmp_path, **env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("lab all: needs PostgreSQL: set DATABASE_URL=postgres://")
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not results.exists() and not (tmp_path / "default.sqlite3").exists()


@pytest.mark.slow
def test_lab_all_quick_runs_every_experiment_on_a_database_of_its_own_and_writes_the_report(tmp_path):
    server = os.environ.get("DATABASE_URL", "")
    if urlsplit(server).scheme not in ("postgres", "postgresql"):
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")
    done = run_lab([*QUICK["all --quick"], "--results", str(tmp_path / "results")], tmp_path, DATABASE_URL=server)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    (folder,) = (tmp_path / "results").iterdir()
    report = (folder / "report.md").read_text()
    for plot in PLOTS:
        assert f"]({plot})" in report
        data = (folder / plot).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, plot
    assert "| op | file size |" in report and "| pattern | op | record |" in report
    assert "Registry/API operations over mutual TLS" in report and "FAILED" not in report
    assert "## Compared with the seed" in report  # latency and loss need the lab: their rows say not measured
    with open(folder / "clients" / "api_clients.csv", newline="") as f:
        api = [row for row in csv.DictReader(f) if row["operation"] == "all"]
    assert [row["clients"] for row in api] == ["1", "2", "4"] and {row["errors"] for row in api} == {"0"}, api
    assert all(float(row["p95_ms"]) >= float(row["p50_ms"]) > 0 and float(row["requests_per_s"]) > 0 for row in api)
    assert done.stdout.rstrip().endswith(f"report: {folder / 'report.md'}")
    assert lab_databases(server, done.pid) == set()
    assert not (tmp_path / "default.sqlite3").exists()

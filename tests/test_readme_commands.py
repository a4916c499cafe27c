"""Every python command the README and the pages under docs/ show, run as a new user would: from a clean
copy of the tree (no .demo/, no migrated database), in an environment that holds nothing of ours, each in
its quick form.

The documents' own lines are read, so a command added to them without a quick form here fails this test.
A command that needs what only `make demo` starts (its simulators, its server), or runs until stopped,
says where it is tested. tests/test_docs.py checks every command they show exists, without running it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.database import TEMPLATE_ENV
from registry.readiness import database_url
from tests.support.docs import guide_documents, shell_lines

ROOT = Path(__file__).resolve().parents[1]

# What each command shown runs here: a shorter form of it, or why it is exercised elsewhere. A command that
# is not a key itself takes the form of the first key it starts with.
QUICK: dict[str, list[str] | str] = {
    "manage.py loaddemo": ["manage.py", "loaddemo"],
    "manage.py migrate": ["manage.py", "migrate", "--no-input", "-v", "0"],
    "manage.py plan --device-description XRAID2 --site primary-site": ["manage.py", "plan", "--device-description",
                                                                        "XRAID2", "--site", "primary-site"],
    "manage.py plan --zone 2 --site GSFC-DICEL1": ["manage.py", "plan", "--zone", "2", "--site", "GSFC-DICEL1"],
    "manage.py plan --wwn 21:00:00:E0:8B:0E:95:17 --site 1": ["manage.py", "plan", "--wwn", "21:00:00:E0:8B:0E:95:17",
                                                              "--site", "1"],
    "manage.py plan --remove --device-description XRAID2 --site primary-site": [
        "manage.py", "plan", "--remove", "--device-description", "XRAID2", "--site", "primary-site"],
    "manage.py routers list": ["manage.py", "routers", "list"],
    "manage.py audit verify": ["manage.py", "audit", "verify"],
    "manage.py audit checkpoint --output checkpoint.json": "needs entries to sign: tests/operations/test_ledger.py",
    "manage.py audit verify --checkpoint checkpoint.json": "needs a checkpoint: tests/operations/test_ledger.py",
    "manage.py routers trust east-rtr": "needs the demo's SSH simulators: tests/operations/test_host_keys.py",
    "manage.py reconcile": "reads every router: tests/operations/test_reconcile.py",
    "manage.py worker": "runs until stopped: tests/operations/test_worker.py starts and stops workers",
    "manage.py ca issue-client": "needs a CA: tests/api/test_ca_commands.py",
    "-m bench planner": ["-m", "bench", "planner", "--sites", "20", "--devices", "60", "--queries", "30"],
    "-m bench routers": ["-m", "bench", "routers", "--platform", "nishan_ips3000", "--scale", "0.01"],
    "-m bench ops": ["-m", "bench", "ops", "--ops", "4", "--warm-adds", "1", "--eclipse-scale", "0.02", "--pairs",
                     "1", "--ops-per-router", "2", "--parallel-delays", "--timing-scale 0.1 --jitter 0"],
    "-m bench api": ["-m", "bench", "api", "--requests", "20", "--concurrency", "2", "--seconds", "0.3"],
    "-m bench soak --minutes 30": ["-m", "bench", "soak", "--steps", "2", "--quiet"],
    "-m bench soak --db-restarts --minutes 30": ["-m", "bench", "soak", "--db-restarts", "--steps", "2", "--quiet"],
    "lab": "runs as root in network namespaces: the lab's quick forms are tested in tests/lab",
}
SHOWN = re.compile(r"^(?:sudo )?\.venv/bin/python (manage\.py [^#]*?|-m [^#]*?)\s*(?:#.*)?$")


def readme_commands() -> list[str]:
    """The python commands of the documents' shell blocks, without the interpreter and comments."""
    return [found.group(1).strip() for document in guide_documents()
            for line in shell_lines(document.read_text()) if (found := SHOWN.match(line))]


def quick_form(command: str) -> list[str] | str:
    if command in QUICK:
        return QUICK[command]
    for shown, quick in QUICK.items():
        if command == shown or command.startswith(shown + " ") or (shown == "lab" and " lab " in f" {command} "):
            return quick
    raise AssertionError(f"the documents show `{command}`, which this test has no quick form of: add one to QUICK")


@pytest.fixture(scope="module")
def clean_checkout(tmp_path_factory) -> Path:
    """What a clone of this tree would hold: the files git tracks or would track (committed or not, so the
    test checks the change being made), without anything ignored (.venv, .demo, keys, databases)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True) if shutil.which("git") else None
    if listed is None or listed.returncode != 0:
        pytest.skip("not a git checkout: nothing to take a clean copy of")
    folder = tmp_path_factory.mktemp("clean-checkout")
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the tree is not in the clone either
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder


def run(checkout: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """The venv's interpreter in the checkout, with an environment that holds nothing of ours but `env`."""
    keep = {name: value for name, value in os.environ.items()
            if not name.startswith(("FLEXZONE_", "DATABASE_URL", "DJANGO_", "PROMETHEUS_"))}
    return subprocess.run([sys.executable, *argv], cwd=checkout, env={**keep, **env}, capture_output=True, text=True,
                          timeout=300)


def test_every_readme_command_has_a_quick_form():
    commands = readme_commands()
    assert {"manage.py loaddemo", "-m bench ops"} <= set(commands), commands
    for command in commands:
        quick_form(command)


@pytest.mark.slow
def test_the_registry_commands_stop_with_one_line_on_a_fresh_clone_and_work_once_migrated(clean_checkout, tmp_path):
    # As on a fresh clone: the default SQLite file's folder (.demo/) does not exist yet either.
    database = {"FLEXZONE_SQLITE_PATH": str(tmp_path / "not-made-yet" / "registry.sqlite3")}
    registry = [quick_form(command) for command in readme_commands() if command.startswith("manage.py")]
    registry = [argv for argv in registry if isinstance(argv, list)]
    refused = run(clean_checkout, registry[0], **database)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().count("\n") == 0 and "run `python manage.py migrate` first" in refused.stderr
    migrated = run(clean_checkout, ["manage.py", "migrate", "--no-input", "-v", "0"], **database)
    assert migrated.returncode == 0, migrated.stderr
    for argv in registry:
        done = run(clean_checkout, argv, **database)
        assert done.returncode == 0, (argv, done.stderr[-2000:])
    assert "Plan: add site primary-site -> zone 2 (XRAID2)" in run(clean_checkout, registry[1], **database).stdout


@pytest.mark.slow
@pytest.mark.django_db
def test_every_benchmark_runs_on_a_database_of_its_own_or_says_what_it_needs(clean_checkout):
    benches = [quick_form(command) for command in readme_commands() if command.startswith("-m bench")]
    assert len(benches) == 6
    refused = run(clean_checkout, ["-m", "bench", "ops"])
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "bench ops: needs PostgreSQL: set DATABASE_URL=postgres://USER@HOST:PORT/DB (a server where it may create a "
        "temporary database of its own; make test uses postgres://postgres@127.0.0.1:5432/flexzone)")
    server = database_url(name="postgres")  # the server: each bench makes a database of its own there
    template = {TEMPLATE_ENV: os.environ[TEMPLATE_ENV]} if TEMPLATE_ENV in os.environ else {}  # a copy, not a migrate
    for argv in benches:
        done = run(clean_checkout, argv, DATABASE_URL=server, **template)
        assert done.returncode == 0, (argv, done.stdout[-1500:], done.stderr[-3000:])
        assert "=" in done.stdout.strip().splitlines()[-1] or "every invariant held" in done.stdout, done.stdout

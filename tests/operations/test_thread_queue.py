"""The thread queue (no procrastinate worker: the SQLite demo) across restarts and processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from operations import submit
from operations.models import Grant, Operation
from registry.readiness import database_url
from tests.support.agreement import assert_agreement, router_keys
from tests.support.worker import WORKER_ENV, wait_for

ROOT = Path(__file__).resolve().parents[2]


def manage_shell(code: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", "shell", "--no-imports", "-c", code], cwd=ROOT, env=env,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.django_db(transaction=True)
def test_a_restarted_api_process_runs_what_was_queued_before_and_starts_its_chores(ops_lab, secrets_dir, tmp_path):
    # Journaled and queued by a process that stopped before running it (the manual queue runs nothing).
    queued = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    Grant.objects.create(device=ops_lab.demo["xraid3"], site=ops_lab.demo["remote"], exclusive=True,
                              expires_at=timezone.now() - timedelta(seconds=5), reason="a lease that ran out")
    env = {**os.environ, **WORKER_ENV, "FLEXZONE_OPS_QUEUE": "thread", "FLEXZONE_OPS_LEASE_EVERY": "1",
           "DATABASE_URL": database_url(), "FLEXZONE_SECRETS_DIR": str(secrets_dir)}
    log = tmp_path / "api.log"
    # What gunicorn runs in each API worker process as it starts (serving/gunicorn_conf.py); nothing is submitted.
    api = manage_shell("import time; from serving.gunicorn_conf import post_worker_init; post_worker_init(None); "
                       "time.sleep(60)", env, log)
    try:
        done = wait_for(lambda: (o := Operation.objects.get(pk=queued.pk)).state not in ("queued", "running") and o,
                        30, f"the queued add to run ({log})")
        assert done.state == "succeeded", (done.error, log.read_text()[-2000:])
        wait_for(lambda: Operation.objects.filter(kind="expire").exists(), 15, "the lease expiry chore")
    finally:
        stop(api)
    assert router_keys(ops_lab.primary_sim) and router_keys(ops_lab.remote_sim)
    assert_agreement(ops_lab)


def test_two_processes_on_one_sqlite_database_never_drive_one_router_at_once(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env.update(FLEXZONE_SQLITE_PATH=str(tmp_path / "flexzone.sqlite3"), FLEXZONE_OPS_QUEUE="thread")
    holder = manage_shell("import time; from operations.locking import router_lock\n"
                          "with router_lock(7, 5.0):\n    print('held', flush=True); time.sleep(30)",
                          env, tmp_path / "holder.log")
    try:
        wait_for(lambda: "held" in (tmp_path / "holder.log").read_text(), 30, "the first process's lock")
        other = subprocess.run(
            [sys.executable, "manage.py", "shell", "--no-imports", "-c",
             "from operations.locking import RouterBusy, router_lock\n"
             "try:\n    with router_lock(7, 0.5):\n        print('held')\n"
             "except RouterBusy as exc:\n    print('busy:', exc)\n"
             "with router_lock(8, 0.5):\n    print('other router held')"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True)
    finally:
        stop(holder)
    assert other.stdout.splitlines()[0].startswith("busy:"), other.stdout
    assert "other router held" in other.stdout
    freed = subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c",
                            "from operations.locking import router_lock\nwith router_lock(7, 5.0):\n    print('held')"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True)
    assert freed.stdout.strip() == "held"  # the killed holder's lock went with its process

"""Real worker processes (procrastinate on PostgreSQL): a worker SIGKILLed mid-operation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from registry.models import Operation
from registry.operations import submit
from routers.sim.personality import TimingProfile
from tests.ops.test_ops_basics import assert_agreement, router_keys

ROOT = Path(__file__).resolve().parents[2]
WORKER_ENV = {
    "FLEXZONE_OPS_QUEUE": "procrastinate",
    "FLEXZONE_OPS_HEARTBEAT": "0.2",
    "FLEXZONE_OPS_STALE_AFTER": "1.5",
    "FLEXZONE_OPS_REAP_EVERY": "1",
    "FLEXZONE_OPS_SAVE_CONFIG": "each",
    "FLEXZONE_OPS_BACKOFF": "0.05",
    "FLEXZONE_LOG_LEVEL": "WARNING",
}


def database_url() -> str:
    """The test database as a DATABASE_URL for a child process (TCP or a unix-socket directory)."""
    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="") + (":" + quote(db["PASSWORD"], safe="") if db["PASSWORD"] else "")
    host = quote(db["HOST"] or "127.0.0.1", safe="")
    return f"postgres://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(secrets_dir: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, **WORKER_ENV, "DATABASE_URL": database_url(), "FLEXZONE_SECRETS_DIR": str(secrets_dir)}
    return subprocess.Popen(
        [sys.executable, "manage.py", "worker", "--concurrency", "4"],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_operation_survives_its_worker_being_killed_mid_command(lab_factory, settings, secrets_dir, tmp_path):
    settings.FLEXZONE_OPS_QUEUE = "procrastinate"
    slow_add = TimingProfile(command=0.01, mutating_command=1.5)
    lab = lab_factory(timing=slow_add, scale=1.0)
    log = tmp_path / "workers.log"
    workers = [start_worker(secrets_dir, log)]
    try:
        op = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
        wait_for(lambda: Operation.objects.get(pk=op.pk).phase == "on_router", 30, "the first router step")
        time.sleep(0.5)  # the add command is now in flight on primary-rtr
        os.killpg(workers[0].pid, signal.SIGKILL)
        workers[0].wait()
        assert Operation.objects.get(pk=op.pk).state == "running"
        workers.append(start_worker(secrets_dir, log))
        done = wait_for(
            lambda: (o := Operation.objects.get(pk=op.pk)).state not in ("queued", "running") and o, 60, "recovery"
        )
        assert done.state == "succeeded", (done.error, log.read_text()[-3000:])
        assert "recovered" in done.transcript
        assert router_keys(lab.primary_sim) == {(8, 1, "127.0.0.22")}
        assert_agreement(lab)
    finally:
        for worker in workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
                    worker.wait()


@pytest.mark.django_db(transaction=True)
def test_the_thread_queue_runs_operations_in_the_background(ops_lab, settings):
    settings.FLEXZONE_OPS_QUEUE = "thread"
    op = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    done = wait_for(
        lambda: (o := Operation.objects.get(pk=op.pk)).state not in ("queued", "running") and o, 30, "the operation"
    )
    assert done.state == "succeeded", done.error
    assert_agreement(ops_lab)

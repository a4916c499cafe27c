"""Real worker processes (procrastinate on PostgreSQL): a worker SIGKILLed mid-operation, a worker
stopped with SIGTERM mid-operation."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from operations import affinity, submit
from operations.affinity import own_queue, release_stale, steal
from operations.locking import router_lock
from operations.models import Grant, Operation, RouterSession
from registry.models import Router
from registry.readiness import database_url
from simulators.personality import TimingProfile
from tests.support.agreement import assert_agreement, router_keys
from tests.support.worker import WORKER_ENV, wait_for

ROOT = Path(__file__).resolve().parents[2]
def start_worker(secrets_dir: Path, log: Path, concurrency: int = 4, **env_extra: str) -> subprocess.Popen:
    env = {**os.environ, **WORKER_ENV, "DATABASE_URL": database_url(), "FLEXZONE_SECRETS_DIR": str(secrets_dir),
           **env_extra}
    return subprocess.Popen(
        [sys.executable, "manage.py", "worker", "--concurrency", str(concurrency)],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


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
        stop_workers(workers)


@pytest.mark.django_db(transaction=True)
def test_the_thread_queue_runs_operations_in_the_background(ops_lab, settings):
    settings.FLEXZONE_OPS_QUEUE = "thread"
    op = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    done = wait_for(
        lambda: (o := Operation.objects.get(pk=op.pk)).state not in ("queued", "running") and o, 30, "the operation"
    )
    assert done.state == "succeeded", done.error
    assert_agreement(ops_lab)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_sigterm_lets_a_worker_finish_its_operation_log_out_and_let_go(lab_factory, settings, secrets_dir, tmp_path,
                                                                         no_jobs_left):
    """The units' stop signal (deploy): the worker takes no new job, finishes the one it runs (bounded
    by FLEXZONE_OPS_TOTAL_TIMEOUT), saves, logs out of every router, and leaves no lock or worker row."""
    settings.FLEXZONE_OPS_QUEUE = "procrastinate"
    lab = lab_factory(timing=TimingProfile(command=0.01, mutating_command=1.5), scale=1.0)
    log = tmp_path / "worker.log"
    worker = start_worker(secrets_dir, log)
    try:
        op = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
        wait_for(lambda: Operation.objects.get(pk=op.pk).phase == "on_router", 30, "the first router step")
        time.sleep(0.3)  # the add command is in flight on primary-rtr
        queued = submit("add", {"site": "primary-site", "device_description": "XRAID2"})
        os.killpg(worker.pid, signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, log.read_text()[-3000:]
        done = Operation.objects.get(pk=op.pk)
        assert done.state == "succeeded" and "recovered" not in done.transcript, (done.error, log.read_text()[-3000:])
        # The second add was taken only if it came before the signal; if not, the worker's own queue (it
        # holds the routers' sessions) handed it to the shared one when procrastinate stopped taking jobs.
        second = Operation.objects.get(pk=queued.pk).state
        assert second in ("queued", "succeeded")
        assert router_keys(lab.primary_sim) == {(8, 1, "127.0.0.22"), *([(8, 2, "127.0.0.22")] * (second != "queued"))}
        if second == "queued":
            assert job_queue(queued) == "operations", log.read_text()[-3000:]
        # Logged out: the simulators see each session end (on their own loop, a moment after the exit).
        wait_for(lambda: lab.primary_sim.active_sessions() == lab.remote_sim.active_sessions() == 0, 5, "logouts")
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                           "(SELECT oid FROM pg_database WHERE datname = current_database())")  # not other runs
            assert cursor.fetchone()[0] == 0
            cursor.execute("SELECT count(*) FROM procrastinate_workers")
            assert cursor.fetchone()[0] == 0
        assert not RouterSession.objects.exists()  # its session slots are given back
    finally:
        stop_workers([worker])


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_lease_expiry_runs_while_every_operation_slot_waits_on_a_busy_router(ops_lab, settings, secrets_dir,
                                                                               tmp_path):
    settings.FLEXZONE_OPS_QUEUE = "procrastinate"
    log = tmp_path / "worker.log"
    # Another worker's long sessions on both routers: every add waits, holding its slot.
    with router_lock(ops_lab.primary_rtr.pk, 5.0), router_lock(ops_lab.remote_rtr.pk, 5.0):
        worker = start_worker(secrets_dir, log, concurrency=2, FLEXZONE_OPS_LEASE_EVERY="1",
                              FLEXZONE_OPS_ROUTER_WAIT="60")
        try:
            waiting = [submit("add", {"site": site, "device_description": device})
                       for site, device in (("remote-site", "XRAID1"), ("primary-site", "XRAID2"))]
            wait_for(lambda: Operation.objects.filter(pk__in=[op.pk for op in waiting], state="running").count() == 2,
                     30, f"both slots to take an add ({log})")
            Grant.objects.create(device=ops_lab.demo["xraid3"], site=ops_lab.demo["primary"], exclusive=True,
                                      expires_at=timezone.now() - timedelta(seconds=1), reason="a lease that ran out")
            wait_for(lambda: Operation.objects.filter(kind="expire").exists(), 10,
                     f"lease expiry while both operation slots wait ({log})")
        finally:
            stop_workers([worker])


# --- work goes where the session is (operations/affinity.py) -------------------------------------


@pytest.fixture
def no_jobs_left():
    """procrastinate's jobs are not flushed between tests: start and end with none."""
    def clear():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM procrastinate_jobs")

    clear()
    yield
    clear()


def job_queue(op: Operation) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT queue_name FROM procrastinate_jobs WHERE id = %s",
                       [Operation.objects.get(pk=op.pk).job_id])
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_an_operation_is_queued_for_the_process_holding_its_routers_sessions(ops_lab, settings, no_jobs_left):
    settings.FLEXZONE_OPS_QUEUE = "procrastinate"
    request = {"site": "remote-site", "device_description": "XRAID1"}
    assert job_queue(submit("add", request)) == "operations"  # nobody holds a session: the shared queue
    for router in (ops_lab.primary_rtr, ops_lab.remote_rtr):  # a CLI's reconcile, say: it takes no jobs
        RouterSession.objects.create(router=router, holder="cli-host:77:cc")
    assert job_queue(submit("add", request)) == "operations"
    RouterSession.objects.create(router=ops_lab.remote_rtr, holder="worker@host-b:2:bb")
    long_name = "worker@a-host-name-of-sixty-three-bytes-as-dns-allows.storage.example:4194304:0f0f0f0f"
    for router in (ops_lab.primary_rtr, ops_lab.remote_rtr):
        RouterSession.objects.create(router=router, holder=long_name)
    # PostgreSQL refuses a notification channel over 63 bytes: a queue named after the holder would fail.
    assert job_queue(submit("add", request)) == own_queue(long_name)
    RouterSession.objects.filter(holder=long_name).delete()
    for router in (ops_lab.primary_rtr, ops_lab.remote_rtr):
        RouterSession.objects.create(router=router, holder="worker@host-a:1:aa")
    assert job_queue(submit("add", request)) == own_queue("worker@host-a:1:aa")  # the holder of both routers
    RouterSession.objects.filter(holder="worker@host-a:1:aa", router=ops_lab.remote_rtr).delete()
    # One router each: the plan's first router's holder (the remote-site connect starts on primary-rtr).
    first = Router.objects.get(pk=Operation.objects.latest("pk").plan["steps"][0]["router_id"]).name
    expected = own_queue("worker@host-a:1:aa") if first == ops_lab.primary_rtr.name else own_queue("worker@host-b:2:bb")
    assert job_queue(submit("add", request)) == expected
    # A holder asked to give its session up, or one that stopped beating, is not waited for.
    RouterSession.objects.update(release_wanted=True)
    assert job_queue(submit("add", request)) == "operations"
    RouterSession.objects.update(release_wanted=False, heartbeat_at=timezone.now() - timedelta(seconds=60))
    assert job_queue(submit("add", request)) == "operations"
    RouterSession.objects.update(heartbeat_at=timezone.now())
    settings.FLEXZONE_OPS_AFFINITY_WAIT = 0  # routing off
    assert job_queue(submit("add", request)) == "operations"


@pytest.mark.django_db(transaction=True)
def test_a_job_waits_for_its_sessions_holder_only_while_no_worker_is_idle(ops_lab, settings, monkeypatch,
                                                                           no_jobs_left):
    settings.FLEXZONE_OPS_QUEUE = "procrastinate"
    settings.FLEXZONE_OPS_AFFINITY_WAIT = 2.0
    for router in (ops_lab.primary_rtr, ops_lab.remote_rtr):
        RouterSession.objects.create(router=router, holder="worker@host-a:1:aa")
    request = {"site": "remote-site", "device_description": "XRAID1"}
    busy = submit("add", request)
    # This process is an idle worker of two slots (host c), with nothing in its own queues.
    idle = own_queue("worker@host-c:3:cc")
    monkeypatch.setattr(affinity, "_serving", (idle, 2))
    assert release_stale() == steal() == 0 and job_queue(busy) == own_queue("worker@host-a:1:aa")  # fresh, alive
    Operation.objects.filter(pk=busy.pk).update(created_at=timezone.now() - timedelta(seconds=3))
    monkeypatch.setattr(affinity, "_running", 2)  # every slot busy: moving it would only cost a login
    assert steal() == 0 and job_queue(busy) == own_queue("worker@host-a:1:aa")
    monkeypatch.setattr(affinity, "_running", 1)
    assert steal() == 1 and job_queue(busy) == idle  # its holder is busy, and this worker is not
    Operation.objects.filter(pk=busy.pk).delete()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM procrastinate_jobs WHERE queue_name = %s", [idle])
    waiting = submit("add", request)
    Operation.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(seconds=3))
    RouterSession.objects.create(router=ops_lab.primary_rtr, holder="worker@host-c:3:cc")  # alive
    with connection.cursor() as cursor:  # ... but it has work of its own waiting: nothing moves
        cursor.execute("INSERT INTO procrastinate_jobs (queue_name, task_name, args) VALUES (%s, 'x', '{}')",
                       [idle])
    assert steal() == 0 and job_queue(waiting) == own_queue("worker@host-a:1:aa")
    RouterSession.objects.filter(holder="worker@host-a:1:aa").update(
        heartbeat_at=timezone.now() - timedelta(seconds=60))  # the holder died
    assert release_stale() == 1 and job_queue(waiting) == "operations"
    # This worker is told to stop (SIGTERM): what waits in its own queue goes to the others.
    affinity.stop_serving()
    assert steal() == 0 and release_stale() == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM procrastinate_jobs WHERE queue_name = %s", [idle])
        assert cursor.fetchone()[0] == 0
    monkeypatch.setattr(affinity, "_stopping", None)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_routers_operations_run_where_its_session_is_and_move_when_that_worker_dies(
        lab_factory, settings, secrets_dir, tmp_path, no_jobs_left):
    settings.FLEXZONE_OPS_QUEUE = "procrastinate"
    lab = lab_factory()
    log = tmp_path / "workers.log"
    # No stealing within the test: only the dead holder's rule can move its job.
    workers = [start_worker(secrets_dir, log, concurrency=2, FLEXZONE_OPS_AFFINITY_WAIT="60") for _ in range(2)]
    request = {"site": "remote-site", "device_description": "XRAID1"}

    def run(kind: str) -> Operation:
        op = submit(kind, request)
        done = wait_for(lambda: (o := Operation.objects.get(pk=op.pk)).state not in ("queued", "running") and o,
                        30, f"{kind} ({log})")
        assert done.state == "succeeded", (done.error, log.read_text()[-3000:])
        return done

    def pid(op: Operation) -> int:
        return int(op.claimed_by.split("#")[0].rsplit(":", 1)[1])

    try:
        wait_for(lambda: _listening_workers() == 2, 30, "both workers")
        holder = pid(run("add"))
        for kind in ("remove", "add", "remove", "add", "remove", "add"):
            assert pid(run(kind)) == holder  # the worker whose pool holds both routers' sessions
        assert lab.primary_sim.sessions_started == lab.remote_sim.sessions_started == 1  # one login each
        dead = next(worker for worker in workers if worker.pid == holder)
        os.killpg(dead.pid, signal.SIGKILL)
        dead.wait()
        # Its rows still look alive for FLEXZONE_OPS_STALE_AFTER: the job is queued for it, then moved.
        assert pid(run("remove")) == next(worker.pid for worker in workers if worker is not dead)
        assert_agreement(lab)
    finally:
        stop_workers(workers)


def _listening_workers() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM procrastinate_workers")
        return cursor.fetchone()[0]


def test_a_worker_told_to_stop_by_procrastinate_stops_serving_its_queue(monkeypatch):
    """procrastinate says it stops taking jobs only in its log (`action="stopping_worker"`, its
    Worker.stop): the worker command's filter turns that into affinity.stop_serving()."""
    from operations.management.commands.worker import _StopWatch

    monkeypatch.setattr(affinity, "_serving", ("operations@0123456789abcdef", 4))
    monkeypatch.setattr(affinity, "_stopping", None)
    watch = _StopWatch(logging.WARNING)
    record = logging.LogRecord("procrastinate.worker", logging.INFO, __file__, 1, "Stop requested", None, None)
    assert watch.filter(record) is False and affinity._serving is not None  # any other INFO record: hidden
    record.action = "stopping_worker"
    watch.filter(record)
    assert affinity._serving is None and affinity._stopping == "operations@0123456789abcdef"

"""The soak's workers (bench/soak.py): two threads that run a step's operations in queue order, each on
its database connection, and the workers that die: an operation claimed and abandoned, or a child
process running it SIGKILLed mid-operation, which the stalled-operation reaper hands back."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.utils import timezone

from bench import soak_restarts
from bench.soak_checks import LIVE
from operations.chores import reap_stalled_operations
from operations.conf import ops_settings
from operations.models import Operation
from operations.runner import execute
from registry.readiness import database_url

ROOT = Path(__file__).resolve().parents[1]
# Short retries and timeouts, a worker presumed dead after 1.5 s (the engine tests run with these too).
SOAK_SETTINGS = {
    "FLEXZONE_OPS_QUEUE": "manual",  # the soak's own two workers run every operation
    "FLEXZONE_OPS_BACKOFF": 0.05,
    "FLEXZONE_OPS_BACKOFF_MAX": 0.2,
    "FLEXZONE_OPS_MAX_ATTEMPTS": 4,
    "FLEXZONE_OPS_TOTAL_TIMEOUT": 30.0,
    "FLEXZONE_OPS_ROUTER_WAIT": 20.0,
    "FLEXZONE_OPS_SAVE_CONFIG": "each",
    "FLEXZONE_OPS_HEARTBEAT": 0.2,
    "FLEXZONE_OPS_STALE_AFTER": 1.5,
}


def execute_all(ids: list[int], killed: tuple[int, str, float] | None, lines: list[str], *, secrets_dir: Path,
                kills: Counter[str], problems: list[str]) -> None:
    """Run the operations on two worker threads (submission order, as a queue hands them out); `killed`
    (operation, "claim" | "process", delay s) says which one's worker dies, and how."""
    work: queue.Queue[int | None] = queue.Queue()
    child = None
    if killed and killed[1] == "claim":
        claim_and_abandon(killed[0], kills, problems)  # the reaper queues it again: it stays in the queue
    elif killed:
        child = start_child_worker(killed[0], secrets_dir)
    childs = killed[0] if child is not None and killed else None  # the child worker's operation, not queued here
    for pk in ids:
        if pk != childs:
            work.put(pk)
    workers = [threading.Thread(target=_worker, args=(work,), name=f"soak-worker-{n}") for n in (1, 2)]
    for worker in workers:
        work.put(None)  # one end marker per worker
        worker.start()
    if child is not None and killed:
        kill_and_recover(killed, child, lines, kills, problems)
    for worker in workers:
        worker.join()


def claim_and_abandon(operation_id: int, kills: Counter[str], problems: list[str]) -> None:
    """A worker that claimed the operation and died before its first heartbeat; the reaper finds it."""
    dead = timezone.now() - timedelta(seconds=ops_settings().stale_after + 1)
    Operation.objects.filter(pk=operation_id, state=Operation.State.QUEUED).update(
        state=Operation.State.RUNNING, started_at=dead, heartbeat_at=dead, claimed_by="soak-dead-worker#0"
    )
    kills["claimed and abandoned"] += 1
    if operation_id not in reap_stalled_operations():
        problems.append(f"the reaper did not find operation {operation_id} stalled (heartbeat {dead})")


def start_child_worker(operation_id: int, secrets_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url(), "FLEXZONE_SECRETS_DIR": str(secrets_dir),
           "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "flexzone.settings"),
           "FLEXZONE_LOG_LEVEL": "CRITICAL", **{k: str(v) for k, v in SOAK_SETTINGS.items()}}
    code = "import sys, django; django.setup(); from operations import execute; execute(int(sys.argv[1]))"
    return subprocess.Popen([sys.executable, "-c", code, str(operation_id)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def kill_and_recover(killed: tuple[int, str, float], child: subprocess.Popen, lines: list[str], kills: Counter[str],
                     problems: list[str]) -> None:
    """SIGKILL the child worker a moment after its claim; then the reaper finds the operation stalled
    (heartbeat stale) and a worker (this thread) re-runs it in recovery mode."""
    operation_id, _how, delay = killed
    try:
        _wait_for(lambda: Operation.objects.filter(pk=operation_id).exclude(state=Operation.State.QUEUED).exists(),
                  20)
        time.sleep(delay)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    op = Operation.objects.get(pk=operation_id)
    kills["process killed " + ("mid-operation" if op.state in LIVE else "after the end")] += 1
    lines.append(f"  child worker killed {delay:.2f} s after its claim, in phase {op.phase} ({op.state})")
    if op.state == Operation.State.QUEUED:
        lines.append(f"  the child worker never claimed operation {operation_id}; a worker runs it")
        execute(operation_id)
        return
    deadline = time.monotonic() + ops_settings().stale_after * 4 + 5
    while Operation.objects.filter(pk=operation_id, state__in=LIVE).exists():
        if operation_id in reap_stalled_operations():
            lines.append(f"  operation {operation_id} reaped and re-run: {execute(operation_id).state}")
            return
        if time.monotonic() > deadline:
            problems.append(f"the reaper never found operation {operation_id} stalled after its worker died")
            return
        time.sleep(0.1)


def _worker(work: queue.Queue) -> None:
    """One worker: takes operations in queue order and runs each to its end, on its own connection. With
    database restarts (bench/soak_restarts.py), one the database left half-run is finished after the step."""
    close_old_connections()
    try:
        while (operation_id := work.get()) is not None:
            try:
                execute(operation_id)
            except (OperationalError, InterfaceError):
                if soak_restarts.CLUSTER is None:
                    raise
                connection.close()  # the server went away under it: a new connection for the next one
    finally:
        connection.close()


def _wait_for(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)

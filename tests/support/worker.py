"""`manage.py worker` processes started by tests: their environment, and waiting on what they do."""

from __future__ import annotations

import time

WORKER_ENV = {
    "FLEXZONE_OPS_QUEUE": "procrastinate",
    "FLEXZONE_OPS_HEARTBEAT": "0.2",
    "FLEXZONE_OPS_STALE_AFTER": "1.5",
    "FLEXZONE_OPS_REAP_EVERY": "1",
    "FLEXZONE_OPS_SAVE_CONFIG": "each",
    "FLEXZONE_OPS_BACKOFF": "0.05",
    "FLEXZONE_LOG_LEVEL": "WARNING",
}


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")

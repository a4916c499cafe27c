"""Start-up checks of the operations settings: a bad combination stops the process, naming both variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start(**env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "flexzone.settings", **env}
    return subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=environment, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("heartbeat", ["15", "20", "8"])
def test_a_heartbeat_not_well_inside_the_stale_limit_stops_start_up(heartbeat):
    started = start(FLEXZONE_OPS_HEARTBEAT=heartbeat, FLEXZONE_OPS_STALE_AFTER="15")
    assert started.returncode != 0
    assert "FLEXZONE_OPS_HEARTBEAT" in started.stderr and "FLEXZONE_OPS_STALE_AFTER" in started.stderr


def test_a_heartbeat_at_most_half_the_stale_limit_starts():
    started = start(FLEXZONE_OPS_HEARTBEAT="7.5", FLEXZONE_OPS_STALE_AFTER="15")
    assert started.returncode == 0, started.stderr

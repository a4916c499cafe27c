"""`python -m bench converge`, quick: 8 simulated routers wiped while 24 grants stand, 2 worker processes
of 2 threads, a repair of every router asked through the API; the figures line, no router over its
session budget, and nothing for reconcile to find afterwards. Run as its own command, as a user would:
it deploys the service on a database of its own (lab/deployment.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"converge_s", "ideal_s", "efficiency", "max_router_sessions", "min_session_budget", "drift"}


@pytest.mark.slow
def test_bench_converge_repairs_a_wiped_fleet_across_workers_within_their_budgets():
    argv = [sys.executable, "-m", "bench", "converge", "--routers", "8", "--grants", "24", "--workers", "2",
            "--concurrency", "2", "--namespaces", "off"]
    proc = subprocess.run(argv, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, (out[-3000:], proc.stderr[-3000:])
    figures = {name: float(value) for name, value in re.findall(r"(\w+)=([\d.]+)", out.strip().splitlines()[-1])}
    assert set(figures) == KEYS, out
    assert 0 < figures["ideal_s"] and 0 < figures["efficiency"] <= 1.5, out
    assert figures["drift"] == 0 and figures["min_session_budget"] == 2, out
    assert 1 <= figures["max_router_sessions"] <= 4, out
    assert "24 grants over 4 site pairs" in out and "repairs: 8 routers" in out, out

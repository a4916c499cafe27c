"""`python -m bench scale`, quick: 16 simulated routers, 2 worker processes of 2 threads, the API in front,
a few seconds of connects and disconnects through REST; the figures line, no router over its session
budget, and nothing for reconcile to find. Run as its own command, from outside, as a user would: it
deploys the service on a database of its own (lab/deployment.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"scale_ops_per_s", "scale_efficiency", "max_router_sessions", "min_session_budget", "over_budget",
        "op_p50_ms", "op_p95_ms", "db_connections", "drift"}


@pytest.mark.slow
def test_bench_scale_runs_a_stream_over_workers_and_routers_within_their_budgets():
    argv = [sys.executable, "-m", "bench", "scale", "--routers", "16", "--workers", "2", "--concurrency", "2",
            "--seconds", "6", "--namespaces", "off"]
    proc = subprocess.run(argv, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, (out[-3000:], proc.stderr[-3000:])
    figures = {name: float(value) for name, value in re.findall(r"(\w+)=([\d.]+)", out.strip().splitlines()[-1])}
    assert set(figures) == KEYS, out
    assert figures["scale_ops_per_s"] > 0 and 0 < figures["scale_efficiency"] <= 1.5, out
    assert figures["over_budget"] == 0 and figures["drift"] == 0, out
    assert 1 <= figures["max_router_sessions"] <= 4 and figures["min_session_budget"] == 2, out
    assert figures["op_p50_ms"] <= figures["op_p95_ms"] and figures["db_connections"] > 2, out
    assert "2 workers x 2 threads, plain processes" in out

"""latency and loss through the flexzone service: the engine at the primary site, routers across the WAN.

Real namespaces, real simulators, a real PostgreSQL database over the UNIX socket; root only.
"""

from __future__ import annotations

import csv
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from netem.experiments import latency, loss
from netem.experiments.base import LabBench
from netem.experiments.service import SOCKET_DIR, LabService, ServiceSettings, phase_sum_ok

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture
def lab_prefix() -> str:
    """Distinct from the other lab tests' prefixes (and from a developer's `lab up`): fzsvc<random>."""
    return f"fzsvc{uuid.uuid4().hex[:4]}"


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def database_exists(name: str) -> bool:
    out = subprocess.run(["psql", "-h", SOCKET_DIR, "-U", "postgres", "-d", "postgres", "-Atc",
                          f"SELECT 1 FROM pg_database WHERE datname = '{name}'"], capture_output=True, text=True,
                         check=True).stdout
    return out.strip() == "1"


def assert_nothing_left(lab, database: str) -> None:
    assert not database_exists(database)
    assert lab.procs.pid("svc-sim-primary") is None and lab.procs.pid("svc-sim-remote") is None


def test_latency_splits_each_service_operation_into_registry_invocation_and_router_time(lab, tmp_path):
    plan = replace(latency.QUICK, rtts_ms=(0, 80), repetitions=2, budget_s=120)
    with LabBench(lab, plan.target_bytes, data_path=False) as bench:
        outcome = latency.run(bench, plan, tmp_path)
    table = rows(tmp_path / "latency.csv")
    assert {r["kind"] for r in table} == {"add", "list", "remove"} and len(table) == 2 * 2 * 3
    for r in table:
        assert r["state"] == "succeeded", r
        phases = {k: float(r[k]) for k in ("registry_ms", "invocation_ms", "router_ms", "total_ms")}
        assert all(value > 0 for value in phases.values()), r
        assert phase_sum_ok(phases), r
    for op in ("add", "list", "remove"):
        near, far = (sorted(float(r["router_ms"]) for r in table if r["kind"] == op and float(r["rtt_ms"]) == rtt)
                     for rtt in (0, 80))
        assert min(far) - max(near) > 80  # a login to the far router alone costs several 80 ms round trips
    data = (tmp_path / "latency.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert outcome.plots[0] == tmp_path / "latency.png"
    assert lab.profiles == {}
    assert_nothing_left(lab, f"flexzone_lab_{lab.prefix}")


def test_loss_finds_registry_and_routers_in_agreement_after_every_point(lab, tmp_path):
    plan = replace(loss.QUICK, loss_pct=(0, 5), repetitions=1, budget_s=120)
    with LabBench(lab, plan.target_bytes, data_path=False) as bench:
        outcome = loss.run(bench, plan, tmp_path)
    points = rows(tmp_path / "loss-points.csv")
    assert [float(p["loss_pct"]) for p in points] == [0, 5]
    assert [p["agree"] for p in points] == ["True", "True"], points
    assert points[0]["success_rate"] == "1.0" and int(points[0]["ops"]) == 3
    table = rows(tmp_path / "loss.csv")
    assert {r["kind"] for r in table} == {"add", "list", "remove"}
    assert all(float(r["router_ms"]) > 0 for r in table if r["state"] == "succeeded")
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert outcome.valid or any(p["valid"] == "False" for p in points)
    assert_nothing_left(lab, f"flexzone_lab_{lab.prefix}")


def test_the_service_drops_its_database_and_stops_its_routers_when_a_run_fails(lab):
    service = LabService(lab, ServiceSettings(timing_scale=0.05))
    with pytest.raises(RuntimeError, match="boom"), service:
        assert database_exists(service.database)
        assert lab.procs.pid("svc-sim-remote") is not None
        raise RuntimeError("boom")
    assert_nothing_left(lab, service.database)

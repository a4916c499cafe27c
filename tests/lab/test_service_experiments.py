"""latency and loss through the flexzone service: the engine at the primary site, routers across the WAN.

Real namespaces, real simulators, the real service started from outside (manage.py serve and worker) on a
temporary PostgreSQL database of its own; root only.
"""

from __future__ import annotations

import csv
import json
import os
import uuid
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from lab.backends import FallbackBackend
from lab.database import maintenance_url, server_url
from lab.experiments import latency, loss, sites
from lab.experiments.base import LabBench
from lab.experiments.service import WORKER, LabService, ServiceSettings, phase_sum_ok

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture
def lab_prefix() -> str:
    """Distinct from the other lab tests' prefixes (and from a developer's `lab up`): fzsvc<random>."""
    return f"fzsvc{uuid.uuid4().hex[:4]}"


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(autouse=True)
def postgres() -> None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")


def databases(prefix: str) -> list[str]:
    """The service databases of a lab (named flexzone_lab_<prefix>_...) on DATABASE_URL's server."""
    with psycopg.connect(maintenance_url(server_url()), autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (f"flexzone_lab_{prefix}_%",))
        return [name for (name,) in rows]


def assert_nothing_left(lab) -> None:
    assert databases(lab.prefix) == []
    assert [lab.procs.pid(name) for name in ("svc-sim-primary", "svc-sim-remote", "svc-serve", WORKER)] == [None] * 4


def test_latency_splits_each_service_operation_into_registry_invocation_and_router_time(lab, tmp_path):
    plan = replace(latency.QUICK, rtts_ms=(0, 80), repetitions=2, budget_s=120, links=("iFCP",))
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
        # The far router's own time (the operation's router_ms is its slowest router's: worked at once,
        # the Eclipse's login at the near site may hide the far one's round trips).
        near, far = (sorted(float(r["listed_router_ms"]) for r in table if r["kind"] == op
                            and float(r["rtt_ms"]) == rtt) for rtt in (0, 80))
        assert min(far) - max(near) > 80  # a login to the far router alone costs several 80 ms round trips
    data = (tmp_path / "latency.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert outcome.plots[0] == tmp_path / "latency.png"
    assert lab.profiles == {}
    assert_nothing_left(lab)


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
    assert_nothing_left(lab)


def test_the_service_drops_its_database_and_stops_its_processes_when_a_run_fails(lab):
    service = LabService(lab, ServiceSettings(timing_scale=0.05))
    with pytest.raises(RuntimeError, match="boom"), service:
        assert databases(lab.prefix) == [service.database]
        assert all(lab.procs.pid(name) for name in ("svc-sim-primary", "svc-sim-remote", "svc-serve", WORKER))
        raise RuntimeError("boom")
    assert_nothing_left(lab)


def test_five_sites_connect_to_each_others_arrays_at_once_and_move_blocks_over_each_path(new_lab, tmp_path):
    """`sites` on a small extent: every pair asked at once, the compatible ones connected (FCIP over SSH
    included), blocks over each of them, everything disconnected, registry and routers agreeing throughout."""
    lab = new_lab.up(5, backend=FallbackBackend.name)
    plan = replace(sites.QUICK, size_bytes=1 << 20, time_limit_s=3, budget_s=240)
    with LabBench(lab, plan.target_bytes, data_path=False) as bench:
        outcome = sites.run(bench, plan, tmp_path)
    ops = rows(tmp_path / "sites.csv")
    adds = {(r["from"], r["to"]): r for r in ops if r["kind"] == "add"}
    assert len(adds) == 20
    fcip = {"site4", "site5"}
    for (a, b), row in adds.items():
        if (a in fcip) == (b in fcip):
            assert row["state"] == "succeeded", row
        else:
            assert row["state"] == "refused" and "different protocols" in row["error"], row
    removes = [r for r in ops if r["kind"] == "remove"]
    assert len(removes) == 8 and all(r["state"] == "succeeded" for r in removes), removes
    transfers = rows(tmp_path / "sites-transfers.csv")
    failed = [(t["from"], t["to"], t["op"], t["error"]) for t in transfers if not t["mb_per_s"]]
    assert len(transfers) == 16 and not failed, failed
    assert all(float(t["mb_per_s"]) > 0 for t in transfers), transfers
    far = [float(t["rtt_ms"]) for t in transfers if "site3" in (t["from"], t["to"])]
    assert far and all(rtt == 2 * plan.far.delay_ms for rtt in far)
    report = json.loads((tmp_path / "sites.json").read_text())["agreement"]
    assert report["after_connect"]["agree"] and report["after_disconnect"]["agree"], report
    assert outcome.valid or not all(t["valid"] == "True" for t in transfers)
    assert databases(lab.prefix) == []
    assert [lab.procs.pid(f"svc-sim-{site}") for site in lab.sites] == [None] * 5
    assert not [name for name in lab.procs.names() if name.startswith("sites-")]

"""/metrics against a real server: who may read it, and what an add, a remove, a refusal and a reconcile
run by another process do to the figures.

The server here has two gunicorn workers and runs operations itself (thread queue) against router
simulators, with a metrics directory shared with any process given the same FLEXZONE_METRICS_DIR.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from registry.readiness import database_url
from tests.support.servers import (
    FAST_OPERATIONS,
    IDLE_CHORES,
    ROOT,
    ServedLab,
    Server,
    running_server,
    serve_the_demo,
)

IFCP_PAIR = "mcdata_eclipse+nishan_ips3000"


@pytest.fixture(scope="module")
def metrics_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("metrics")


@pytest.fixture(scope="module")
def metrics_server(django_db_setup, django_db_blocker, api_pki, cli_secrets, metrics_dir, tmp_path_factory):
    """The CLI tests' server (`cli_server`) but with two workers, pooled sessions, the metrics directory above."""
    log = tmp_path_factory.mktemp("metrics-server") / "gunicorn.log"
    env = {**FAST_OPERATIONS, **IDLE_CHORES, "FLEXZONE_OPS_POOL": "true", "FLEXZONE_API_WORKERS": "2",
           "FLEXZONE_PKI_DIR": str(api_pki.dir), "FLEXZONE_SECRETS_DIR": str(cli_secrets),
           "FLEXZONE_METRICS_DIR": str(metrics_dir), "FLEXZONE_API_MAX_WAIT": "5"}
    with running_server(log, **env) as (_process, url):
        yield Server(url, log)


@pytest.fixture
def metrics_lab(metrics_server, cast, sim_factory, cli_secrets, settings) -> ServedLab:
    """`cli_lab` on `metrics_server`."""
    return serve_the_demo(metrics_server, cast, sim_factory, cli_secrets, settings)


@pytest.fixture
def monitor(cast, api_pki):
    """prom: the certificate Prometheus scrapes with (role monitor)."""
    from access.principals import register

    return register(api_pki.issued("prom"), "prom", "monitor")


def session_for(lab, api_pki, name: str | None) -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    session.verify = api_pki.ca_file
    if name is not None:
        session.cert = api_pki.pair(name)
    return session


def scrape(lab, api_pki, name: str = "prom") -> dict[tuple[str, tuple], float]:
    """Every sample of one scrape, keyed by (sample name, sorted labels)."""
    response = session_for(lab, api_pki, name).get(f"{lab.server.url}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def run_operation(lab, api_pki, path: str, body: dict) -> dict:
    session = session_for(lab, api_pki, "alice")
    response = session.post(f"{lab.server.url}{path}", json=body, timeout=30)
    assert response.status_code in (200, 202), response.text
    operation = response.json()
    deadline = time.monotonic() + 30
    while operation["state"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.1)
        operation = session.get(operation["url"], timeout=10).json()
    assert operation["state"] == "succeeded", operation
    return operation


def test_the_monitor_role_and_admins_read_the_metrics_and_nobody_else_does(metrics_lab, api_pki, monitor):
    before = scrape(metrics_lab, api_pki)
    url = metrics_lab.server.url
    for name, role in (("alice", "operator"), ("bob", "viewer")):
        refused = session_for(metrics_lab, api_pki, name).get(f"{url}/metrics", timeout=10)
        assert refused.status_code == 403
        assert refused.json()["detail"] == (f"Principal {name} has role {role}; /metrics is for the monitor and "
                                            "admin roles.")
    assert "flexzone_queue_depth" in session_for(metrics_lab, api_pki, "root").get(f"{url}/metrics").text
    # The monitor reads nothing else.
    assert session_for(metrics_lab, api_pki, "prom").get(f"{url}/api/sites/", timeout=10).status_code == 403
    with pytest.raises(requests.exceptions.RequestException):
        session_for(metrics_lab, api_pki, None).get(f"{url}/metrics", timeout=10)

    after = scrape(metrics_lab, api_pki)
    assert value(after, "flexzone_refusals_total", stage="authorization") - \
        value(before, "flexzone_refusals_total", stage="authorization") == 3
    # The server counts a refused handshake once its worker has given up on it, which may come after the
    # client already saw the refusal: read again for a while.
    deadline = time.monotonic() + 10
    while value(after, "flexzone_refusals_total", stage="tls") == value(before, "flexzone_refusals_total",
                                                                         stage="tls") and time.monotonic() < deadline:
        time.sleep(0.1)
        after = scrape(metrics_lab, api_pki)
    assert value(after, "flexzone_refusals_total", stage="tls") - value(before, "flexzone_refusals_total",
                                                                         stage="tls") == 1


@pytest.mark.slow
def test_an_add_and_a_remove_are_counted_with_their_durations_sessions_and_links(metrics_lab, api_pki, monitor):
    before = scrape(metrics_lab, api_pki)
    target = {"site": "remote-site", "device_description": "XRAID1"}
    added = run_operation(metrics_lab, api_pki, "/api/connect/", target)
    middle = scrape(metrics_lab, api_pki)
    assert value(middle, "flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="succeeded") - \
        value(before, "flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="succeeded") == 1
    for phase in ("registry", "invocation", "router", "total"):
        name = "flexzone_operation_duration_seconds"
        assert value(middle, f"{name}_count", kind="add", phase=phase) - \
            value(before, f"{name}_count", kind="add", phase=phase) == 1
    router_seconds = value(middle, "flexzone_operation_duration_seconds_sum", kind="add", phase="router") - \
        value(before, "flexzone_operation_duration_seconds_sum", kind="add", phase="router")
    assert router_seconds == pytest.approx(added["router_ms"] / 1000, rel=1e-6)
    assert value(middle, "flexzone_links", state="up") == 2
    assert value(middle, "flexzone_queue_depth") == 0
    # Pooled sessions stay logged in after the add: at least one per router (per worker that ran one).
    assert value(middle, "flexzone_router_sessions_open", platform="mcdata_eclipse") >= 1
    assert value(middle, "flexzone_router_sessions_open", platform="nishan_ips3000") >= 1

    run_operation(metrics_lab, api_pki, "/api/disconnect/", target)
    after = scrape(metrics_lab, api_pki)
    assert value(after, "flexzone_operations_total", kind="remove", platform=IFCP_PAIR, outcome="succeeded") - \
        value(before, "flexzone_operations_total", kind="remove", platform=IFCP_PAIR, outcome="succeeded") == 1
    assert value(after, "flexzone_links", state="up") == 0
    assert value(after, "flexzone_links", state="down") == 2


@pytest.mark.slow
def test_a_reconcile_run_by_another_process_is_in_the_servers_scrape_with_its_drift(
    metrics_lab, api_pki, monitor, metrics_dir, cli_secrets
):

    from operations.models import Link

    run_operation(metrics_lab, api_pki, "/api/connect/", {"site": "remote-site", "device_description": "XRAID1"})
    # Drift: the registry forgets one of the two links the routers hold.
    Link.objects.filter(router__name="remote-rtr").update(state=Link.State.DOWN)
    before = scrape(metrics_lab, api_pki)
    env = dict(os.environ, DATABASE_URL=database_url(), FLEXZONE_OPS_QUEUE="manual",
               FLEXZONE_SECRETS_DIR=str(cli_secrets), FLEXZONE_METRICS_DIR=str(metrics_dir))
    report = subprocess.run([sys.executable, "manage.py", "reconcile"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert "remote-rtr: 1 difference(s)" in report.stdout

    after = scrape(metrics_lab, api_pki)
    assert value(after, "flexzone_operations_total", kind="reconcile", platform="all", outcome="succeeded") - \
        value(before, "flexzone_operations_total", kind="reconcile", platform="all", outcome="succeeded") == 1
    assert value(after, "flexzone_drift_links", router="remote-rtr", kind="extra") == 1
    assert value(after, "flexzone_drift_links", router="primary-rtr", kind="extra") == 0
    assert value(after, "flexzone_reconcile_last_timestamp_seconds", router="remote-rtr") > time.time() - 60

"""What the engine counts for Prometheus, read from this process's own registry (no multi-process
directory in the tests): each operation once, by the worker whose end was written, with its routers'
platforms and phase durations; retries; lease expiries."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from operations import execute, journal, submit
from operations.chores import expire_leases
from operations.models import Grant, Operation
from simulators.faults import Fault

ADD = {"site": "remote-site", "device_description": "XRAID1"}
IFCP_PAIR = "mcdata_eclipse+nishan_ips3000"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.django_db
def test_an_add_is_counted_once_with_its_platforms_and_the_time_of_each_phase(ops_lab):
    before = sample("flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="succeeded")
    routers_before = sample("flexzone_operation_duration_seconds_sum", kind="add", phase="router")
    op = execute(submit("add", ADD).pk)
    assert op.state == "succeeded"
    assert sample("flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="succeeded") == before + 1
    router_seconds = sample("flexzone_operation_duration_seconds_sum", kind="add", phase="router") - routers_before
    assert router_seconds == pytest.approx(op.router_ms / 1000)
    execute(op.pk)  # already ended: nothing runs, nothing is counted again
    assert sample("flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="succeeded") == before + 1


@pytest.mark.django_db
def test_a_worker_whose_operation_was_taken_over_writes_and_counts_nothing(ops_lab):
    op = submit("add", ADD)
    stalled, _recovering = journal.claim(op.pk)  # worker A takes the add, then stalls past the stale limit
    Operation.objects.filter(pk=op.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    before = sample("flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="succeeded")
    failed = sample("flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="failed")
    assert execute(op.pk).state == "succeeded"  # worker B takes it over, finishes it and counts it
    run = journal.Run(op=stalled, recovering=False, started=time.perf_counter())
    stalled.state = Operation.State.FAILED
    assert journal.finish(run, time.perf_counter()) is False  # A's end is fenced off, so A counts nothing
    assert sample("flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="succeeded") == before + 1
    assert sample("flexzone_operations_total", kind="add", platform=IFCP_PAIR, outcome="failed") == failed


@pytest.mark.django_db
def test_a_reconcile_is_labelled_with_every_router_it_read_and_a_dropped_reply_is_a_retry(ops_lab):
    before = sample("flexzone_operations_total", kind="reconcile", platform="all", outcome="succeeded")
    retries = sample("flexzone_router_retries_total", platform="mcdata_eclipse")
    ops_lab.primary_sim.faults = [Fault("drop_before_apply", match="^show ifcp", count=1)]
    op = execute(submit("reconcile", {}).pk)
    assert op.state == "succeeded", op.error
    assert sample("flexzone_operations_total", kind="reconcile", platform="all", outcome="succeeded") == before + 1
    assert sample("flexzone_router_retries_total", platform="mcdata_eclipse") == retries + 1


@pytest.mark.django_db
def test_a_lease_that_runs_out_is_counted_when_its_removal_is_submitted(ops_lab):
    execute(submit("add", {**ADD, "duration": 600}).pk)
    Grant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    before = sample("flexzone_lease_expiries_total")
    assert len(expire_leases()) == 1
    assert expire_leases() == []  # one lease, one removal
    assert sample("flexzone_lease_expiries_total") == before + 1

"""The end of an operation is written only by the worker that holds its claim."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from operations import execute, journal, submit
from operations.models import Link, Operation
from tests.support.agreement import assert_agreement

ADD = {"site": "remote-site", "device_description": "XRAID1"}


@pytest.mark.django_db
def test_a_worker_that_resumes_after_its_operation_was_taken_over_writes_nothing(ops_lab):
    op = submit("add", ADD)
    stalled, _recovering = journal.claim(op.pk)  # worker A takes the add, then stalls past the stale limit
    Operation.objects.filter(pk=op.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=60))
    assert execute(op.pk).state == "succeeded"  # worker B takes it over and finishes it
    assert execute(submit("remove", ADD).pk).state == "succeeded"  # then a remove takes the links down
    run = journal.Run(op=stalled, recovering=False, started=time.perf_counter())
    run.links_up = list(Link.objects.values_list("pk", flat=True))
    stalled.state = Operation.State.SUCCEEDED
    journal.finish(run, time.perf_counter())  # A wakes up and writes the end it had reached
    assert set(Link.objects.values_list("state", flat=True)) == {"down"}
    assert Operation.objects.get(pk=op.pk).claimed_by != stalled.claimed_by
    assert_agreement(ops_lab)

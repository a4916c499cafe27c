"""Requests that meet an operation in flight on the same link wait for it instead of failing."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from operations import execute, submit
from operations.models import Grant, Link, Operation
from tests.support.agreement import assert_agreement, router_keys

ADD = {"site": "remote-site", "device_description": "XRAID1"}


def run_together(operation_ids: list[int]) -> list[Operation]:
    def work(pk: int) -> None:
        try:
            execute(pk)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=work, args=(pk,)) for pk in operation_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return list(Operation.objects.filter(pk__in=operation_ids).order_by("pk"))


@pytest.mark.django_db(transaction=True)
def test_identical_adds_started_together_all_succeed_with_the_same_links(ops_lab):
    ops = run_together([submit("add", ADD).pk for _ in range(4)])
    assert [op.state for op in ops] == ["succeeded"] * 4, [op.error for op in ops]
    assert len({tuple(op.result["links"]) for op in ops}) == 1
    joined = [op.result["joined"] for op in ops if op.result.get("joined")]
    assert joined and all(set(ids) < {op.pk for op in ops} for ids in joined)  # those that waited say for which
    assert not any(op.result.get("after") for op in ops)  # identical requests join, none is ordered behind
    assert Grant.objects.count() == 1
    assert_agreement(ops_lab)


@pytest.mark.django_db(transaction=True)
def test_a_remove_that_meets_the_add_in_flight_runs_after_it(ops_lab):
    add = submit("add", ADD)
    remove = submit("remove", ADD)
    ops = run_together([add.pk, remove.pk])
    assert [op.state for op in ops] == ["succeeded", "succeeded"], [op.error for op in ops]
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert not Grant.objects.exists()
    assert_agreement(ops_lab)


@pytest.mark.django_db(transaction=True)
def test_a_remove_submitted_after_a_queued_add_runs_after_it_and_says_so(ops_lab):
    add = submit("add", ADD)
    remove = submit("remove", ADD)
    waiting = threading.Thread(target=run_together, args=([remove.pk],))
    waiting.start()  # the remove is picked up first, while the add is still queued
    for _ in range(500):
        if Operation.objects.filter(pk=remove.pk, state="running").exists():
            break
        threading.Event().wait(0.02)
    else:
        raise AssertionError("the remove was never picked up")
    assert execute(add.pk).state == "succeeded"
    waiting.join(60)
    done = Operation.objects.get(pk=remove.pk)
    assert done.state == "succeeded", done.error
    assert done.result.get("after") == [add.pk] and "joined" not in done.result
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_removing_what_was_never_connected_succeeds_and_leaves_no_record(ops_lab):
    done = execute(submit("remove", ADD).pk)
    assert done.state == "succeeded", done.error
    assert done.result["links"] == [] and not Link.objects.exists()
    assert_agreement(ops_lab)

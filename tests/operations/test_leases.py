"""Renewing a lease: a second add by the same site moves the expiry of its lock and of the links it
holds, in both directions, and the operation's result says what is now true."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from operations import execute, submit
from operations.chores import expire_leases
from operations.models import Grant, Link, Operation
from registry.models import Device
from tests.support.agreement import assert_agreement

ADD_XRAID1 = {"site": "remote-site", "device_description": "XRAID1"}


def add(duration: int | None = None):
    op = execute(submit("add", {**ADD_XRAID1, **({"duration": duration} if duration else {})}).pk)
    assert op.state == "succeeded", op.error
    return op


def near(when: datetime | None, seconds: int) -> bool:
    return when is not None and abs((when - timezone.now()) - timedelta(seconds=seconds)) < timedelta(seconds=30)


def lease_everywhere(op) -> tuple[datetime | None, set[datetime | None], datetime | None]:
    result = op.result["lease_expires_at"]
    return (Grant.objects.get().expires_at,
            set(Link.objects.filter(state="up").values_list("lease_expires_at", flat=True)),
            result and datetime.fromisoformat(result))


@pytest.mark.django_db
@pytest.mark.parametrize("first, second", [(90, 7200), (7200, 90)])
def test_renewing_a_lease_moves_the_lock_and_the_links_expiry(ops_lab, first, second):
    add(first)
    lock, links, said = lease_everywhere(add(second))
    assert near(lock, second) and near(said, second)
    assert links == {lock}
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_lease_given_to_a_connection_that_had_none_makes_it_expire(ops_lab):
    add()
    lock, links, said = lease_everywhere(add(7200))
    assert near(lock, 7200) and near(said, 7200) and links == {lock}


@pytest.mark.django_db
def test_an_add_without_a_lease_makes_the_connection_permanent_and_says_so(ops_lab):
    add(90)
    lock, links, said = lease_everywhere(add())
    assert lock is None and said is None and links == {None}


@pytest.mark.django_db
def test_a_lease_whose_removal_cannot_be_planned_is_kept_and_the_failure_journaled_once(ops_lab):
    add(1)
    expires_at = Grant.objects.get().expires_at
    time.sleep(max(0.0, (expires_at - timezone.now()).total_seconds()) + 0.05)
    Device.objects.filter(description="XRAID1").update(owner_site=Grant.objects.get().site)  # unplannable now
    assert expire_leases() == [] and expire_leases() == []
    [failed] = Operation.objects.filter(kind="expire")
    assert failed.state == "failed" and "XRAID1" in failed.error
    assert Grant.objects.get().expires_at == expires_at  # still due: not dropped, retried by later sweeps
    assert Link.objects.filter(state="up").count() == 2


@pytest.mark.django_db
def test_an_expiry_that_fails_before_any_router_step_leaves_the_lease_due_again(ops_lab, settings):
    """Issue 45, defect 4: the lease chore clears a grant's expiry as it submits the expiry. An expiry
    that ends failed while still waiting (here on an earlier request of the same site and device that
    never runs, until its own time limit) made the lease permanent: no expiry left, both links up."""
    add(90)
    queued = submit("add", ADD_XRAID1)  # a renewal asked before the lease ran out, not yet run
    Grant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    settings.FLEXZONE_OPS_TOTAL_TIMEOUT = 1.0
    [expiry_id] = expire_leases()
    expiry = execute(expiry_id)
    assert expiry.state == "failed" and f"operation {queued.pk}" in expiry.error, expiry.error
    assert Grant.objects.get().expires_at is not None  # due again: the next sweep asks again
    assert Link.objects.filter(state="up").count() == 2  # nothing was taken down
    assert Operation.objects.get(pk=queued.pk).state == "queued"
    assert len(expire_leases()) == 1

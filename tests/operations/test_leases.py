"""Renewing a lease: a second add by the same site moves the expiry of its lock and of the links it
holds, in both directions, and the operation's result says what is now true."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from operations import execute, submit
from operations.chores import expire_leases, settle_stranded_links
from operations.desired import desired_for
from operations.models import Grant, Link, Operation
from registry.models import Device
from tests.support.agreement import assert_agreement
from tests.support.registry import behind_the_rules

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
    with behind_the_rules():
        Device.objects.filter(description="XRAID1").update(owner_site=Grant.objects.get().site)  # unplannable now
    assert expire_leases() == [] and expire_leases() == []
    [failed] = Operation.objects.filter(kind="expire")
    assert failed.state == "failed" and "XRAID1" in failed.error
    assert Grant.objects.get().expires_at == expires_at  # still due: not dropped, retried by later sweeps
    assert Link.objects.filter(state="up").count() == 2


@pytest.mark.django_db
def test_an_expiry_that_fails_before_any_router_step_leaves_the_lease_due_again(ops_lab, settings):
    """Issue 45, defect 4: the lease chore cleared a grant's expiry as it submitted the expiry. An expiry
    that ended failed while still waiting (here on an earlier request of the same site and device that
    never runs, until its own time limit) made the lease permanent: no expiry left, both links up. Now
    the sweep never edits the grant, and asks nothing while a request of the grant is in flight."""
    add(90)
    lapsed = timezone.now() - timedelta(seconds=1)
    Grant.objects.update(expires_at=lapsed)
    renewal = submit("add", ADD_XRAID1)  # asked before the sweep, not yet run
    assert expire_leases() == []  # while a request of the grant is queued, it is the grant's next word
    Operation.objects.filter(pk=renewal.pk).update(state="failed")
    # A repair queued on the link's router holds the link (as if running) beyond the expiry's time limit.
    repair = submit("reconcile", {"repair": True, "router": ops_lab.primary_rtr.name})
    Link.objects.update(operation=repair)
    settings.FLEXZONE_OPS_TOTAL_TIMEOUT = 1.0
    [expiry_id] = expire_leases()
    assert Grant.objects.get().expires_at == lapsed  # the sweep did not touch the grant
    expiry = execute(expiry_id)
    assert expiry.state == "failed" and f"operation {repair.pk}" in expiry.error, expiry.error
    assert Grant.objects.get().expires_at == lapsed  # still due: a later sweep asks again
    assert Link.objects.filter(state="up").count() == 2  # nothing was taken down
    assert expire_leases() == []  # a round after a failed expiry (lease_every) at the soonest
    Operation.objects.filter(pk=expiry_id).update(
        finished_at=timezone.now() - timedelta(seconds=settings.FLEXZONE_OPS_LEASE_EVERY + 1))
    Operation.objects.filter(pk=repair.pk).update(state="succeeded")
    [again] = expire_leases()
    assert execute(again).state == "succeeded"
    assert not Grant.objects.exists() and not Link.objects.filter(state="up").exists()


@pytest.mark.django_db
def test_failed_expiries_of_a_lease_are_asked_again_less_and_less_often(ops_lab, settings):
    add(90)
    Grant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    every = settings.FLEXZONE_OPS_LEASE_EVERY
    for failures in range(1, 5):
        [expiry_id] = expire_leases()
        ended = timezone.now() - timedelta(seconds=every * 2 ** (failures - 1) - 1)
        Operation.objects.filter(pk=expiry_id).update(state="failed", finished_at=ended)
        assert expire_leases() == [], f"asked again too soon after {failures} failure(s)"
        Operation.objects.filter(pk=expiry_id).update(finished_at=ended - timedelta(seconds=2))


@pytest.mark.django_db
def test_a_grant_past_its_lease_is_out_of_the_desired_state_before_any_expiry_runs(ops_lab):
    """Time is an input: no converge puts back access whose lease ran out, even when its expiry
    cannot run (here: cannot be planned). The settle takes the links off and releases the grant no
    link serves any more."""
    add(90)
    Grant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert desired_for() == {}
    owner = Device.objects.get(description="XRAID1").owner_site
    with behind_the_rules():
        Device.objects.filter(description="XRAID1").update(owner_site=Grant.objects.get().site)  # unplannable now
        assert expire_leases() == []
        Device.objects.filter(description="XRAID1").update(owner_site=owner)
    settles = settle_stranded_links()
    assert len(settles) == 2
    assert all(execute(pk).state == "succeeded" for pk in settles)
    assert not Link.objects.filter(state="up").exists() and not Grant.objects.exists()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_settle_leaves_a_lapsed_grant_s_links_to_the_renewal_queued_for_it(ops_lab):
    """A lapsed grant is out of the desired state, but one a connect queued or running renews is that
    connect's: a settle that took its links off would let the renewal find them up, send nothing and
    succeed with nothing on the routers (the review of this change found it)."""
    add(90)
    Grant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    renewal = submit("add", {**ADD_XRAID1, "duration": 3600})
    for pk in settle_stranded_links():
        assert execute(pk).state == "succeeded"
    assert Link.objects.filter(state="up").count() == 2 and Grant.objects.exists()
    assert execute(renewal.pk).state == "succeeded"
    assert near(Grant.objects.get().expires_at, 3600)
    assert_agreement(ops_lab)

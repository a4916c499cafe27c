"""A router's session budget holds across processes: idle pooled sessions count against it and are
logged out when another process needs the slot; a dead process's slot is taken back. The simulators
refuse logins over the device's own session limit, so a test here fails if flexzone goes over."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from operations import execute, submit
from operations.budget import budget_of
from operations.locking import router_lock
from operations.models import RouterSession
from operations.pool import SessionPool
from operations.steps import router_target
from routers.drivers import DRIVERS


def _use(pool: SessionPool, router, budget: int) -> int:
    """One step's worth of work through `pool` (another process's pool, when run on a thread of its own
    with its own database connection); the number of links the router listed."""
    with router_lock(router.pk, 10), pool.session(router.pk, router_target(router), lambda _driver: None,
                                                  session_budget=budget) as lease:
        return len(lease.driver.list_links())


def _in_thread(work):
    result: list = []

    def run() -> None:
        try:
            result.append(work())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert result, "the other process's step did not finish"
    return result[0]


@pytest.mark.django_db(transaction=True)
def test_an_idle_pooled_session_is_logged_out_when_another_process_needs_the_slot(lab_factory):
    lab = lab_factory(max_sessions=1)  # the device itself accepts one CLI session: a second login is refused
    router = lab.primary_rtr
    first, second = SessionPool(), SessionPool()
    try:
        _use(first, router, budget=1)
        assert first.size() == 1 and lab.primary_sim.active_sessions() == 1  # idle in the first pool
        assert list(RouterSession.objects.values_list("holder", flat=True)) == [first.holder]
        _in_thread(lambda: _use(second, router, budget=1))
        assert first.size() == 0  # it gave its idle session up, logged out
        assert second.size() == 1
        assert list(RouterSession.objects.values_list("holder", flat=True)) == [second.holder]
        assert lab.primary_sim.active_sessions() == 1
    finally:
        first.close_all()
        second.close_all()
    assert not RouterSession.objects.exists()  # every logout gives its slot back


@pytest.mark.django_db(transaction=True)
def test_within_the_budget_each_process_keeps_its_own_pooled_session(lab_factory):
    lab = lab_factory()
    router = lab.primary_rtr
    assert budget_of(router) == DRIVERS["mcdata_eclipse"].session_budget == 2  # of the Eclipse's 4
    first, second = SessionPool(), SessionPool()
    try:
        _use(first, router, budget=2)
        _in_thread(lambda: _use(second, router, budget=2))
        assert first.size() == second.size() == 1 and lab.primary_sim.active_sessions() == 2
        assert RouterSession.objects.filter(release_wanted=True).count() == 0
    finally:
        first.close_all()
        second.close_all()


@pytest.mark.django_db(transaction=True)
def test_the_slot_of_a_process_that_died_is_taken_back(lab_factory, settings):
    lab = lab_factory()
    router = lab.primary_rtr
    router.session_budget = 1
    router.save()
    dead = RouterSession.objects.create(router=router, holder="ops-9:4242:deadbeef")
    RouterSession.objects.filter(pk=dead.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.FLEXZONE_OPS_STALE_AFTER + 1))
    op = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    assert execute(op.pk).state == "succeeded"
    assert not RouterSession.objects.filter(holder=dead.holder).exists()


@pytest.mark.django_db(transaction=True)
def test_a_pool_whose_slot_was_taken_as_stale_claims_again_before_it_reuses_its_session(lab_factory, settings):
    """Issue 45, defect 5: a pool whose beat stalled past FLEXZONE_OPS_STALE_AFTER loses its slot to another
    process, which logs in; the first then reused its pooled session without claiming again: two sessions
    on a router whose budget is 1. The device here accepts two, so only flexzone's count keeps it to one."""
    settings.FLEXZONE_OPS_HEARTBEAT, settings.FLEXZONE_OPS_STALE_AFTER = 0.1, 0.6
    lab = lab_factory(max_sessions=2)
    router = lab.primary_rtr
    first, second = SessionPool(), SessionPool()
    try:
        _use(first, router, budget=1)
        first._stop.set()  # its beat stalls (a paused process, a database it cannot reach)...
        first._beater.join(5)
        time.sleep(settings.FLEXZONE_OPS_STALE_AFTER + 0.2)  # ...for longer than a slot is kept
        _in_thread(lambda: _use(second, router, budget=1))  # takes the stale slot, logs in
        assert list(RouterSession.objects.values_list("holder", flat=True)) == [second.holder]
        _use(first, router, budget=1)
        assert lab.primary_sim.active_sessions() == 1, "two sessions on a router whose budget is 1"
        assert list(RouterSession.objects.values_list("holder", flat=True)) == [first.holder]
        assert second.size() == 0  # it gave its idle session up when the first claimed again
    finally:
        first.close_all()
        second.close_all()


@pytest.mark.django_db(transaction=True)
def test_an_idle_session_whose_slot_was_taken_as_stale_logs_out_at_the_next_beat(lab_factory, settings):
    """Issue 45, item 5: never more sessions on a router than its budget, at any moment. A slot taken away
    as stale (this process stalled, another claimed it) left the idle pooled session logged in until its
    next use, beside the other process's: it now logs out at the beat that finds the slot gone."""
    settings.FLEXZONE_OPS_HEARTBEAT = 0.1
    lab = lab_factory(max_sessions=2)
    first = SessionPool()
    try:
        _use(first, lab.primary_rtr, budget=1)
        assert first.size() == 1 and lab.primary_sim.active_sessions() == 1
        time.sleep(0.5)  # a beat or more sees the row of the slot this pool claimed
        RouterSession.objects.filter(holder=first.holder).delete()  # what a claim of the slot as stale does
        deadline = time.monotonic() + 5
        while (first.size() or lab.primary_sim.active_sessions()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.size() == 0 and lab.primary_sim.active_sessions() == 0
    finally:
        first.close_all()

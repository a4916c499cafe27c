"""Faults on the wire (simulator fault knobs): each operation ends with registry and routers agreeing."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from operations import adding, execute, reconcile, submit
from operations.chores import expire_leases, settle_stranded_links
from operations.models import Grant, Link, Operation
from operations.pool import pool
from registry.models import Device, Router
from tests.support.agreement import assert_agreement, router_keys

ADD_XRAID1 = {"site": "remote-site", "device_description": "XRAID1"}
PRIMARY_UP = (8, 1, "127.0.0.22")


@pytest.mark.django_db
def test_add_is_idempotent_after_lost_reply(ops_lab):
    ops_lab.remote_sim.add_fault("drop_after_apply", count=1)
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert op.attempts == 3  # primary once, remote twice (the second read the state and found it done)
    assert router_keys(ops_lab.remote_sim) == {(4, 1, "127.0.0.21")}
    assert_agreement(ops_lab)
    assert "retry" in op.transcript


@pytest.mark.django_db
def test_add_succeeds_after_the_connection_drops_before_the_change(ops_lab):
    ops_lab.primary_sim.add_fault("drop_before_apply", count=1)
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert router_keys(ops_lab.primary_sim) == {(8, 1, "127.0.0.22")}
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_remove_is_idempotent_after_lost_reply(ops_lab):
    execute(submit("add", ADD_XRAID1).pk)
    ops_lab.primary_sim.add_fault("drop_after_apply", count=1)
    op = execute(submit("remove", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert router_keys(ops_lab.primary_sim) == set()
    assert_agreement(ops_lab)
    assert not Grant.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db
def test_a_router_that_stops_answering_fails_the_add_in_bounded_time_and_reconcile_finishes_it(ops_lab, settings):
    settings.FLEXZONE_OPS_MAX_ATTEMPTS = 2
    ops_lab.remote_sim.add_fault("stall_command")
    started = time.monotonic()
    op = execute(submit("add", ADD_XRAID1).pk)
    elapsed = time.monotonic() - started
    assert op.state == "failed", (op.state, op.error)
    assert "remote-rtr" in op.error and "reconcile" in op.error
    assert elapsed < 25
    # The primary step was rolled back; the remote one is unknowable while the router is silent, so
    # its record stays `configuring` (never `up`) until someone can look.
    assert router_keys(ops_lab.primary_sim) == set()
    assert set(Link.objects.values_list("state", flat=True)) == {"failed", "configuring"}
    ops_lab.remote_sim.clear_faults()
    report = reconcile(repair=True)
    assert report.state == "succeeded", report.error
    assert report.result["routers"]["remote-rtr"]["mismatched"][0]["registry"] == "configuring"
    assert not Link.objects.filter(state__in=Link.ACTIVE_STATES).exists()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_the_total_time_limit_cuts_a_silent_routers_wait_short(ops_lab, settings):
    # Each command may take 20 s, but the operation only 2 s (and each undo of a step as much again).
    settings.FLEXZONE_OPS_TOTAL_TIMEOUT = 2.0
    Router.objects.filter(pk=ops_lab.remote_rtr.pk).update(command_timeout=20.0)
    ops_lab.remote_sim.add_fault("stall_command")
    started = time.monotonic()
    op = execute(submit("add", ADD_XRAID1).pk)
    elapsed = time.monotonic() - started
    assert op.state == "failed" and "time limit" in op.error, (op.state, op.error)
    assert elapsed < 8, elapsed  # add 2 s + undo on the silent router 2 s + undo on the other
    assert router_keys(ops_lab.primary_sim) == set(), op.error  # the step that had succeeded is undone
    # The primary's session went back to the pool (the remote's was dropped) and answers to no deadline.
    assert pool.size() == 1 and all(entry.driver.deadline is None for entry in pool._entries.values())


@pytest.mark.django_db
def test_a_router_that_stops_answering_once_is_retried_to_success(ops_lab):
    ops_lab.remote_sim.add_fault("stall_command", count=1)
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_failed_connect_keeps_its_device_held_until_what_it_made_is_off(ops_lab, monkeypatch):
    """The converge that ends a failed connect takes its links off first, and only then its grant: in
    between, another site's connect of a device that is not shareable would be made while this one's
    links are still on the routers. (The first form of that converge ended the grant first.)"""
    held_while_converging = []
    converge = adding.settle_routers

    def watched(run, *args, **kwargs):
        held_while_converging.append(Grant.objects.filter(operation=run.op).exists())
        return converge(run, *args, **kwargs)

    monkeypatch.setattr(adding, "settle_routers", watched)
    ops_lab.remote_sim.add_fault("refuse_login")
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "rolled_back", (op.state, op.error)
    assert held_while_converging == [True]
    assert not Grant.objects.exists() and router_keys(ops_lab.primary_sim) == set()


@pytest.mark.django_db
def test_a_refused_login_fails_at_once_with_the_routers_message(ops_lab):
    ops_lab.remote_sim.add_fault("refuse_login")
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "rolled_back"
    # primary add, remote add (refused: authentication errors are not retried), primary rollback
    assert op.attempts == 3
    assert "remote-rtr" in op.error and "Login incorrect" in op.error
    ops_lab.remote_sim.clear_faults()
    assert_agreement(ops_lab)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["remove", "expire"])
def test_a_removal_whose_router_password_cannot_be_read_changes_nothing_and_keeps_the_link_up(ops_lab, secrets_dir,
                                                                                            kind):
    assert execute(submit("add", {**ADD_XRAID1, "duration": 600}).pk).state == "succeeded"
    (secrets_dir / ops_lab.remote_rtr.secret_ref.removeprefix("file:")).unlink()  # its first step's router
    op = execute(submit(kind, ADD_XRAID1).pk)
    # Checked before any router is worked (they are worked at once): nothing was sent to any router,
    # the links are up on both, and the registry says so.
    assert op.state == "failed" and "remote-rtr" in op.error and "cannot read" in op.error, op.error
    assert "nothing was sent to any router" in op.error
    assert set(Link.objects.values_list("state", flat=True)) == {"up"}
    assert_agreement(ops_lab)
    assert Grant.objects.filter(device__description="XRAID1").exists()


@pytest.mark.django_db
def test_garbled_output_is_retried_until_the_state_reads_clean(ops_lab):
    ops_lab.primary_sim.add_fault("garble", count=1)
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_the_login_is_paid_once_per_router_and_a_dead_session_is_replaced(ops_lab):
    before = pool.logins
    execute(submit("add", ADD_XRAID1).pk)
    execute(submit("remove", ADD_XRAID1).pk)
    assert pool.logins - before == 2
    ops_lab.primary_sim.add_fault("drop_before_apply", count=1)  # kills the pooled session mid-command
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert pool.logins - before == 3
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_with_the_pool_off_every_operation_logs_in(ops_lab, settings):
    settings.FLEXZONE_OPS_POOL = False
    before = pool.logins
    execute(submit("add", ADD_XRAID1).pk)
    execute(submit("remove", ADD_XRAID1).pk)
    assert pool.logins - before == 4
    assert pool.size() == 0


@pytest.mark.django_db
def test_an_operation_whose_worker_died_is_recovered_from_the_router_state(ops_lab):
    """The mechanism behind the SIGKILL test: a stale `running` row with a half-done add."""
    op = submit("add", ADD_XRAID1)
    execute(op.pk)
    # Rewind the journal to "worker died after the primary step": remote link still configuring,
    # router already holding it (the change was made, the reply never recorded).
    Link.objects.filter(router=ops_lab.remote_rtr).update(state="configuring")
    Operation.objects.filter(pk=op.pk).update(state="running", phase="on_router", heartbeat_at="2000-01-01T00:00Z")
    again = execute(op.pk)
    assert again.state == "succeeded", again.error
    assert "recovered" in again.transcript
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_live_operation_is_not_claimed_twice(ops_lab):
    op = submit("add", ADD_XRAID1)
    Operation.objects.filter(pk=op.pk).update(state="running", heartbeat_at="2999-01-01T00:00Z")
    assert execute(op.pk).state == "running"
    assert router_keys(ops_lab.primary_sim) == set()


@pytest.mark.django_db
def test_a_session_the_router_logged_out_while_idle_is_replaced_before_use(lab_factory, settings):
    settings.FLEXZONE_OPS_KEEPALIVE = 0.2
    lab = lab_factory(idle_timeout=0.5)
    before = pool.logins
    execute(submit("add", ADD_XRAID1).pk)
    time.sleep(1.0)  # both routers log the pooled sessions out
    op = execute(submit("remove", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert op.attempts == 2  # no failed attempt: the dead sessions were found before use
    assert pool.logins - before == 4
    assert_agreement(lab)


@pytest.mark.django_db
def test_a_full_session_table_is_waited_out_not_treated_as_bad_credentials(ops_lab):
    ops_lab.remote_sim.add_fault("session_limit", count=1)
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    assert op.attempts == 3
    assert_agreement(ops_lab)


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:  # a port nobody listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.django_db
def test_an_add_to_a_router_that_refuses_connections_fails_and_leaves_no_lock(ops_lab):
    # Issue 21 (4): nothing reached the router, so nothing is left to repair and the device is free.
    Router.objects.filter(pk=ops_lab.remote_rtr.pk).update(port=_closed_port())
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state in ("failed", "rolled_back"), (op.state, op.error)
    assert "remote-rtr" in op.error
    assert router_keys(ops_lab.primary_sim) == set()  # the step that had succeeded is undone
    assert not Link.objects.filter(state__in=Link.ACTIVE_STATES).exists()
    assert not Grant.objects.exists()


@pytest.mark.django_db
def test_a_recovered_add_whose_router_now_refuses_connections_keeps_its_record_but_not_its_lock(ops_lab):
    # The worker died after both routers took the link; on recovery remote-rtr refuses connections.
    # The crashed run may have changed it, so nothing is "untouched": the record stays for the settle
    # chore, but the connect failed and its lock goes (issue 21: a failed connect leaves no lock).
    op = submit("add", ADD_XRAID1)
    execute(op.pk)
    Link.objects.update(state="configuring")
    Operation.objects.filter(pk=op.pk).update(state="running", phase="on_router", heartbeat_at="2000-01-01T00:00Z")
    Router.objects.filter(pk=ops_lab.remote_rtr.pk).update(port=_closed_port())
    again = execute(op.pk)
    assert again.state != "succeeded"
    assert router_keys(ops_lab.remote_sim)  # the link the crashed run made is still there
    assert not Grant.objects.exists()
    assert Link.objects.filter(router=ops_lab.remote_rtr, state__in=Link.ACTIVE_STATES).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["remove", "expire"])
def test_a_removal_whose_second_router_refuses_logins_puts_the_first_back_and_keeps_the_lock(ops_lab, kind):
    # Found by tests/operations/test_model.py: the first router's link was removed, the second's stayed,
    # and the site kept its lock with half a path. All or nothing, as an add: the first is put back.
    assert execute(submit("add", {**ADD_XRAID1, "duration": 600}).pk).state == "succeeded"
    before = {router.name: router_keys(ops_lab.sim_of(router)) for router in (ops_lab.primary_rtr, ops_lab.remote_rtr)}
    ops_lab.primary_sim.add_fault("refuse_login")  # the removal's second step (the owner's router)
    pool.close_all()
    op = execute(submit(kind, ADD_XRAID1).pk)
    assert op.state == "rolled_back", (op.state, op.error)
    assert "primary-rtr" in op.error and "put back" in op.error
    assert {router.name: router_keys(ops_lab.sim_of(router)) for router in (ops_lab.primary_rtr, ops_lab.remote_rtr)} \
        == before
    assert Grant.objects.filter(site__name="remote-site").exists()
    ops_lab.primary_sim.clear_faults()
    assert_agreement(ops_lab)
    assert execute(submit("remove", ADD_XRAID1).pk).state == "succeeded"  # once it answers, it goes
    assert not Grant.objects.exists()


@pytest.mark.django_db
def test_an_expiry_that_fails_leaves_the_lease_due_and_the_lease_chore_asks_again(ops_lab):
    assert execute(submit("add", {**ADD_XRAID1, "duration": 600}).pk).state == "succeeded"
    Grant.objects.update(expires_at=timezone.now() - timedelta(seconds=5))
    ops_lab.primary_sim.add_fault("refuse_login")  # the expiry's second step
    pool.close_all()
    [expiry] = expire_leases()
    assert execute(expiry).state == "failed"
    assert Grant.objects.get().expires_at is not None  # due again, not held for ever
    # The lease is over: what the expiry took down is not put back (before, it was: rolled_back).
    assert not router_keys(ops_lab.remote_sim) and router_keys(ops_lab.primary_sim)
    ops_lab.primary_sim.clear_faults()
    assert expire_leases() == []  # asked again a round (lease_every) after the failure
    Operation.objects.filter(pk=expiry).update(finished_at=timezone.now() - timedelta(minutes=5))
    [again] = expire_leases()
    assert execute(again).state == "succeeded"
    assert not Grant.objects.exists() and not router_keys(ops_lab.remote_sim)


@pytest.mark.django_db
def test_a_recovered_removal_puts_back_what_it_took_down_as_up(ops_lab):
    # The worker died after marking the links `removing`; on recovery primary-rtr refuses logins.
    assert execute(submit("add", ADD_XRAID1).pk).state == "succeeded"
    op = submit("remove", ADD_XRAID1)
    Link.objects.update(state="removing", operation=op)
    Operation.objects.filter(pk=op.pk).update(state="running", phase="on_router", heartbeat_at="2000-01-01T00:00Z")
    ops_lab.primary_sim.add_fault("refuse_login")
    pool.close_all()
    assert execute(op.pk).state != "succeeded"
    put_back = Link.objects.get(router=ops_lab.remote_rtr)
    assert put_back.state == "up"
    assert router_keys(ops_lab.remote_sim) == {(put_back.port, put_back.zone.zone_id, put_back.remote_ip)}
    assert Grant.objects.exists()


@pytest.mark.django_db
def test_a_recovered_add_whose_router_is_down_frees_the_device_and_is_settled_when_the_router_is_back(ops_lab):
    # A worker claimed the add and died; the remote router then refuses every login. The recovered run
    # cannot tell whether the dead one reached the remote router, so that record stays `configuring`
    # (it may be there), but the failed connect must not keep the device locked.
    op = submit("add", ADD_XRAID1)
    dead = timezone.now() - timedelta(hours=1)
    Operation.objects.filter(pk=op.pk).update(state="running", started_at=dead, heartbeat_at=dead,
                                              claimed_by="dead-worker#0")
    ops_lab.remote_sim.add_fault("refuse_login", count=1000)
    pool.close_all()
    op = execute(op.pk)
    assert op.state == "failed" and "Login incorrect" in op.error, op.error
    assert not Grant.objects.exists()
    assert list(Link.objects.filter(state="configuring").values_list("router__name", flat=True)) == ["remote-rtr"]
    # The settle chore asks for the leftover's router to be settled; while it refuses, once per round.
    first = settle_stranded_links()
    assert len(first) == 1 and execute(first[0]).state == "failed"
    assert settle_stranded_links() == []
    Operation.objects.filter(pk=first[0]).update(finished_at=dead)  # a round later
    ops_lab.remote_sim.clear_faults()
    second = settle_stranded_links()
    settled = execute(second[0])
    assert settled.state == "succeeded", settled.error
    assert settled.request == {"repair": True, "policy": "registry", "router": "remote-rtr", "settle": True}
    assert not Link.objects.filter(state__in=Link.ACTIVE_STATES).exists()
    assert_agreement(ops_lab)
    assert settle_stranded_links() == []


@pytest.mark.django_db
def test_a_connect_that_times_out_waiting_for_an_earlier_request_leaves_the_device_free(ops_lab, settings):
    # Found by the 30-minute soak (seed 29326016, step 467): the connect took its lock at submission,
    # then failed waiting for an earlier remove of the same zone to finish, and the lock stayed with no
    # link and no live operation.
    settings.FLEXZONE_OPS_TOTAL_TIMEOUT = 1.0
    earlier = submit("remove", ADD_XRAID1)
    Operation.objects.filter(pk=earlier.pk).update(state="running", started_at=timezone.now(),
                                                   heartbeat_at=timezone.now(), claimed_by="busy-worker#0")
    op = submit("add", ADD_XRAID1)
    assert Grant.objects.filter(operation=op).exists()
    op = execute(op.pk)
    assert op.state == "failed" and "did not finish within this operation's time limit" in op.error, op.error
    assert not Grant.objects.exists()
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()


@pytest.mark.django_db
def test_the_settle_of_a_router_that_stays_down_is_asked_less_and_less_often(ops_lab, settings):
    # Failed before: a failed settle was asked again every other round for as long as the router was
    # down, 1,440 failed operations a day in the journal for one router.
    every = settings.FLEXZONE_OPS_SETTLE_EVERY = 30
    Link.objects.create(site=ops_lab.demo["remote"], device=Device.objects.get(description="XRAID1"),
                        router=ops_lab.remote_rtr, port=4, zone=Device.objects.get(description="XRAID1").zone,
                        remote_ip="127.0.0.21", state="configuring")
    ops_lab.remote_sim.add_fault("refuse_login", count=1000)
    pool.close_all()
    asked = []
    for failures in range(1, 7):
        [pk] = settle_stranded_links()
        assert execute(pk).state == "failed"
        asked.append(pk)
        wait = every * min(2 ** (failures - 1), 16)  # doubles after each failure, at most 16 rounds
        Operation.objects.filter(pk=pk).update(finished_at=timezone.now() - timedelta(seconds=wait - 5))
        assert settle_stranded_links() == [], f"asked again {wait - 5} s after failure {failures}"
        Operation.objects.filter(pk=pk).update(finished_at=timezone.now() - timedelta(seconds=wait + 1))
    ops_lab.remote_sim.clear_faults()
    [pk] = settle_stranded_links()
    assert execute(pk).state == "succeeded"
    # Back to one round once a settle succeeded.
    Link.objects.create(site=ops_lab.demo["remote"], device=Device.objects.get(description="XRAID1"),
                        router=ops_lab.remote_rtr, port=4, zone=Device.objects.get(description="XRAID1").zone,
                        remote_ip="127.0.0.21", state="configuring")
    assert len(settle_stranded_links()) == 1


@pytest.mark.django_db
def test_a_failed_removal_puts_back_only_what_a_grant_still_needs(ops_lab):
    # Found by the 30-minute soak (seed 299570309): a recovered removal read the crashed run's own
    # `removing` marker as the link's earlier state and put the link back on its router when the
    # other router refused, though no lock needed it any more.
    assert execute(submit("add", ADD_XRAID1).pk).state == "succeeded"
    Grant.objects.all().delete()  # the hold has ended: nothing needs these links
    op = submit("remove", ADD_XRAID1)
    dead = timezone.now() - timedelta(hours=1)
    Link.objects.update(state="removing", operation_id=op.pk)  # the crashed run marked them
    Operation.objects.filter(pk=op.pk).update(state="running", started_at=dead, heartbeat_at=dead,
                                              claimed_by="dead-worker#0")
    ops_lab.primary_sim.add_fault("refuse_login", count=1000)  # the removal's second router
    pool.close_all()
    op = execute(op.pk)
    assert op.state != "succeeded"
    assert router_keys(ops_lab.remote_sim) == set()  # taken off, and not put back for nobody
    assert not Link.objects.filter(router=ops_lab.remote_rtr, state="up").exists()
    ops_lab.primary_sim.clear_faults()
    for pk in settle_stranded_links():
        assert execute(pk).state == "succeeded"
    assert router_keys(ops_lab.primary_sim) == set()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_the_settle_chore_takes_off_links_whose_grant_ended_behind_the_engines_back(ops_lab):
    assert execute(submit("add", ADD_XRAID1).pk).state == "succeeded"
    Grant.objects.all().delete()  # say an admin deleted the hold in the database: nobody may reach XRAID1
    settles = settle_stranded_links()
    assert len(settles) == 2
    for pk in settles:
        assert execute(pk).state == "succeeded"
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert set(Link.objects.values_list("state", flat=True)) == {"down"}
    assert settle_stranded_links() == []
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_connect_whose_rollback_leaves_a_link_up_frees_the_device_and_the_settle_takes_the_link_off(
        ops_lab, settings):
    # Issue 21: a failed connect never leaves a device locked. The primary's link cannot be undone
    # (each removal is cut off) and stays on the router, its record active (`configuring`: the
    # converge that ends the connect could not finish it); the lock goes, and with it the grant.
    settings.FLEXZONE_OPS_MAX_ATTEMPTS = 2
    ops_lab.primary_sim.add_fault("drop_before_apply", count=100, match="remove|delete")
    ops_lab.remote_sim.add_fault("refuse_login", count=100)
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "failed" and "settle chore" in op.error, op.error
    assert not Grant.objects.exists()
    assert router_keys(ops_lab.primary_sim) == {PRIMARY_UP}
    assert list(Link.active().values_list("router__name", flat=True)) == ["primary-rtr"]
    ops_lab.primary_sim.clear_faults()
    ops_lab.remote_sim.clear_faults()
    for pk in settle_stranded_links():
        assert execute(pk).state == "succeeded"
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_one_attempt_is_said_in_the_singular_in_the_error(ops_lab, settings):
    settings.FLEXZONE_OPS_MAX_ATTEMPTS = 1
    ops_lab.primary_sim.add_fault("drop_before_apply", count=1)
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state in ("failed", "rolled_back"), op.error
    assert "gave up after 1 attempt: " in op.error, op.error

"""Reconcile, leases and the V1 invoke interface."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from operations import execute, invoke, reconcile, submit
from operations.chores import expire_leases, submit_expiry
from operations.models import Grant, Link, Operation
from routers.drivers.base import LinkSpec
from tests.support.agreement import STRAY, assert_agreement, behind_the_registrys_back, registry_keys, router_keys

ADD_XRAID1 = {"site": "remote-site", "device_description": "XRAID1"}
PRIMARY_LINK = (8, 1, "127.0.0.22")
@pytest.mark.django_db
def test_reconcile_reports_missing_and_extra_links_without_touching_anything(ops_lab):
    execute(submit("add", ADD_XRAID1).pk)
    behind_the_registrys_back(ops_lab.primary_rtr, "remove", LinkSpec(port=8, zone=1, remote_ip="127.0.0.22"))
    behind_the_registrys_back(ops_lab.primary_rtr, "add", STRAY)
    report = reconcile().result["routers"]["primary-rtr"]
    assert [(d["port"], d["zone"], d["remote_ip"]) for d in report["missing"]] == [PRIMARY_LINK]
    assert [(d["port"], d["zone"], d["remote_ip"]) for d in report["extra"]] == [STRAY.key]
    assert report["repaired"] == []
    assert router_keys(ops_lab.primary_sim) == {STRAY.key}


@pytest.mark.django_db
def test_reconcile_with_repair_makes_the_routers_match_the_registry(ops_lab):
    execute(submit("add", ADD_XRAID1).pk)
    behind_the_registrys_back(ops_lab.primary_rtr, "remove", LinkSpec(port=8, zone=1, remote_ip="127.0.0.22"))
    behind_the_registrys_back(ops_lab.primary_rtr, "add", STRAY)
    op = reconcile(repair=True)
    assert op.state == "succeeded", op.error
    assert op.result["routers"]["primary-rtr"]["converged"] is True
    assert router_keys(ops_lab.primary_sim) == {PRIMARY_LINK}
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_reconcile_with_the_router_policy_makes_the_registry_match_the_routers(ops_lab):
    execute(submit("add", ADD_XRAID1).pk)
    behind_the_registrys_back(ops_lab.primary_rtr, "remove", LinkSpec(port=8, zone=1, remote_ip="127.0.0.22"))
    behind_the_registrys_back(ops_lab.primary_rtr, "add", STRAY)
    op = reconcile(repair=True, policy="router")
    assert op.state == "succeeded", op.error
    assert registry_keys(ops_lab.primary_rtr) == {STRAY.key}
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_an_expired_lease_removes_the_link_and_releases_the_device(ops_lab):
    op = execute(submit("add", {**ADD_XRAID1, "duration": 2}).pk)
    assert op.state == "succeeded", op.error
    assert expire_leases() == []
    expires_at = Grant.objects.get().expires_at
    assert Link.objects.filter(state="up", lease_expires_at=expires_at).count() == 2
    time.sleep(max(0.0, (expires_at - timezone.now()).total_seconds()) + 0.05)
    expired = expire_leases()
    assert len(expired) == 1 and expire_leases() == []
    removal = execute(expired[0])
    assert removal.kind == "expire" and removal.state == "succeeded", removal.error
    assert not Grant.objects.exists()
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_renewal_that_ends_after_its_leases_expiry_was_queued_is_never_removed_by_it(ops_lab):
    # Issue 21 (2): connect --for 2s; connect again --for 1h while the first is up; the sweep submits
    # the first lease's expiry before the renewal runs. The renewal ends later: the expiry is void.
    assert execute(submit("add", {**ADD_XRAID1, "duration": 2}).pk).state == "succeeded"
    Grant.objects.update(expires_at=timezone.now() - timezone.timedelta(seconds=1))  # the lease is due
    renewal = submit("add", {**ADD_XRAID1, "duration": 3600})
    assert expire_leases() == []  # the sweep leaves a grant to the request queued for it
    # A sweep that looked just before the renewal was submitted submits the expiry after it.
    expiry = submit_expiry(Grant.objects.select_related("site", "device").get()).pk
    assert execute(renewal.pk).state == "succeeded"
    renewed_until = Grant.objects.get().expires_at
    assert renewed_until > timezone.now() + timezone.timedelta(minutes=59)
    removal = execute(expiry)
    assert removal.state == "succeeded", removal.error
    assert removal.result["links"] == [] and f"renewed by operation {renewal.pk}" in removal.transcript
    assert Grant.objects.get().expires_at == renewed_until
    assert Link.objects.filter(state="up").count() == 2
    assert router_keys(ops_lab.primary_sim) and router_keys(ops_lab.remote_sim)
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_v1_invoke_adds_lists_and_removes_with_registry_records(ops_lab):
    added = invoke("primary-rtr", "addifcp", port=8, zone=1, remote_ip="127.0.0.22")
    assert added.state == "succeeded", added.error
    assert router_keys(ops_lab.primary_sim) == {PRIMARY_LINK}
    assert_agreement(ops_lab)
    listed = invoke("primary-rtr", "lsifcp", zone=1)
    assert [(d["port"], d["zone"], d["remote_ip"]) for d in listed.result["links"]] == [PRIMARY_LINK]
    removed = invoke("primary-rtr", "rmifcp", port=8, zone=1, remote_ip="127.0.0.22")
    assert removed.state == "succeeded", removed.error
    assert router_keys(ops_lab.primary_sim) == set()
    assert_agreement(ops_lab)
    assert Operation.objects.filter(kind="invoke").count() == 3
    assert Link.objects.get().state == "down"


@pytest.mark.django_db
def test_a_v1_list_of_a_router_that_cannot_be_reached_fails_naming_it_not_as_an_internal_error(ops_lab):
    import socket

    from registry.models import Router

    with socket.socket() as closed:  # bound, never listening: a connection to it is refused
        closed.bind(("127.0.0.1", 0))
        Router.objects.filter(name="remote-rtr").update(host="127.0.0.1", port=closed.getsockname()[1])
        listed = invoke("remote-rtr", "lsifcp")
    assert listed.state == "failed", (listed.state, listed.error)
    assert listed.error.startswith("router remote-rtr: ") and "internal error" not in listed.error


@pytest.mark.django_db
def test_the_reconcile_command_reports_drift_per_router(ops_lab):
    from io import StringIO

    from django.core.management import call_command

    behind_the_registrys_back(ops_lab.primary_rtr, "add", STRAY)
    out = StringIO()
    call_command("reconcile", stdout=out)
    text = out.getvalue()
    assert "primary-rtr: 1 difference(s)" in text and "remote-rtr: in agreement" in text
    assert '"port": 9' in text


@pytest.mark.django_db
def test_a_renewal_whose_end_was_being_written_as_the_sweep_ran_is_not_removed_by_that_expiry(ops_lab):
    # The renewal's finished_at is stamped before its final commit; a sweep in between queues an expiry
    # created after that stamp. The lock's new expiry, later than the lease expired, still voids it.
    assert execute(submit("add", {**ADD_XRAID1, "duration": 2}).pk).state == "succeeded"
    Grant.objects.update(expires_at=timezone.now() - timezone.timedelta(seconds=1))
    renewal = submit("add", {**ADD_XRAID1, "duration": 3600})
    assert expire_leases() == []  # the sweep leaves a grant to the request queued for it
    # A sweep that looked just before the renewal was submitted submits the expiry after it.
    expiry = submit_expiry(Grant.objects.select_related("site", "device").get()).pk
    assert execute(renewal.pk).state == "succeeded"
    Operation.objects.filter(pk=renewal.pk).update(finished_at=Operation.objects.get(pk=expiry).created_at
                                                   - timezone.timedelta(milliseconds=5))
    removal = execute(expiry)
    assert removal.state == "succeeded", removal.error
    assert removal.result["links"] == [] and "renewed until" in removal.transcript
    assert Link.objects.filter(state="up").count() == 2 and router_keys(ops_lab.primary_sim)


@pytest.mark.django_db
def test_repair_keeps_and_records_the_links_a_grant_needs_when_their_records_were_lost(ops_lab):
    # Issue 21: the grants are the truth. Before, repair took the "extra" links off both routers and
    # remote-site lost its path to XRAID1 while it still held it.
    execute(submit("add", ADD_XRAID1).pk)
    Link.objects.all().delete()
    behind_the_registrys_back(ops_lab.remote_rtr, "remove", LinkSpec(port=4, zone=1, remote_ip="127.0.0.21"))
    report = reconcile().result["routers"]
    assert [(d["port"], d["zone"], d["remote_ip"], d["granted"]) for d in report["primary-rtr"]["extra"]] == [
        (*PRIMARY_LINK, "remote-site holds XRAID1")]
    assert [(d["port"], d["zone"], d["remote_ip"], d["granted"]) for d in report["remote-rtr"]["missing"]] == [
        (4, 1, "127.0.0.21", "remote-site holds XRAID1")]
    op = reconcile(repair=True)
    assert op.state == "succeeded", op.error
    assert router_keys(ops_lab.primary_sim) == {PRIMARY_LINK}
    assert router_keys(ops_lab.remote_sim) == {(4, 1, "127.0.0.21")}
    assert set(Link.objects.values_list("site__name", "device__description", "state")) == {
        ("remote-site", "XRAID1", "up")}
    assert_agreement(ops_lab)
    removed = execute(submit("remove", ADD_XRAID1).pk)
    assert removed.state == "succeeded", removed.error
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()


@pytest.mark.django_db
def test_reconcile_reports_and_repair_takes_down_an_up_link_no_grant_needs(ops_lab):
    execute(submit("add", ADD_XRAID1).pk)
    Grant.objects.all().delete()  # the hold ended behind the engine's back: nobody may reach XRAID1
    report = reconcile().result["routers"]["primary-rtr"]
    assert [(d["port"], d["zone"], d["remote_ip"], d["reason"]) for d in report["mismatched"]] == [
        (*PRIMARY_LINK, "no grant needs it")]
    op = reconcile(repair=True)
    assert op.state == "succeeded", op.error
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert set(Link.objects.values_list("state", flat=True)) == {"down"}
    assert_agreement(ops_lab)

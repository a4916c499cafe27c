"""Who holds a link: a link stays up on the routers while a lock of its site still needs it."""

from __future__ import annotations

import threading
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction

from operations import execute, invoke, reconcile, submit
from operations.chores import settle_stranded_links
from operations.models import Grant, Link, Operation
from operations.planner import PlanError
from registry.models import Device, Site
from routers.drivers.base import LinkSpec
from tests.support.agreement import STRAY, assert_agreement, behind_the_registrys_back, router_keys


@pytest.fixture
def xraid4(demo):
    xraid1 = Device.objects.get(description="XRAID1")
    return Device.objects.create(device_id="xraid4", description="XRAID4", wwn="20:00:00:04:53:00:01:a4",
                                 zone=xraid1.zone, owner_site=xraid1.owner_site)


def add(description: str):
    op = execute(submit("add", {"site": "remote-site", "device_description": description}).pk)
    assert op.state == "succeeded", op.error
    return op


@pytest.mark.django_db
def test_removing_one_device_keeps_the_link_another_device_of_the_site_still_holds(ops_lab, xraid4):
    add("XRAID1")
    add("XRAID4")
    keys = (router_keys(ops_lab.primary_sim), router_keys(ops_lab.remote_sim))
    removed = execute(submit("remove", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert removed.state == "succeeded", removed.error
    assert (router_keys(ops_lab.primary_sim), router_keys(ops_lab.remote_sim)) == keys  # still up for XRAID4
    assert list(Grant.objects.values_list("device__description", flat=True)) == ["XRAID4"]
    assert set(Link.objects.filter(state="up").values_list("device__description", flat=True)) == {"XRAID4"}
    assert_agreement(ops_lab)
    last = execute(submit("remove", {"site": "remote-site", "device_description": "XRAID4"}).pk)
    assert last.state == "succeeded", last.error
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert not Grant.objects.exists()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_remove_then_an_add_queued_in_that_order_leave_the_site_holding_its_lock(ops_lab):
    add("XRAID1")
    remove = submit("remove", {"site": "remote-site", "device_description": "XRAID1"})
    again = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    assert execute(remove.pk).state == "succeeded"
    op = execute(again.pk)
    assert op.state == "succeeded", op.error
    assert router_keys(ops_lab.primary_sim) and router_keys(ops_lab.remote_sim)
    lock = Grant.objects.get()
    assert (lock.site.name, lock.device.description, lock.operation_id) == ("remote-site", "XRAID1", again.pk)
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_an_add_queued_behind_a_remove_is_not_made_with_values_edited_while_nobody_held_the_device(ops_lab):
    """A review of issue 45 found it: the add took its lock again at run time from the plan made at
    submit; the remove before it had released the device, an edit of the owner's router port went through
    (nothing held it), and the add configured the link at the old port. It now plans again when it must
    take a lock again, and stops before any router if the links differ."""
    add("XRAID1")
    remove = submit("remove", {"site": "remote-site", "device_description": "XRAID1"})
    again = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    assert execute(remove.pk).state == "succeeded"
    site = Site.objects.get(name="primary-site")
    site.router_port += 1
    site.full_clean()  # nothing holds it now: the edit is allowed
    site.save()
    op = execute(again.pk)
    assert op.state == "failed" and "changed since this connect was planned" in op.error, (op.state, op.error)
    assert not router_keys(ops_lab.primary_sim) and not router_keys(ops_lab.remote_sim)
    assert not Grant.objects.exists() and not Link.active().exists()
    assert execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk).state == "succeeded"
    assert {key[0] for key in router_keys(ops_lab.primary_sim)} == {site.router_port}


@pytest.mark.django_db
def test_repair_puts_records_left_mid_change_up_while_a_lock_still_holds_them(ops_lab):
    add("XRAID1")
    Link.objects.update(state="configuring")  # records left mid-change by an add that is long finished,
    behind_the_registrys_back(ops_lab.remote_rtr, "remove", LinkSpec(port=4, zone=1, remote_ip="127.0.0.21"))
    op = reconcile(repair=True)  # one of them no longer on its router; the site still holds XRAID1
    assert op.state == "succeeded", op.error
    assert set(Link.objects.values_list("state", flat=True)) == {"up"}
    assert Grant.objects.filter(site__name="remote-site", device__description="XRAID1").exists()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_repair_takes_off_records_left_mid_change_that_no_lock_holds(ops_lab):
    add("XRAID1")
    Link.objects.update(state="configuring")  # records left mid-change by an add that is long finished,
    Grant.objects.all().delete()  # whose hold has ended since
    op = reconcile(repair=True)
    assert op.state == "succeeded", op.error
    assert set(Link.objects.values_list("state", flat=True)) == {"failed"}
    assert not Grant.objects.exists()  # no link holds XRAID1 for remote-site any more
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_v1_link_is_held_like_any_other_and_its_removal_releases_the_device(ops_lab):
    added = invoke("primary-rtr", "addifcp", port=8, zone=1, remote_ip="127.0.0.22")
    assert added.state == "succeeded", added.error
    lock = Grant.objects.get()
    assert (lock.site.name, lock.device.description) == ("remote-site", "XRAID1")
    removed = invoke("primary-rtr", "rmifcp", port=8, zone=1, remote_ip="127.0.0.22")
    assert removed.state == "succeeded", removed.error
    assert not Grant.objects.exists()
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_link_recorded_from_the_router_gets_a_holder_so_another_site_cannot_take_the_device(ops_lab):
    behind_the_registrys_back(ops_lab.primary_rtr, "add", STRAY)  # zone 3: XRAID3, reached by primary-site
    op = reconcile(repair=True, policy="router")
    assert op.state == "succeeded", op.error
    link = Link.objects.get(state="up")
    assert (link.site.name, link.device.description) == ("primary-site", "XRAID3")
    lock = Grant.objects.get()
    assert (lock.site.name, lock.device.description, lock.exclusive) == ("primary-site", "XRAID3", True)
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_router_link_for_a_device_another_site_holds_exclusively_is_not_recorded(ops_lab, demo):
    behind_the_registrys_back(ops_lab.primary_rtr, "add", STRAY)
    Grant.objects.create(device=demo["xraid3"], site=demo["remote"], exclusive=True, reason="held elsewhere")
    op = reconcile(repair=True, policy="router")
    report = op.result["routers"]["primary-rtr"]
    assert not Link.objects.exists()
    assert [item["reason"] for item in report["unresolved"]] == [
        "XRAID3 is locked by remote-site; the registry cannot record primary-site holding it too (remove the link "
        "on the router, or free the device there)"]
    assert list(Grant.objects.values_list("site__name", flat=True)) == ["remote-site"]


def lease_of_up_links() -> set:
    return set(Link.objects.filter(state="up").values_list("lease_expires_at", flat=True))


@pytest.mark.django_db
def test_a_shared_link_lasts_as_long_as_its_longest_holder(ops_lab, xraid4):
    held = execute(submit("add", {"site": "remote-site", "device_description": "XRAID4", "duration": 600}).pk)
    leased = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1", "duration": 60}).pk)
    assert held.state == leased.state == "succeeded", (held.error, leased.error)
    xraid4_expiry = Grant.objects.get(device=xraid4).expires_at
    assert lease_of_up_links() == {xraid4_expiry}  # not XRAID1's 60 s: XRAID4 still needs the link after that
    assert execute(submit("remove", {"site": "remote-site", "device_description": "XRAID4"}).pk).state == "succeeded"
    assert lease_of_up_links() == {Grant.objects.get().expires_at}  # now XRAID1's alone
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_a_link_a_holder_keeps_without_a_lease_shows_no_expiry(ops_lab, xraid4):
    add("XRAID4")
    leased = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1", "duration": 60}).pk)
    assert leased.state == "succeeded", leased.error
    assert lease_of_up_links() == {None}
    assert Grant.objects.get(device__description="XRAID1").expires_at is not None


HOLDERS = {
    # Two devices of one zone and owner, held by one site: one link serves both.
    "one site": [("remote-site", "XRAID1"), ("remote-site", "XRAID4")],
    # Each site holds a device of zone 1 that the other owns: the same two sessions serve both.
    "two sites": [("remote-site", "XRAID1"), ("primary-site", "RAID-R1")],
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("holders", HOLDERS.values(), ids=HOLDERS.keys())
def test_the_two_holders_of_a_link_removed_at_once_leave_no_link_up_without_a_holder(ops_lab, xraid4, holders):
    Device.objects.create(device_id="raid-r1", description="RAID-R1", wwn="21:00:00:e0:8b:0e:95:99",
                          zone=xraid4.zone, owner_site=Site.objects.get(name="remote-site"))
    for site, device in holders:
        assert execute(submit("add", {"site": site, "device_description": device}).pk).state == "succeeded"
    (first_site, first_device), (second_site, second_device) = holders
    first = submit("remove", {"site": first_site, "device_description": first_device})
    second = submit("remove", {"site": second_site, "device_description": second_device})
    done = threading.Event()
    with transaction.atomic():
        # Hold the first device's lock row, so the first remove stops at the statement that ends it
        # (which deletes that lock) after it has handed the link to the other hold; the second starts.
        Grant.objects.select_for_update().get(device__description=first_device)
        in_thread(lambda: execute(first.pk))
        for _ in range(500):
            if Link.objects.filter(device__description=second_device, state="up").count() == 2:
                break
            time.sleep(0.02)
        threading.Event().wait(0.5)  # the first remove is now waiting on the lock row
        in_thread(lambda: (execute(second.pk), done.set()))
        done.wait(3)  # before the fix the second one finished here, seeing the first's lock still there
    for _ in range(500):
        if not Operation.objects.filter(pk__in=[first.pk, second.pk], state__in=["queued", "running"]).exists():
            break
        time.sleep(0.02)
    assert [Operation.objects.get(pk=op.pk).state for op in (first, second)] == ["succeeded", "succeeded"]
    held = Grant.objects.exists()
    up = Link.objects.filter(state="up").exists()
    assert held == up, f"locks held: {held}; links up: {up}"  # every up link has a holder, and no lock is idle
    assert_agreement(ops_lab)


def in_thread(work) -> threading.Thread:
    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["addifcp", "rmifcp"])
def test_a_v1_command_on_a_port_the_site_is_not_attached_to_is_refused(ops_lab, command):
    # A link on another port is one no disconnect would find (it plans from the site's port), so an
    # addifcp there would leave it up with no holder once the site lets go of the device.
    with pytest.raises(PlanError) as refused:
        invoke("primary-rtr", command, port=9, zone=1, remote_ip="127.0.0.22")
    assert refused.value.field == "port"
    assert "FC port 8" in str(refused.value)
    assert not Operation.objects.exists() and not Grant.objects.exists() and not Link.objects.exists()
    assert router_keys(ops_lab.primary_sim) == set()


@pytest.mark.django_db
def test_a_queued_v1_addifcp_holds_the_device_so_the_sites_values_cannot_change_under_it(ops_lab):
    # Found by the 30-minute soak (seed 286646565, step 191): an edit of a site's router_port was saved
    # while a V1 addifcp planned with the old port was still queued (it took its lock only when it ran);
    # the link it then made was on a port no disconnect plans from, and reconcile found it misplaced.
    queued = invoke("primary-rtr", "addifcp", port=8, zone=1, remote_ip="127.0.0.22", wait=False)
    assert queued.state == "queued"
    assert list(Grant.objects.values_list("site__name", "device__description", "operation")) == [
        ("remote-site", "XRAID1", queued.pk)]
    primary = Site.objects.get(name="primary-site")
    primary.router_port = 9
    with pytest.raises(ValidationError) as refused:
        primary.full_clean()
    assert "in_use" in {error.code for errors in refused.value.error_dict.values() for error in errors}
    assert execute(queued.pk).state == "succeeded"
    assert router_keys(ops_lab.primary_sim) == {(8, 1, "127.0.0.22")}


@pytest.mark.django_db
def test_a_v1_rmifcp_of_a_link_a_connect_needs_is_refused_and_the_path_stays_whole(ops_lab):
    # Found by the soak (seed 182898817): rmifcp took one half of remote-site's connected path to
    # XRAID1 off its router, the lock stayed and the site kept half a path. V1 commands manage the
    # links V1 made; a connect's links end with a disconnect.
    add("XRAID1")
    with pytest.raises(PlanError) as refused:
        invoke("primary-rtr", "rmifcp", port=8, zone=1, remote_ip="127.0.0.22")
    assert refused.value.field == "command"
    assert "remote-site holds XRAID1" in str(refused.value) and "disconnect" in str(refused.value)
    assert router_keys(ops_lab.primary_sim) == {(8, 1, "127.0.0.22")}
    assert Operation.objects.filter(kind="invoke").count() == 0
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_the_settle_never_takes_off_a_held_link_the_desired_state_cannot_name(ops_lab):
    # A link adopted from the router (or older than the V1 port rule) on a port that is not its
    # site's: a hold serves it, so the settle chore reports it and leaves it where it is.
    behind_the_registrys_back(ops_lab.primary_rtr, "add", STRAY)  # port 9; primary-site is on port 8
    assert reconcile(repair=True, policy="router").state == "succeeded"
    for pk in settle_stranded_links():
        assert execute(pk).state == "succeeded"
    assert router_keys(ops_lab.primary_sim) == {STRAY.key}
    assert Link.objects.get(state="up").port == 9
    report = reconcile().result["routers"]["primary-rtr"]
    assert [(d["port"], d["reason"]) for d in report["mismatched"]] == [
        (9, "held, but not where its grant's links would be made")]


@pytest.mark.django_db
def test_a_v1_rmifcp_releases_the_device_though_the_site_keeps_links_of_its_zone_to_another_site(ops_lab, demo):
    # Found by the 30-minute soak (seed 835225364, step 2022): the V1 hold of a device kept its lock
    # after its only link was removed, because the site still had a link of the zone to a third site.
    third = Site.objects.create(name="third-site", display_name="THIRD", msan_id=77, management_ip="10.0.7.7",
                                data_ip="127.0.0.77", router_port=7)
    Device.objects.create(device_id="xraid7", description="XRAID7", wwn="20:00:00:07:53:00:01:a7",
                          zone=demo["xraid1"].zone, owner_site=third)
    other = Link.objects.create(site=Site.objects.get(name="remote-site"), device=Device.objects.get(
        description="XRAID7"), router=ops_lab.remote_rtr, port=4, zone=demo["xraid1"].zone, remote_ip="127.0.0.77",
        state="up")  # remote-site's link of zone 1 to the third site (its hold is not the point here)
    assert invoke("primary-rtr", "addifcp", port=8, zone=1, remote_ip="127.0.0.22").state == "succeeded"
    assert invoke("primary-rtr", "rmifcp", port=8, zone=1, remote_ip="127.0.0.22").state == "succeeded"
    assert not Grant.objects.filter(device__description="XRAID1").exists()
    assert Link.objects.get(pk=other.pk).state == "up"

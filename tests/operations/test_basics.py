"""Add, remove, list and the journal against real simulators."""

from __future__ import annotations

import pytest

from operations import DeviceBusy, execute, list_links, submit
from operations.models import Grant, Link, Operation
from operations.planner import PlanError
from registry.models import Device, Site
from tests.support.agreement import add_third_site, assert_agreement, registry_keys, router_keys


@pytest.mark.django_db
def test_add_configures_both_routers_and_journals_the_work(ops_lab):
    op = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert op.state == "succeeded", op.error
    assert op.phase == "done"
    assert router_keys(ops_lab.primary_sim) == {(8, 1, "127.0.0.22")}
    assert router_keys(ops_lab.remote_sim) == {(4, 1, "127.0.0.21")}
    assert_agreement(ops_lab)
    assert Grant.objects.filter(device__description="XRAID1", site__name="remote-site", exclusive=True).exists()
    assert op.router_ms > 0 and op.total_ms >= op.router_ms + op.registry_ms
    assert abs(op.total_ms - (op.registry_ms + op.invocation_ms + op.router_ms)) < 1.0
    assert "s3cret" not in op.transcript and op.transcript


@pytest.mark.django_db
def test_remove_clears_the_routers_and_releases_the_lock(ops_lab):
    execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    op = execute(submit("remove", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert op.state == "succeeded", op.error
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert not Grant.objects.exists()
    assert set(Link.objects.values_list("state", flat=True)) == {"down"}


@pytest.mark.django_db
def test_removing_an_absent_link_is_a_quiet_success(ops_lab):
    op = execute(submit("remove", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert op.state == "succeeded", op.error


@pytest.mark.django_db
def test_a_second_site_cannot_take_an_exclusively_locked_device(ops_lab):
    add_third_site()
    submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    with pytest.raises(DeviceBusy) as info:
        submit("add", {"site": "third-site", "device_description": "XRAID1"})
    assert "locked by remote-site" in info.value.message
    assert Operation.objects.count() == 1


@pytest.mark.django_db
def test_a_shareable_device_is_locked_by_several_sites_at_once(ops_lab):
    add_third_site()
    Device.objects.filter(description="XRAID1").update(shareable=True)
    submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    submit("add", {"site": "third-site", "device_description": "XRAID1"})
    assert Grant.objects.filter(device__description="XRAID1", exclusive=False).count() == 2


@pytest.mark.django_db
def test_bad_requests_fail_at_submit_without_a_journal_row(ops_lab):
    with pytest.raises(PlanError) as info:
        submit("add", {"site": "nowhere", "device_description": "XRAID1"})
    assert info.value.field == "site"
    with pytest.raises(PlanError):
        submit("add", {"site": "remote-site", "device_description": "XRAID1", "duration": -5})
    with pytest.raises(PlanError) as info:
        submit("reconcile", {"router": "remote-rtx"})
    assert info.value.field == "router" and "remote-rtr" in info.value.suggestions
    assert not Operation.objects.exists()


@pytest.mark.django_db
def test_an_invoke_without_its_zone_is_refused_naming_the_zone(demo):
    with pytest.raises(PlanError) as info:
        submit("invoke", {"router": "primary-rtr", "command": "addifcp", "port": 8, "remote_ip": "127.0.0.22"})
    assert info.value.field == "zone"
    assert not Operation.objects.exists()


@pytest.mark.django_db
def test_list_links_reads_every_router(ops_lab):
    execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    listing = list_links()
    assert {(link["port"], link["zone"], link["remote_ip"]) for link in listing["primary-rtr"]} == {
        (8, 1, "127.0.0.22")
    }
    assert Operation.objects.filter(kind="list", state="succeeded").exists()


@pytest.mark.parametrize("platform", ["brocade_fos", "cisco_mds"])
@pytest.mark.django_db
def test_add_and_remove_drive_fcip_routers_over_ssh(demo, ops_settings, sim_factory, secrets_dir, platform):
    from tests.support.sims import wire

    if platform == "brocade_fos":  # FCIP links live on VE ports 24-43
        Site.objects.filter(name="primary-site").update(router_port=24)
        Site.objects.filter(name="remote-site").update(router_port=25)
    sims = {}
    for router in (demo["primary_rtr"], demo["remote_rtr"]):
        sims[router.name] = sim_factory(platform, ssh=("127.0.0.1", 0))
        wire(router, sims[router.name], secrets_dir, command_timeout=5.0)
    op = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert op.state == "succeeded", op.error
    for router in (demo["primary_rtr"], demo["remote_rtr"]):
        assert registry_keys(router) == router_keys(sims[router.name]) != set()
    op = execute(submit("remove", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert op.state == "succeeded", op.error
    assert all(router_keys(sim) == set() for sim in sims.values())


@pytest.mark.django_db
def test_a_second_device_behind_the_same_link_shares_it_without_touching_the_routers(ops_lab):
    xraid1 = Device.objects.get(description="XRAID1")
    Device.objects.create(
        device_id="xraid4", description="XRAID4", wwn="20:00:00:04:53:00:01:a4", zone=xraid1.zone,
        owner_site=xraid1.owner_site,
    )  # fmt: skip
    first = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    second = execute(submit("add", {"site": "remote-site", "device_description": "XRAID4"}).pk)
    assert second.state == "succeeded", second.error
    assert second.result["links"] == first.result["links"]  # the links already up, not new rows
    assert Link.objects.count() == 2
    assert not any(command in second.transcript for step in second.plan["steps"] for command in step["commands"])
    assert Grant.objects.filter(site__name="remote-site").count() == 2
    assert_agreement(ops_lab)


@pytest.mark.django_db
def test_operations_journaled_before_plans_carried_row_ids_still_run(ops_lab):
    for kind in ("add", "remove"):
        op = submit(kind, {"site": "remote-site", "device_description": "XRAID1"}, enqueue=False)
        plan = {key: value for key, value in op.plan.items() if key != "ids"}
        Operation.objects.filter(pk=op.pk).update(plan=plan)
        assert execute(op.pk).state == "succeeded"
        assert_agreement(ops_lab)
    assert not Grant.objects.exists()
    assert set(Link.objects.values_list("state", flat=True)) == {"down"}

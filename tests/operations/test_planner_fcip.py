"""FCIP steps in plans: the requesting site's initiators are the zone members, and what the driver sends is shown."""

import pytest
from django.core.management import call_command

from operations import submit
from operations.models import Grant, Link, Operation
from operations.planner import PlanError, plan_connect, plan_disconnect
from registry.models import Device, Host, Initiator, Router, Site
from routers.drivers.zoning import ACTIVE_ZONESET, EFFECTIVE
from tests.support.registry import demo_on_fcip

XRAID1 = "20:00:00:04:53:00:01:a0"


@pytest.fixture
def fcip(demo):
    """The demo's two sites on FCIP switches: primary-rtr a Brocade FOS (VE 24), remote-rtr a Cisco MDS (fcip 25)."""
    demo_on_fcip()
    return demo


def remote_initiators():
    return sorted(Initiator.objects.filter(host__site__name="remote-site").values_list("wwn", flat=True))


def test_fcip_steps_zone_the_requesting_sites_initiators_with_the_device(fcip):
    plan = plan_connect(site="remote-site", device_description="XRAID1")
    members = remote_initiators()
    assert members, "the demo's remote site has a host with initiators"
    for step in plan.steps:
        assert step.initiators == members and step.wwn == XRAID1
    fos, mds = plan.steps
    for initiator in members:
        pair = f"{initiator.replace(':', '')}_{XRAID1.replace(':', '')}"
        assert f'zonecreate "fz_z1_ve24_{pair}", "{initiator}; {XRAID1}"' in fos.commands
        assert f"zone name fz_z1_fcip25_{pair} vsan 10" in mds.commands
    assert f'cfgenable "{EFFECTIVE}"' in fos.commands
    assert f"zoneset activate name {ACTIVE_ZONESET} vsan 10" in mds.commands
    assert (fos.vsan, mds.vsan) == (None, 10)
    assert any("never replaces or disables it" in note for note in fos.notes)
    assert any("zone commit vsan 10" in note for note in mds.notes)


def test_the_plan_text_shows_the_members_and_the_notes(fcip):
    text = plan_connect(site="remote-site", device_description="XRAID1").describe()
    assert f"zone members: initiators {', '.join(remote_initiators())}; target {XRAID1}" in text
    assert "note: <effective cfg> is the zoning configuration in effect" in text


def test_hosts_narrow_the_members_to_the_named_hosts(fcip):
    site = Site.objects.get(name="remote-site")
    extra = Host.objects.create(site=site, name="backup-server")
    Initiator.objects.create(host=extra, wwn="10:00:00:10:9b:5e:c0:01")
    everyone = plan_connect(site="remote-site", device_description="XRAID1")
    assert "10:00:00:10:9b:5e:c0:01" in everyone.steps[0].initiators
    only = plan_connect(site="remote-site", device_description="XRAID1", hosts=["backup-server"])
    assert [step.initiators for step in only.steps] == [["10:00:00:10:9b:5e:c0:01"]] * 2


def test_an_unknown_host_names_the_field_and_close_matches(fcip):
    with pytest.raises(PlanError) as refused:
        plan_connect(site="remote-site", device_description="XRAID1", hosts=["management-servr"])
    assert refused.value.field == "hosts"
    assert refused.value.suggestions == ["management-server"]


def test_an_fcip_step_for_a_site_without_initiators_is_a_plan_error_naming_the_field(fcip):
    Initiator.objects.filter(host__site__name="remote-site").delete()
    with pytest.raises(PlanError) as refused:
        plan_connect(site="remote-site", device_description="XRAID1")
    assert refused.value.field == "hosts"
    assert "no initiators registered" in refused.value.message and "primary-rtr" in refused.value.message
    # A disconnect must stay possible whatever happened to the site's hosts since.
    assert plan_disconnect(site="remote-site", device_description="XRAID1").steps


def test_ifcp_steps_need_no_initiators(demo):
    Initiator.objects.all().delete()
    plan = plan_connect(site="remote-site", device_description="XRAID1")
    assert [step.initiators for step in plan.steps] == [[], []]
    assert all(step.notes == [] and step.vsan is None for step in plan.steps)


def test_a_disconnect_renders_the_initiators_the_link_was_configured_with(fcip):
    plan = plan_connect(site="remote-site", device_description="XRAID1")
    device = fcip["xraid1"]
    for step in plan.steps:
        Link.objects.create(site=fcip["remote"], device=device, router_id=step.router_id, port=step.port,
                            zone=device.zone, remote_ip=step.remote_ip, state="up",
                            initiators=["10:00:00:10:9b:5e:d0:01"])
    # The site's hosts have other initiators now (deleting those a live link zones is refused): the
    # recorded ones are what comes off.
    assert "10:00:00:10:9b:5e:d0:01" not in Initiator.objects.values_list("wwn", flat=True)
    disconnect = plan_disconnect(site="remote-site", device_description="XRAID1")
    assert [step.initiators for step in disconnect.steps] == [["10:00:00:10:9b:5e:d0:01"]] * 2
    assert any("fz_z1_fcip25_100000109b5ed001" in command for command in disconnect.steps[0].commands)


def test_the_plan_command_prints_the_fcip_members(fcip, capsys):
    call_command("plan", "--device-description", "XRAID1", "--site", "remote-site")
    out = capsys.readouterr().out
    assert "zone members: initiators" in out and "cfgenable" in out


def test_a_zone_connect_with_several_devices_of_one_owner_over_fcip_zones_them_all_on_one_link(fcip):
    # Failed before: refused by name ("an FCIP link zones one device").
    xraid1 = Device.objects.get(description="XRAID1")
    Device.objects.create(device_id="xraid4", description="XRAID4", wwn="20:00:00:04:53:00:01:a4",
                          zone=xraid1.zone, owner_site=xraid1.owner_site)
    plan = plan_connect(site="remote-site", zone=xraid1.zone.zone_id)
    assert plan.devices == ["XRAID1", "XRAID4"] and len(plan.steps) == 2
    initiators = plan.steps[0].initiators
    for step in plan.steps:
        assert step.device == "XRAID1" and step.pairs == [[i, "20:00:00:04:53:00:01:a4"] for i in initiators]
        assert sorted(step.spec.all_pairs()) == sorted((i, t) for i in initiators
                                                       for t in (xraid1.wwn, "20:00:00:04:53:00:01:a4"))
        # Every pair's zone is in the exact commands.
        made = " ".join(step.commands)
        assert all(f"{i.replace(':', '')}_{t.replace(':', '')}" in made for i, t in step.spec.all_pairs())
    assert "further targets: 20:00:00:04:53:00:01:a4" in plan.describe()
    assert plan_connect(site="remote-site", device_description="XRAID4").devices == ["XRAID4"]
    assert len(plan_disconnect(site="remote-site", zone=xraid1.zone.zone_id).steps) == 2


def test_a_zone_connect_with_several_devices_over_ifcp_is_one_shared_link(demo):
    xraid1 = Device.objects.get(description="XRAID1")
    Device.objects.create(device_id="xraid4", description="XRAID4", wwn="20:00:00:04:53:00:01:a4",
                          zone=xraid1.zone, owner_site=xraid1.owner_site)
    plan = plan_connect(site="remote-site", zone=xraid1.zone.zone_id)
    assert plan.devices == ["XRAID1", "XRAID4"] and len(plan.steps) == 2


@pytest.mark.parametrize("fcip_side", ["primary-rtr", "remote-rtr"])
def test_a_connect_between_an_ifcp_gateway_and_an_fcip_switch_is_refused_naming_both(demo, fcip_side):
    """An iFCP session towards an FCIP switch, or an FCIP tunnel towards an iFCP gateway, can never carry
    traffic: such a connect is refused before anything is journaled, naming both routers and the rule."""
    Router.objects.filter(name=fcip_side).update(platform="brocade_fos", transport="ssh")
    Site.objects.filter(routers__name=fcip_side).update(router_port=24)
    with pytest.raises(PlanError) as refused:
        plan_connect(site="remote-site", device_description="XRAID1")
    assert refused.value.field == "site"
    message = str(refused.value)
    assert "primary-rtr" in message and "remote-rtr" in message and "brocade_fos" in message
    assert "FCIP" in message and "iFCP" in message
    with pytest.raises(PlanError, match="FCIP"):
        plan_connect(site="remote-site", zone=1)
    with pytest.raises(PlanError, match="speak different protocols"):  # nothing journaled, nothing held
        submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    assert not Operation.objects.exists() and not Grant.objects.exists()


def test_a_disconnect_between_an_ifcp_gateway_and_an_fcip_switch_is_still_planned(demo):
    """Links made before such connects were refused can still be taken down."""
    Router.objects.filter(name="primary-rtr").update(platform="brocade_fos", transport="ssh")
    Site.objects.filter(name="primary-site").update(router_port=24)
    plan = plan_disconnect(site="remote-site", device_description="XRAID1")
    assert [step.router for step in plan.steps] == ["remote-rtr", "primary-rtr"]

"""Hosts and their initiator ports: the registry's rules as the admin, the API and the jobs meet them (full_clean),
and the demo's cast of hosts."""

import pytest
from django.core.exceptions import ValidationError
from django.db.models import ProtectedError

from registry.demo import load_demo
from registry.models import Device, Host, Initiator, Router, Site


def messages(error: ValidationError, field: str) -> list[str]:
    return error.value.message_dict[field]


def test_the_demo_gives_each_site_its_dice_host_and_initiators(demo):
    hosts = {(host.site.name, host.name, host.description, tuple(host.initiators.values_list("wwn", flat=True)))
             for host in Host.objects.select_related("site")}
    assert hosts == {
        ("primary-site", "segment-server", "DICE Segment Server",
         ("21:00:00:e0:8b:10:5e:01", "21:01:00:e0:8b:30:5e:01")),
        ("remote-site", "management-server", "DICE Management Server", ("21:00:00:e0:8b:10:3a:02",)),
    }
    assert not Site.objects.filter(name__in=["east-site", "west-site"]).exists()


def test_loaddemo_adds_the_fcip_pair_and_is_idempotent(db, secrets_dir):
    first = load_demo()
    assert load_demo() == first
    assert first == {"sites": 4, "routers": 4, "zones": 4, "devices": 4, "hosts": 4}
    east, west = Router.objects.get(name="east-rtr"), Router.objects.get(name="west-rtr")
    assert (east.platform, east.transport, east.host, east.port) == ("brocade_fos", "ssh", "127.0.0.13", 2325)
    assert (east.site.name, east.site.display_name, east.site.router_port) == ("east-site", "DICE-EAST", 24)
    assert (west.platform, west.transport, west.host, west.vsan) == ("cisco_mds", "ssh", "127.0.0.14", 1)
    assert (secrets_dir / "east-rtr").exists() and west.secret_ref == "file:west-rtr"
    array = Device.objects.get(description="EAST-ARRAY1")
    assert (array.wwn, array.zone.zone_id, array.owner_site.name) == ("50:00:09:72:08:1a:f1:04", 4, "east-site")
    assert sorted(Initiator.objects.filter(host__name="west-analysis").values_list("wwn", flat=True)) == [
        "10:00:00:10:9b:5e:b0:01", "10:00:00:10:9b:5e:b0:02"]
    backup = Initiator.objects.get(host__name="east-backup", host__site__name="east-site")
    assert backup.wwn == "10:00:00:10:9b:5e:a0:01"


def test_an_initiator_wwn_is_stored_lower_case(demo):
    host = Host.objects.get(name="segment-server")
    saved = Initiator.objects.create(host=host, wwn="10:00:00:10:9B:5E:C0:01")
    assert Initiator.objects.get(pk=saved.pk).wwn == "10:00:00:10:9b:5e:c0:01"
    cleaned = Initiator(host=host, wwn="10:00:00:10:9B:5E:C0:02")
    cleaned.clean()
    assert cleaned.wwn == "10:00:00:10:9b:5e:c0:02"


def test_a_device_wwn_cannot_be_an_initiator(demo):
    host = Host.objects.get(name="management-server")
    with pytest.raises(ValidationError) as refused:
        Initiator(host=host, wwn=demo["xraid1"].wwn).full_clean()
    assert messages(refused, "wwn") == [
        "20:00:00:04:53:00:01:a0 is the WWN of device XRAID1; a port is either a target or an initiator here."]


def test_an_initiator_wwn_cannot_be_a_device(demo):
    device = Device(device_id="x9", description="X9", wwn="21:00:00:e0:8b:10:3a:02", zone=demo["zones"][2],
                    owner_site=demo["remote"])
    with pytest.raises(ValidationError) as refused:
        device.full_clean()
    assert messages(refused, "wwn") == [
        "21:00:00:e0:8b:10:3a:02 is the WWN of an initiator of host management-server at remote-site; a port is "
        "either a target or an initiator here."]


def test_a_device_keeps_passing_its_own_rules_when_saved_again(demo):
    demo["xraid2"].full_clean()


@pytest.mark.parametrize("vsan, allowed", [(1, True), (10, True), (4093, True), (0, False), (4079, False),
                                           (4094, False)])
def test_a_router_vsan_is_1_to_4093_but_not_4079(demo, vsan, allowed):
    router = demo["remote_rtr"]
    router.vsan = vsan
    if allowed:
        router.full_clean()
        return
    with pytest.raises(ValidationError) as refused:
        router.full_clean()
    assert messages(refused, "vsan") == ["The VSAN must be between 1 and 4093 and not the reserved 4079."]


def test_a_site_with_hosts_cannot_be_deleted_and_a_host_takes_its_initiators_along(demo):
    host = Host.objects.get(name="segment-server")
    with pytest.raises(ProtectedError):
        Site.objects.filter(pk=demo["primary"].pk).delete()
    host.delete()
    assert not Initiator.objects.filter(wwn__startswith="21:0").exclude(host__name="management-server").exists()


def test_the_fcip_pair_plans_a_link_zoning_west_sites_initiators_with_the_east_array(db, secrets_dir):
    from operations.planner import plan_connect

    load_demo()
    plan = plan_connect(site="west-site", device_description="EAST-ARRAY1")
    assert [(step.router, step.vsan) for step in plan.steps] == [("east-rtr", None), ("west-rtr", 1)]
    assert all(step.initiators == ["10:00:00:10:9b:5e:b0:01", "10:00:00:10:9b:5e:b0:02"] for step in plan.steps)
    only = plan_connect(site="west-site", device_description="EAST-ARRAY1", hosts=["west-analysis"])
    assert only.steps[0].initiators == plan.steps[0].initiators

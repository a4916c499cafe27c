"""Every registry invariant is enforced by the database itself: each test inserts bad data without
going through clean() and expects the named constraint to refuse it."""

import pytest
from django.db import IntegrityError, connection, transaction

from operations.models import Grant, Link
from registry.errors import explain_integrity_error
from registry.models import Device, Host, Initiator, Router, Site, Zone


def refused(action) -> tuple[str, str]:
    """Run `action` in a savepoint with constraints checked immediately; return the explanation."""
    with pytest.raises(IntegrityError) as info:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            action()
    return explain_integrity_error(info.value)


def site(**overrides) -> Site:
    values = {
        "name": "third-site",
        "display_name": "THIRD",
        "msan_id": 3,
        "management_ip": "127.0.0.13",
        "data_ip": "127.0.0.23",
        "router_port": 2,
    }
    return Site(**{**values, **overrides})


def test_duplicate_site_name_is_refused(demo):
    field, message = refused(lambda: site(name="primary-site").save())
    assert message == "A site with this short name already exists."


def test_duplicate_msan_id_is_refused(demo):
    field, message = refused(lambda: site(msan_id=demo["primary"].msan_id).save())
    assert "MSAN id" in message and field == "msan_id"


def test_non_positive_msan_id_is_refused(demo):
    _, message = refused(lambda: Site.objects.bulk_create([site(msan_id=0)]))
    assert message == "The MSAN id must be a positive integer."


def test_device_without_a_zone_is_refused(demo):
    device = Device(device_id="x9", description="X9", wwn="50:00:00:00:00:00:00:09", owner_site=demo["primary"])
    _, message = refused(lambda: Device.objects.bulk_create([device]))
    assert message == "A device must belong to a zone."


def test_device_with_a_zone_that_does_not_exist_is_refused(demo):
    device = Device(
        device_id="x9", description="X9", wwn="50:00:00:00:00:00:00:09", owner_site=demo["primary"], zone_id=999_999
    )
    _, message = refused(lambda: Device.objects.bulk_create([device]))
    assert message == "A device must belong to an existing zone."


def test_duplicate_wwn_in_another_letter_case_is_refused(demo):
    upper = demo["xraid2"].wwn.upper()
    device = Device(device_id="dup", description="DUP", wwn=upper, zone=demo["zones"][2], owner_site=demo["remote"])
    field, message = refused(device.save)  # save() stores lower case, so the unique index must catch it
    assert field == "non_field_errors" or "WWN" in message
    assert message.startswith("A device with this WWN already exists")


def test_duplicate_wwn_inserted_raw_is_refused(demo):
    device = Device(
        device_id="dup", description="DUP", wwn=demo["xraid2"].wwn, zone=demo["zones"][2], owner_site=demo["remote"]
    )
    _, message = refused(lambda: Device.objects.bulk_create([device]))
    assert message.startswith("A device with this WWN already exists")


@pytest.mark.parametrize(
    "wwn",
    ["21:00:00:e0:8b:0e:95", "21:00:00:e0:8b:0e:95:1g", "2100:00e0:8b0e:9517", "21:00:00:E0:8B:0E:95:17", ""],
)
def test_malformed_wwn_is_refused(demo, wwn):
    device = Device(device_id="bad", description="BAD", wwn=wwn, zone=demo["zones"][1], owner_site=demo["primary"])
    _, message = refused(lambda: Device.objects.bulk_create([device]))
    assert message.startswith("A WWN is eight lower-case colon-separated hex bytes")


def link(demo, **overrides) -> Link:
    values = {
        "site": demo["remote"],
        "device": demo["xraid1"],
        "router": demo["primary_rtr"],
        "port": 8,
        "zone": demo["zones"][1],
        "remote_ip": "127.0.0.22",
        "state": Link.State.UP,
    }
    return Link(**{**values, **overrides})


def test_two_active_links_on_the_same_router_port_zone_and_remote_ip_are_refused(demo):
    link(demo).save()
    _, message = refused(lambda: link(demo, state=Link.State.CONFIGURING).save())
    assert message == "An active link with this router, port, zone and remote IP already exists."


def test_an_inactive_link_does_not_block_a_new_active_one(demo):
    link(demo, state=Link.State.DOWN).save()
    link(demo, state=Link.State.FAILED).save()
    link(demo).save()
    assert Link.objects.filter(state=Link.State.UP).count() == 1


def test_a_device_locked_by_two_sites_at_once_is_refused(demo):
    Grant.objects.create(device=demo["xraid1"], site=demo["remote"], exclusive=True)
    third = site()
    third.save()
    _, message = refused(lambda: Grant.objects.create(device=demo["xraid1"], site=third, exclusive=True))
    assert message == "Another site holds an exclusive grant of this device."


def test_a_site_cannot_hold_the_same_device_twice(demo):
    Grant.objects.create(device=demo["xraid1"], site=demo["remote"], exclusive=False)
    _, message = refused(lambda: Grant.objects.create(device=demo["xraid1"], site=demo["remote"], exclusive=False))
    assert message == "This site already holds a grant of this device."


def test_zone_id_outside_the_fc_range_is_refused(db):
    _, message = refused(lambda: Zone.objects.bulk_create([Zone(zone_id=5000)]))
    assert message == "The zone id must be between 1 and 4094."


def test_two_hosts_of_one_site_with_the_same_name_are_refused(demo):
    duplicate = Host(site=demo["remote"], name="management-server")
    field, message = refused(lambda: Host.objects.bulk_create([duplicate]))
    assert (field, message) == ("name", "This site already has a host with this name.")


def test_hosts_of_different_sites_may_share_a_name(demo):
    Host.objects.create(site=demo["primary"], name="management-server")
    assert Host.objects.filter(name="management-server").count() == 2


def test_an_initiator_wwn_given_twice_in_another_letter_case_is_refused(demo):
    host = Host.objects.get(name="segment-server")
    taken = Initiator.objects.get(host__name="management-server").wwn
    field, message = refused(Initiator(host=host, wwn=taken.upper()).save)  # stored lower case: the index catches it
    assert message == "An initiator with this WWN already exists (WWNs compare without regard to case)."


def test_an_initiator_wwn_inserted_raw_twice_is_refused(demo):
    host = Host.objects.get(name="segment-server")
    taken = Initiator.objects.get(host__name="management-server").wwn
    _, message = refused(lambda: Initiator.objects.bulk_create([Initiator(host=host, wwn=taken)]))
    assert message.startswith("An initiator with this WWN already exists")


@pytest.mark.parametrize("wwn", ["10:00:00:10:9b:5e:c0", "10:00:00:10:9b:5e:c0:0g", "10:00:00:10:9B:5E:C0:01", ""])
def test_a_malformed_initiator_wwn_is_refused(demo, wwn):
    host = Host.objects.get(name="segment-server")
    _, message = refused(lambda: Initiator.objects.bulk_create([Initiator(host=host, wwn=wwn)]))
    assert message.startswith("A WWN is eight lower-case colon-separated hex bytes")


@pytest.mark.parametrize("vsan", [0, 4079, 4094, 30000])
def test_a_vsan_outside_the_usable_range_is_refused(demo, vsan):
    _, message = refused(lambda: Router.objects.filter(pk=demo["remote_rtr"].pk).update(vsan=vsan))
    assert message == "The VSAN must be between 1 and 4093 and not the reserved 4079."

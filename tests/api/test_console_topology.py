"""The topology's connections, from what the engine really recorded (operations run against simulators)."""

from __future__ import annotations

import pytest

from access.models import Principal, Role
from console import topology
from operations import execute, submit
from operations.drift_reports import last_reports
from operations.models import Link
from operations.steps import router_target
from registry.models import Device
from routers.drivers import get_driver
from routers.drivers.base import LinkSpec


def connections() -> dict[tuple[str, str], topology.Connection]:
    picture = topology.build(last_reports(), Principal(role=Role.ADMIN))  # sees every connection
    return {(c.site.name, c.device.description): c for c in picture["connections"]}


@pytest.mark.django_db
def test_two_devices_of_one_zone_are_two_connections_over_the_same_links(ops_lab):
    Device.objects.create(device_id="xraid4", description="XRAID4", wwn="20:00:00:04:53:00:01:a4",
                          zone=ops_lab.demo["zones"][1], owner_site=ops_lab.demo["primary"])
    for device in ("XRAID1", "XRAID4"):
        assert execute(submit("add", {"site": "remote-site", "device_description": device}).pk).state == "succeeded"
    assert Link.objects.filter(state="up").count() == 2  # the second device rode on the first one's links
    shown = connections()
    assert sorted(shown) == [("remote-site", "XRAID1"), ("remote-site", "XRAID4")]
    assert {link.pk for link in shown["remote-site", "XRAID1"].links} == \
        {link.pk for link in shown["remote-site", "XRAID4"].links}
    assert {c.state for c in shown.values()} == {"up"}
    paths = {c.path for c in shown.values()}
    assert len(paths) == 2  # one pair of sites, two curves bowed apart


@pytest.mark.django_db
def test_a_link_the_last_reconcile_found_missing_is_drawn_drifted_until_it_changes(ops_lab):
    execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    link = Link.objects.get(router__name="remote-rtr", state="up")
    # The router loses the link behind flexzone's back (someone typed the removal on its console).
    driver = get_driver(router_target(link.router))
    driver.connect()
    try:
        driver.remove_link(LinkSpec(port=link.port, zone=link.zone.zone_id, remote_ip=link.remote_ip))
    finally:
        driver.close()
    assert connections()["remote-site", "XRAID1"].state == "up"  # nobody has looked yet
    report = execute(submit("reconcile", {}).pk)
    assert report.result["routers"]["remote-rtr"]["missing"]
    assert connections()["remote-site", "XRAID1"].state == "drifted"
    assert execute(submit("reconcile", {"repair": True}).pk).state == "succeeded"
    assert connections()["remote-site", "XRAID1"].state == "up"  # repaired: nothing outstanding

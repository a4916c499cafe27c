"""The Eclipse and Nishan drivers (routers/drivers/ifcp.py and their vendor modules) against their
simulators, over real telnet sessions: what the iFCP gateways answer beyond the driver contract
(test_contract.py)."""

from __future__ import annotations

import pytest

from routers.drivers.base import CommandRejected, LinkExists, LinkSpec

SPEC = LinkSpec(port=3, zone=17, remote_ip="10.0.8.50")


@pytest.fixture(params=["mcdata_eclipse", "nishan_ips3000"])
def platform(request):
    return request.param


def test_an_add_that_is_already_there_is_refused_naming_the_session(sim_factory, driver_for, platform):
    sim = sim_factory(platform)
    driver = driver_for(sim)
    driver.add_link(SPEC)
    with pytest.raises(LinkExists) as caught:
        driver.add_link(SPEC)
    assert "10.0.8.50" in caught.value.router_message
    assert len(sim.links()) == 1


@pytest.mark.parametrize("spec", [LinkSpec(99, 1, "10.0.8.50"), LinkSpec(0, 1, "10.0.8.50"),
                                  LinkSpec(3, 1, "224.0.0.5")])
def test_arguments_the_device_refuses_raise_command_rejected(sim_factory, driver_for, platform, spec):
    sim = sim_factory(platform)
    driver = driver_for(sim)
    if platform == "mcdata_eclipse" and spec.port == 0:
        driver.add_link(spec)  # the Eclipse numbers its FC ports from 0, the IPS from 1
        return
    with pytest.raises(CommandRejected) as caught:
        driver.add_link(spec)
    assert not isinstance(caught.value, LinkExists)
    assert caught.value.router_message
    assert sim.links() == []

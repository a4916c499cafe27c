"""The Eclipse and Nishan drivers against their simulators, over real telnet sessions."""

from __future__ import annotations

import time

import pytest

from routers.drivers import DRIVERS, get_driver
from routers.drivers.base import (
    CommandRejected,
    LinkAbsent,
    LinkExists,
    LinkSpec,
    Platform,
    RouterAuthError,
    RouterConnectError,
    RouterLink,
    RouterTarget,
    RouterTimeout,
    Transport,
)
from routers.drivers.mcdata_eclipse import EclipseDriver
from routers.drivers.nishan_ips3000 import NishanDriver

from .conftest import PASSWORD

IFCP = ["mcdata_eclipse", "nishan_ips3000"]
SPEC = LinkSpec(port=3, zone=17, remote_ip="10.0.8.50")
LIST_COMMANDS = {"mcdata_eclipse": "show ifcp session", "nishan_ips3000": "ifcp list"}


@pytest.fixture(params=IFCP)
def platform(request):
    return request.param


def test_the_dispatch_map_has_the_ifcp_drivers():
    assert DRIVERS[Platform.MCDATA_ECLIPSE] is EclipseDriver
    assert DRIVERS[Platform.NISHAN_IPS3000] is NishanDriver


def test_the_dispatch_map_covers_every_platform_and_refuses_unknown_ones(sim_target):
    assert set(DRIVERS) == set(Platform)
    for platform, cls in DRIVERS.items():
        assert cls.platform == platform
    with pytest.raises(ValueError, match="platform"):
        get_driver(RouterTarget("vax_vms", "127.0.0.1", 23, Transport.TELNET, "a", "b"))  # type: ignore[arg-type]


def test_rendering_is_pure_and_exact():
    assert EclipseDriver.render_add(SPEC) == ["ifcp session add fc-port 3 zone 17 remote-gateway 10.0.8.50"]
    assert EclipseDriver.render_remove(SPEC) == ["ifcp session remove fc-port 3 zone 17 remote-gateway 10.0.8.50"]
    assert NishanDriver.render_add(SPEC) == ["ifcp create fcport=3 zone=17 remote=10.0.8.50"]
    assert NishanDriver.render_remove(SPEC) == ["ifcp delete fcport=3 zone=17 remote=10.0.8.50"]


def test_a_link_is_added_listed_and_removed(sim_factory, driver_for, platform):
    sim = sim_factory(platform)
    driver = driver_for(sim)
    assert driver.list_links() == []
    driver.add_link(SPEC)
    driver.save_config()
    assert driver.list_links() == [RouterLink(3, 17, "10.0.8.50", "up")]
    assert sim.links() == [RouterLink(3, 17, "10.0.8.50", "up")]
    driver.remove_link(SPEC)
    driver.save_config()
    assert driver.list_links() == []
    assert sim.links() == []


def test_adding_a_link_twice_raises_link_exists(sim_factory, driver_for, platform):
    sim = sim_factory(platform)
    driver = driver_for(sim)
    driver.add_link(SPEC)
    with pytest.raises(LinkExists) as caught:
        driver.add_link(SPEC)
    assert "10.0.8.50" in caught.value.router_message
    assert len(sim.links()) == 1


def test_removing_an_absent_link_raises_link_absent(sim_factory, driver_for, platform):
    driver = driver_for(sim_factory(platform))
    with pytest.raises(LinkAbsent):
        driver.remove_link(SPEC)


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


def test_a_link_spec_that_is_not_canonical_never_reaches_the_router():
    with pytest.raises(ValueError):
        LinkSpec(port=3, zone=17, remote_ip="10.0.8.050")
    with pytest.raises(ValueError):
        LinkSpec(port=3, zone=5000, remote_ip="10.0.8.50")


def test_the_transcript_is_masked_and_router_seconds_are_counted(sim_factory, driver_for, platform):
    sim = sim_factory(platform, scale=0.05)
    driver = driver_for(sim)
    driver.add_link(SPEC)
    transcript = driver.take_transcript()
    assert PASSWORD not in transcript
    assert driver.render_add(SPEC)[0] in transcript
    assert driver.take_router_seconds() > 0.05
    assert driver.take_router_seconds() == 0.0
    assert driver.take_transcript() == ""


def test_a_long_lived_session_keeps_only_the_transcript_not_yet_taken(sim_factory, driver_for, platform):
    driver = driver_for(sim_factory(platform))
    listing = LIST_COMMANDS[platform]
    left_over = []
    for _ in range(20):
        driver.list_links()
        assert driver.take_transcript().count(listing) == 1  # this call's command, once
        left_over.append(driver._log.getbuffer().nbytes)  # the session log netmiko writes into
    assert left_over == [0] * 20
    driver.add_link(SPEC)
    transcript = driver.take_transcript()
    assert driver.render_add(SPEC)[0] in transcript and listing not in transcript


def test_a_deadline_shortens_every_wait_and_a_passed_one_sends_nothing(sim_factory, driver_for, platform):
    sim = sim_factory(platform)
    driver = driver_for(sim, command_timeout=20.0)
    driver.take_transcript()
    driver.deadline = time.monotonic() - 1
    with pytest.raises(RouterTimeout):
        driver.add_link(SPEC)
    assert driver.render_add(SPEC)[0] not in driver.take_transcript() and sim.links() == []
    sim.add_fault("stall_command")
    driver.deadline = time.monotonic() + 0.5
    started = time.monotonic()
    with pytest.raises(RouterTimeout):
        driver.list_links()
    assert time.monotonic() - started < 3  # not the 20 s command timeout


def test_wrong_credentials_raise_router_auth_error(sim_factory, sim_target, platform):
    sim = sim_factory(platform)
    driver = get_driver(sim_target(sim, password="not-it"))
    with pytest.raises(RouterAuthError) as caught:
        driver.connect()
    assert "not-it" not in str(caught.value) + caught.value.transcript


def test_nothing_listening_raises_router_connect_error(sim_factory, sim_target, platform):
    sim = sim_factory(platform)
    target = sim_target(sim)
    sim.stop()
    with pytest.raises(RouterConnectError):
        get_driver(target).connect()


def test_a_session_is_reused_and_closed(sim_factory, driver_for, platform):
    sim = sim_factory(platform)
    driver = driver_for(sim)
    assert driver.is_alive()
    driver.add_link(SPEC)
    driver.list_links()
    assert sim.active_sessions() == 1
    driver.close()
    assert not driver.is_alive()

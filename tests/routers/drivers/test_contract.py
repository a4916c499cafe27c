"""The driver contract (routers/drivers/base.py), kept by every platform's driver against its simulator
over real telnet and SSH sessions: one suite, parametrized over the four platforms."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from routers.drivers import DRIVERS, get_driver
from routers.drivers.base import (
    LinkAbsent,
    LinkExists,
    LinkSpec,
    RouterAuthError,
    RouterConnectError,
    RouterLink,
    RouterTarget,
    RouterTimeout,
)
from routers.drivers.brocade_fos import BrocadeFosDriver
from routers.drivers.cisco_mds import CiscoMdsDriver
from routers.drivers.mcdata_eclipse import EclipseDriver
from routers.drivers.nishan_ips3000 import NishanDriver
from routers.platforms import Platform, Transport
from tests.support.sims import PASSWORD

WWN = "50:00:09:73:98:06:c8:08"
HOST = "10:00:00:10:9b:5e:b0:01"
FOS_ZONE = "fz_z7_ve24_100000109b5eb001_500009739806c808"
MDS_ZONE = "fz_z7_fcip5_100000109b5eb001_500009739806c808"


@dataclass(frozen=True)
class Case:
    """One platform as the contract tests drive it."""

    driver: type
    spec: LinkSpec
    other_remote: str  # a gateway the link does not reach
    add: list[str]  # what render_add(spec) must be, exactly
    remove: list[str]  # what render_remove(spec) must be, exactly
    probe: str  # a read-only command no add or remove sends
    transport: Transport  # the one a driver of this platform is normally given

    @property
    def link(self) -> RouterLink:
        return RouterLink(self.spec.port, self.spec.zone, self.spec.remote_ip, "up")


CASES = {
    Platform.MCDATA_ECLIPSE: Case(
        EclipseDriver, LinkSpec(3, 17, "10.0.8.50"), "10.0.8.99",
        ["ifcp session add fc-port 3 zone 17 remote-gateway 10.0.8.50"],
        ["ifcp session remove fc-port 3 zone 17 remote-gateway 10.0.8.50"],
        "show ifcp session", Transport.TELNET),
    Platform.NISHAN_IPS3000: Case(
        NishanDriver, LinkSpec(3, 17, "10.0.8.50"), "10.0.8.99",
        ["ifcp create fcport=3 zone=17 remote=10.0.8.50"],
        ["ifcp delete fcport=3 zone=17 remote=10.0.8.50"],
        "ifcp list", Transport.TELNET),
    Platform.BROCADE_FOS: Case(
        BrocadeFosDriver, LinkSpec(24, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,)), "198.18.1.99",
        [f'zonecreate "{FOS_ZONE}", "{HOST}; {WWN}"',
         f'cfgadd "<effective cfg>", "{FOS_ZONE}"',
         'cfgenable "<effective cfg>"',
         "portcfg fciptunnel 24 create -d flexzone",
         "portcfg fcipcircuit 24 create 0 --local-ip 198.18.0.1 --remote-ip 198.18.1.1"],
        ["portcfg fciptunnel 24 delete",
         f'cfgremove "<effective cfg>", "{FOS_ZONE}"',
         f'zonedelete "{FOS_ZONE}"',
         'cfgenable "<effective cfg>"'],
        "switchshow", Transport.SSH),
    Platform.CISCO_MDS: Case(
        CiscoMdsDriver, LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,)), "198.18.1.99",
        ["configure terminal", "feature fcip", "fcip profile 5", "ip address 198.18.0.1", "interface fcip 5",
         "switchport description flexzone", "use-profile 5", "peer-info ipaddr 198.18.1.1", "no shutdown",
         f"zone name {MDS_ZONE} vsan 1", f"member pwwn {HOST}", f"member pwwn {WWN}",
         "zoneset name <active zoneset> vsan 1", f"member {MDS_ZONE}",
         "zoneset activate name <active zoneset> vsan 1", "end"],
        ["configure terminal", "zoneset name <active zoneset> vsan 1", f"no member {MDS_ZONE}",
         f"no zone name {MDS_ZONE} vsan 1", "zoneset activate name <active zoneset> vsan 1",
         "no interface fcip 5", "no fcip profile 5", "end"],
        "show interface brief", Transport.SSH),
}
# Every transport each platform's simulator serves (an MDS allows telnet where the switch is set so).
TRANSPORTS = [(platform, transport) for platform in CASES
              for transport in ([Transport.TELNET, Transport.SSH] if platform in (Platform.BROCADE_FOS,
                                                                               Platform.CISCO_MDS)
                                else [Transport.TELNET])]


# Links a platform's driver cannot configure although LinkSpec takes them, and the field at fault.
REFUSED = [
    (Platform.BROCADE_FOS, LinkSpec(3, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,)), "port"),
    (Platform.BROCADE_FOS, LinkSpec(44, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,)), "port"),
    (Platform.BROCADE_FOS, LinkSpec(24, 7, "198.18.1.1", None, WWN, (HOST,)), "local_ip"),
    (Platform.BROCADE_FOS, LinkSpec(24, 7, "198.18.1.1", "198.18.0.1", None, (HOST,)), "wwn"),
    (Platform.BROCADE_FOS, LinkSpec(24, 7, "198.18.1.1", "198.18.1.1", WWN, (HOST,)), "remote_ip"),
    (Platform.BROCADE_FOS, LinkSpec(24, 7, "198.18.1.1", "198.18.0.1", WWN), "initiators"),
    (Platform.CISCO_MDS, LinkSpec(0, 7, "198.18.1.1", "198.18.0.1", WWN), "port"),
    (Platform.CISCO_MDS, LinkSpec(256, 7, "198.18.1.1", "198.18.0.1", WWN), "port"),
    (Platform.CISCO_MDS, LinkSpec(5, 7, "2001:db8::2", "2001:db8::1", WWN), "remote_ip"),
    (Platform.CISCO_MDS, LinkSpec(5, 7, "198.18.1.1", None, WWN, (HOST,)), "local_ip"),
    (Platform.CISCO_MDS, LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", None, (HOST,)), "wwn"),
    (Platform.CISCO_MDS, LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", WWN), "initiators"),
    (Platform.CISCO_MDS, LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,), vsan=2), "vsan"),
]


@pytest.fixture(params=list(CASES), ids=str)
def platform(request) -> Platform:
    return request.param


@pytest.fixture
def case(platform) -> Case:
    return CASES[platform]


@pytest.fixture
def sim(sim_factory, platform, case):
    return sim_factory(platform, **{case.transport.value: ("127.0.0.1", 0)})


def test_the_dispatch_map_names_the_driver_of_every_platform_and_refuses_unknown_ones():
    assert DRIVERS == {platform: case.driver for platform, case in CASES.items()}
    assert set(DRIVERS) == set(Platform)
    for platform, cls in DRIVERS.items():
        assert cls.platform == platform
    with pytest.raises(ValueError, match="platform"):
        get_driver(RouterTarget("vax_vms", "127.0.0.1", 23, Transport.TELNET, "a", "b"))  # type: ignore[arg-type]


def test_rendering_is_pure_and_exact(case):
    assert case.driver.render_add(case.spec) == case.add
    assert case.driver.render_remove(case.spec) == case.remove


def test_a_link_spec_that_is_not_canonical_never_reaches_a_router():
    with pytest.raises(ValueError):
        LinkSpec(port=3, zone=17, remote_ip="10.0.8.050")
    with pytest.raises(ValueError):
        LinkSpec(port=3, zone=5000, remote_ip="10.0.8.50")


@pytest.mark.parametrize("platform, transport", TRANSPORTS, ids=[f"{p}-{t}" for p, t in TRANSPORTS])
def test_a_link_is_added_listed_and_removed(sim_factory, driver_for, platform, transport):
    case = CASES[platform]
    sim = sim_factory(platform, **{transport.value: ("127.0.0.1", 0)})
    driver = driver_for(sim, transport.value)
    assert driver.list_links() == []
    driver.add_link(case.spec)
    driver.save_config()
    assert driver.list_links() == [case.link]
    assert sim.links() == [case.link]
    driver.remove_link(case.spec)
    driver.save_config()
    assert driver.list_links() == []
    assert sim.links() == []


def test_adding_a_link_twice_raises_link_exists_and_changes_nothing(sim, driver_for, case):
    driver = driver_for(sim)
    driver.add_link(case.spec)
    before = sim.state()
    with pytest.raises(LinkExists):
        driver.add_link(case.spec)
    assert sim.state() == before
    assert driver.is_alive()


def test_removing_an_absent_link_raises_link_absent(sim, driver_for, case):
    driver = driver_for(sim)
    spec = case.spec
    with pytest.raises(LinkAbsent):
        driver.remove_link(spec)
    driver.add_link(spec)
    with pytest.raises(LinkAbsent):
        driver.remove_link(LinkSpec(spec.port, 9, spec.remote_ip))
    with pytest.raises(LinkAbsent):
        driver.remove_link(LinkSpec(spec.port, spec.zone, case.other_remote))
    assert sim.links() == [case.link]


@pytest.mark.parametrize("platform, spec, field", REFUSED, ids=[f"{p}-{f}" for p, _, f in REFUSED])
def test_arguments_a_platform_cannot_take_are_refused_before_anything_is_sent(sim, driver_for, spec, field):
    driver = driver_for(sim)
    driver.take_transcript()
    with pytest.raises(ValueError, match=f"^{field}:"):
        driver.add_link(spec)
    assert driver.take_transcript() == ""
    assert sim.links() == []


def test_wrong_credentials_raise_router_auth_error(sim, sim_target):
    driver = get_driver(sim_target(sim, password="not-it"))
    with pytest.raises(RouterAuthError) as caught:
        driver.connect()
    assert "not-it" not in str(caught.value) + caught.value.transcript


def test_nothing_listening_raises_router_connect_error(sim, sim_target):
    target = sim_target(sim)
    sim.stop()
    with pytest.raises(RouterConnectError):
        get_driver(target).connect()


def test_a_session_is_reused_and_closed(sim, driver_for, case):
    driver = driver_for(sim)
    assert driver.is_alive()
    driver.add_link(case.spec)
    driver.list_links()
    assert sim.active_sessions() == 1
    driver.close()
    assert not driver.is_alive()
    # Closed means the device has ended the session: a login right after it (another process taking
    # the session budget's slot) is not counted beside this one. Before, the device still held it.
    assert sim.active_sessions() == 0


def test_the_transcript_is_masked_and_router_seconds_are_counted(sim_factory, driver_for, platform, case):
    sim = sim_factory(platform, scale=0.05, **{case.transport.value: ("127.0.0.1", 0)})
    driver = driver_for(sim)
    driver.add_link(case.spec)
    transcript = driver.take_transcript()
    assert PASSWORD not in transcript
    assert case.add[0] in transcript
    assert driver.take_router_seconds() >= sim.think_seconds > 0  # the device's think time is router time
    assert driver.take_router_seconds() == 0.0
    assert driver.take_transcript() == ""


def test_a_long_lived_session_keeps_only_the_transcript_not_yet_taken(sim, driver_for, case):
    driver = driver_for(sim)
    driver.take_transcript()
    left_over = []
    for _ in range(20):
        driver.run(case.probe)
        assert driver.take_transcript().count(case.probe) == 1  # this call's command, once
        left_over.append(driver._log.getbuffer().nbytes)  # the session log netmiko writes into
    assert left_over == [0] * 20
    driver.add_link(case.spec)
    transcript = driver.take_transcript()
    assert case.add[0] in transcript and case.probe not in transcript


def test_a_deadline_shortens_every_wait_and_a_passed_one_sends_nothing(sim, driver_for, case):
    driver = driver_for(sim, command_timeout=60.0)
    driver.take_transcript()
    driver.deadline = time.monotonic() - 1
    with pytest.raises(RouterTimeout, match="time limit"):
        driver.add_link(case.spec)
    assert driver.take_transcript() == "" and sim.links() == []
    sim.add_fault("stall_command")
    driver.deadline = time.monotonic() + 0.5
    started = time.monotonic()
    with pytest.raises(RouterTimeout):
        driver.list_links()
    assert time.monotonic() - started < 30  # the deadline, not the 60 s command timeout, ended the wait


def test_links_survive_a_simulator_restart(sim_process_factory, sim_target, tmp_path, platform, case):
    state_dir = tmp_path / "state"
    address = {case.transport.value: "127.0.0.1:0"}
    first = sim_process_factory(platform, state_dir=state_dir, **address)
    with get_driver(sim_target(first, case.transport.value, platform=platform)) as driver:
        driver.add_link(case.spec)
        driver.save_config()
    first.stop()
    second = sim_process_factory(platform, state_dir=state_dir, **address)
    with get_driver(sim_target(second, case.transport.value, platform=platform)) as driver:
        assert driver.list_links() == [case.link]


@pytest.mark.slow
def test_at_the_devices_own_timing_the_driver_waits_it_out_and_counts_it_as_router_time(
        sim_factory, driver_for, platform, case):
    # What the device makes a client wait is the simulator's served think time, not the wall clock;
    # what it comes to on the clock is python -m bench routers' figure.
    sim = sim_factory(platform, scale=1.0, **{case.transport.value: ("127.0.0.1", 0)})
    driver = driver_for(sim, connect_timeout=30.0, command_timeout=30.0)
    assert driver.list_links() == []
    assert driver.take_router_seconds() >= sim.think_seconds > 0

"""The Cisco MDS driver against the MDS simulator over real SSH sessions, and a stock netmiko client."""

from __future__ import annotations

import re
import time

import pytest
from netmiko import ConnectHandler

from routers.drivers import DRIVERS, get_driver
from routers.drivers.base import (
    CommandRejected,
    LinkAbsent,
    LinkExists,
    LinkSpec,
    Platform,
    RouterConnectError,
    RouterLink,
)
from routers.drivers.cisco_mds import CiscoMdsDriver
from routers.sim.faults import Fault

from .conftest import PASSWORD, USERNAME

WWN = "50:00:09:73:98:06:c8:08"
HOST = "10:00:00:10:9b:5e:b0:01"
SPEC = LinkSpec(port=5, zone=7, remote_ip="198.18.1.1", local_ip="198.18.0.1", wwn=WWN, initiators=(HOST,))
OTHER_ZONE = LinkSpec(port=5, zone=8, remote_ip="198.18.1.1", local_ip="198.18.0.1", wwn="10:00:00:00:c9:aa:bb:02",
                      initiators=(HOST,))
ZONE = "fz_z7_fcip5_100000109b5eb001_500009739806c808"


@pytest.fixture
def mds(sim_factory):
    return sim_factory("cisco_mds", ssh=("127.0.0.1", 0))


def stock_session(sim):
    host, port = sim.addresses["ssh"]
    return ConnectHandler(device_type="cisco_nxos", host=host, port=port, username=USERNAME, password=PASSWORD,
                          allow_agent=False, use_keys=False, ssh_config_file=None, conn_timeout=10)


def test_the_dispatch_map_has_the_mds_driver():
    assert DRIVERS[Platform.CISCO_MDS] is CiscoMdsDriver


def test_rendering_is_pure_and_exact():
    assert CiscoMdsDriver.render_add(SPEC) == [
        "configure terminal",
        "feature fcip",
        "fcip profile 5",
        "ip address 198.18.0.1",
        "interface fcip 5",
        "switchport description flexzone",
        "use-profile 5",
        "peer-info ipaddr 198.18.1.1",
        "no shutdown",
        f"zone name {ZONE} vsan 1",
        f"member pwwn {HOST}",
        f"member pwwn {WWN}",
        "zoneset name <active zoneset> vsan 1",
        f"member {ZONE}",
        "zoneset activate name <active zoneset> vsan 1",
        "end",
    ]
    assert CiscoMdsDriver.render_remove(SPEC) == [
        "configure terminal",
        "zoneset name <active zoneset> vsan 1",
        f"no member {ZONE}",
        f"no zone name {ZONE} vsan 1",
        "zoneset activate name <active zoneset> vsan 1",
        "no interface fcip 5",
        "no fcip profile 5",
        "end",
    ]
    in_vsan_10 = LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,), vsan=10)
    assert f"zone name {ZONE} vsan 10" in CiscoMdsDriver.render_add(in_vsan_10)
    assert any("zone commit vsan 10" in note for note in CiscoMdsDriver.render_notes("add", in_vsan_10))


@pytest.mark.parametrize("spec, field", [
    (LinkSpec(0, 7, "198.18.1.1", "198.18.0.1", WWN), "port"),
    (LinkSpec(256, 7, "198.18.1.1", "198.18.0.1", WWN), "port"),
    (LinkSpec(5, 7, "2001:db8::2", "2001:db8::1", WWN), "remote_ip"),
    (LinkSpec(5, 7, "198.18.1.1", None, WWN, (HOST,)), "local_ip"),
    (LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", None, (HOST,)), "wwn"),
    (LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", WWN), "initiators"),
    (LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,), vsan=2), "vsan"),
])
def test_invalid_arguments_are_refused_before_anything_is_sent(mds, driver_for, spec, field):
    driver = driver_for(mds)
    driver.take_transcript()
    with pytest.raises(ValueError, match=f"^{field}:"):
        driver.add_link(spec)
    assert driver.take_transcript() == ""
    assert mds.state().running["interfaces"] == {}


def test_a_link_is_added_listed_and_removed(mds, driver_for):
    driver = driver_for(mds)
    assert driver.list_links() == []
    driver.add_link(SPEC)
    assert driver.list_links() == [RouterLink(5, 7, "198.18.1.1", "up")]
    assert mds.links() == [RouterLink(5, 7, "198.18.1.1", "up")]
    transcript = driver.take_transcript()
    assert "mds-dir1(config-if)# peer-info ipaddr 198.18.1.1" in transcript
    assert "mds-dir1(config-zone)# " in transcript
    assert PASSWORD not in transcript
    driver.remove_link(SPEC)
    assert driver.list_links() == []
    state = mds.state().running
    assert state["interfaces"] == {} and state["profiles"] == {}
    assert state["zones"]["1"] == {}


def test_adding_a_link_twice_raises_link_exists_and_changes_nothing(mds, driver_for):
    driver = driver_for(mds)
    driver.add_link(SPEC)
    before = mds.state()
    with pytest.raises(LinkExists):
        driver.add_link(SPEC)
    assert mds.state() == before


def test_removing_an_absent_link_raises_link_absent(mds, driver_for):
    driver = driver_for(mds)
    with pytest.raises(LinkAbsent):
        driver.remove_link(SPEC)
    driver.add_link(SPEC)
    with pytest.raises(LinkAbsent):
        driver.remove_link(LinkSpec(5, 9, "198.18.1.1"))
    with pytest.raises(LinkAbsent):
        driver.remove_link(LinkSpec(5, 7, "198.18.1.99"))
    assert mds.links() == [RouterLink(5, 7, "198.18.1.1", "up")]


def test_zones_to_one_gateway_share_the_interface_until_the_last_is_removed(mds, driver_for):
    driver = driver_for(mds)
    driver.add_link(SPEC)
    driver.add_link(OTHER_ZONE)
    assert [link.key for link in driver.list_links()] == [SPEC.key, OTHER_ZONE.key]
    driver.remove_link(SPEC)
    assert [link.key for link in driver.list_links()] == [OTHER_ZONE.key]
    assert list(mds.state().running["interfaces"]) == ["5"]
    driver.remove_link(OTHER_ZONE)
    assert mds.state().running["interfaces"] == {}


def test_a_second_gateway_on_an_occupied_interface_is_rejected(mds, driver_for):
    driver = driver_for(mds)
    driver.add_link(SPEC)
    with pytest.raises(CommandRejected, match="already peers with 198.18.1.1") as caught:
        driver.add_link(LinkSpec(5, 8, "198.18.2.2", "198.18.0.1", "10:00:00:00:c9:aa:bb:02", (HOST,)))
    assert not isinstance(caught.value, LinkExists)


def test_an_invalid_config_line_is_rejected_with_the_caret_message_and_the_session_survives(mds, driver_for):
    driver = driver_for(mds)
    with pytest.raises(CommandRejected) as caught:
        driver.configure(["configure terminal", "fcip profile 5", "end"])  # feature fcip is still off
    assert caught.value.router_message == "% Invalid command at '^' marker."
    assert driver.list_links() == []
    assert "Interface  Vsan" in driver.run("show interface brief")


def test_save_config_copies_running_to_startup(mds, driver_for):
    driver = driver_for(mds)
    driver.add_link(SPEC)
    assert "interface fcip5" not in driver.run("show startup-config")
    driver.save_config()
    assert "interface fcip5" in driver.run("show startup-config")


def test_an_add_whose_reply_was_lost_counts_as_done_on_retry(sim_factory, driver_for):
    mds = sim_factory("cisco_mds", ssh=("127.0.0.1", 0),
                      faults=[Fault("drop_after_apply", match="^zoneset activate", count=1)])
    with pytest.raises(RouterConnectError):
        driver_for(mds).add_link(SPEC)
    assert mds.links() == [RouterLink(5, 7, "198.18.1.1", "up")]
    with pytest.raises(LinkExists):
        driver_for(mds).add_link(SPEC)


def test_a_half_done_add_is_completed_by_the_retry(sim_factory, driver_for):
    mds = sim_factory("cisco_mds", ssh=("127.0.0.1", 0),
                      faults=[Fault("drop_before_apply", match="^zone name", count=1)])
    with pytest.raises(RouterConnectError):
        driver_for(mds).add_link(SPEC)
    assert mds.links() == []
    driver_for(mds).add_link(SPEC)
    assert mds.links() == [RouterLink(5, 7, "198.18.1.1", "up")]


def test_stock_netmiko_cisco_nxos_runs_show_interface_brief(mds, driver_for):
    driver_for(mds).add_link(SPEC)
    conn = stock_session(mds)
    try:
        assert conn.base_prompt == "mds-dir1"
        output = conn.send_command("show interface brief")
        assert "Interface  Vsan   Admin  Admin   Status       SFP    Oper  Oper   Port     Logical" in output
        assert re.search(r"^fcip5\s+1\s+auto\s+on\s+trunking\s+TE\s+5\s+--$", output, re.M)
        assert conn.send_command("show interface brief | no-more") == output
        assert "Peer Internet address is 198.18.1.1" in conn.send_command("show interface fcip 5")
        assert "198.18.0.1" in conn.send_command("show fcip profile")
        assert f"zone name {ZONE} vsan 1" in conn.send_command("show zoneset active vsan 1")
        bad = conn.send_command("show frobnicate")
        assert bad.splitlines()[-1] == "% Invalid command at '^' marker."
        assert bad.splitlines()[0].strip() == "^"
        output = conn.send_config_set(["interface fcip 6", "use-profile 5"])
        assert "mds-dir1(config-if)#" in output
        assert conn.check_config_mode() is False
    finally:
        conn.disconnect()


def test_the_driver_also_works_over_telnet_where_the_switch_allows_it(sim_factory, driver_for):
    mds = sim_factory("cisco_mds", telnet=("127.0.0.1", 0))
    driver = driver_for(mds, "telnet")
    driver.add_link(SPEC)
    assert driver.list_links() == [RouterLink(5, 7, "198.18.1.1", "up")]


def test_links_survive_a_simulator_restart(sim_process_factory, sim_target, tmp_path):
    state_dir = tmp_path / "mds-state"
    first = sim_process_factory("cisco_mds", state_dir=state_dir, ssh="127.0.0.1:0")
    with get_driver(sim_target(first, "ssh", platform="cisco_mds")) as driver:
        driver.add_link(SPEC)
        driver.save_config()
    first.stop()
    second = sim_process_factory("cisco_mds", state_dir=state_dir, ssh="127.0.0.1:0")
    with get_driver(sim_target(second, "ssh", platform="cisco_mds")) as driver:
        assert driver.list_links() == [RouterLink(5, 7, "198.18.1.1", "up")]
        assert "interface fcip5" in driver.run("show startup-config")


@pytest.mark.slow
def test_default_timing_gives_a_plausible_ssh_login_and_command_latency(sim_factory, driver_for):
    mds = sim_factory("cisco_mds", ssh=("127.0.0.1", 0), scale=1.0)
    start = time.monotonic()
    driver = driver_for(mds, command_timeout=10.0)
    login = time.monotonic() - start
    start = time.monotonic()
    driver.list_links()
    listing = time.monotonic() - start
    assert 1.0 < login < 5.0
    assert 0.05 < listing < 3.0

"""The Cisco MDS driver against the MDS simulator over real SSH sessions, and a stock netmiko client: what
NX-OS asks and answers beyond the driver contract (test_contract.py)."""

from __future__ import annotations

import re

import pytest
from netmiko import ConnectHandler

from routers.drivers.base import (
    CommandRejected,
    LinkExists,
    LinkSpec,
    RouterConnectError,
    RouterLink,
)
from routers.drivers.cisco_mds import CiscoMdsDriver
from simulators.faults import Fault
from tests.support.sims import PASSWORD, USERNAME

WWN = "50:00:09:73:98:06:c8:08"
HOST = "10:00:00:10:9b:5e:b0:01"
SPEC = LinkSpec(port=5, zone=7, remote_ip="198.18.1.1", local_ip="198.18.0.1", wwn=WWN, initiators=(HOST,))
ZONE = "fz_z7_fcip5_100000109b5eb001_500009739806c808"


def stock_session(sim):
    host, port = sim.addresses["ssh"]
    return ConnectHandler(device_type="cisco_nxos", host=host, port=port, username=USERNAME, password=PASSWORD,
                          allow_agent=False, use_keys=False, ssh_config_file=None, conn_timeout=10)


def test_rendering_names_the_routers_vsan_and_the_commit_of_enhanced_mode():
    in_vsan_10 = LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST,), vsan=10)
    assert f"zone name {ZONE} vsan 10" in CiscoMdsDriver.render_add(in_vsan_10)
    assert any("zone commit vsan 10" in note for note in CiscoMdsDriver.render_notes("add", in_vsan_10))


def test_an_add_configures_the_interface_and_zones_and_a_remove_leaves_nothing_behind(mds, driver_for):
    driver = driver_for(mds)
    driver.add_link(SPEC)
    transcript = driver.take_transcript()
    assert "mds-dir1(config-if)# peer-info ipaddr 198.18.1.1" in transcript
    assert "mds-dir1(config-zone)# " in transcript
    driver.remove_link(SPEC)
    state = mds.state().running
    assert state["interfaces"] == {} and state["profiles"] == {}
    assert state["zones"]["1"] == {}


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



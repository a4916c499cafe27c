"""The Cisco MDS personality as a state machine, driven through execute() with a recording console.

The console double stands in for the transport only; over-the-wire behaviour (and a stock netmiko
cisco_nxos session) is covered by the Cisco MDS driver tests.
"""

import asyncio
import re

import pytest

from simulators.cisco_mds import MdsPersonality
from simulators.personality import Session, SimState
from tests.support.recording_console import RecordingConsole


@pytest.fixture
def mds():
    return MdsPersonality(SimState(), "mds1")


@pytest.fixture
def session():
    """A session after `terminal length 0`, as every automated client starts."""
    return Session(username="admin", transport="ssh", paging=False, id=1)


def run(mds, session, line, **console_args):
    console = RecordingConsole(pager_prompt=mds.pager_prompt, **console_args)
    console.keep = asyncio.run(mds.execute(session, console, line))
    console.prompt_after = mds.prompt(session)
    return console


def script(mds, session, lines):
    outputs = [run(mds, session, line).text for line in lines]
    return "".join(outputs)


FCIP_LINK = [
    "configure terminal",
    "feature fcip",
    "fcip profile 5",
    "ip address 198.18.0.1",
    "interface fcip 5",
    "switchport description flexzone",
    "use-profile 5",
    "peer-info ipaddr 198.18.1.1",
    "no shutdown",
    "zone name fz_z7_fcip5 vsan 1",
    "member pwwn 10:00:00:00:c9:aa:bb:01",
    "zoneset name fz_zoneset vsan 1",
    "member fz_z7_fcip5",
    "zoneset activate name fz_zoneset vsan 1",
    "end",
]


def test_prompts_follow_the_configuration_mode(mds, session):
    assert mds.prompt(session) == "mds1# "
    assert run(mds, session, "configure terminal").prompt_after == "mds1(config)# "
    run(mds, session, "feature fcip")
    assert run(mds, session, "fcip profile 5").prompt_after == "mds1(config-profile)# "
    assert run(mds, session, "interface fcip 5").prompt_after == "mds1(config-if)# "
    assert run(mds, session, "zone name z1 vsan 1").prompt_after == "mds1(config-zone)# "
    assert run(mds, session, "zoneset name zs1 vsan 1").prompt_after == "mds1(config-zoneset)# "
    assert run(mds, session, "exit").prompt_after == "mds1(config)# "
    assert run(mds, session, "zone name z1 vsan 1").prompt_after == "mds1(config-zone)# "
    assert run(mds, session, "end").prompt_after == "mds1# "


def test_abbreviated_keywords_are_accepted(mds, session):
    assert run(mds, session, "conf t").prompt_after == "mds1(config)# "
    run(mds, session, "end")
    assert "Interface  Vsan" in run(mds, session, "sh int br").text


def test_invalid_command_puts_a_caret_under_the_bad_word(mds, session):
    text = run(mds, session, "show frobnicate").text
    assert text == " " * len("mds1# show ") + "^\n% Invalid command at '^' marker.\n"


def test_incomplete_command_is_reported_at_the_end_of_the_line(mds, session):
    run(mds, session, "configure terminal")
    text = run(mds, session, "zone name z1").text
    assert text.endswith("^\n% Incomplete command at '^' marker.\n")


def test_fcip_commands_do_not_exist_until_the_feature_is_enabled(mds, session):
    run(mds, session, "configure terminal")
    text = run(mds, session, "fcip profile 5").text
    assert text == " " * len("mds1(config)# ") + "^\n% Invalid command at '^' marker.\n"
    run(mds, session, "feature fcip")
    assert run(mds, session, "fcip profile 5").text == ""


def test_out_of_range_numbers_and_reserved_vsans_are_invalid(mds, session):
    run(mds, session, "configure terminal")
    run(mds, session, "feature fcip")
    assert "% Invalid number at '^' marker." in run(mds, session, "fcip profile 300").text
    assert "% Invalid number at '^' marker." in run(mds, session, "zone name z1 vsan 4095").text
    assert "% Invalid number at '^' marker." in run(mds, session, "zone name z1 vsan 4079").text


def test_an_fcip_link_is_configured_and_read_back(mds, session):
    assert script(mds, session, FCIP_LINK) == ("Enter configuration commands, one per line. End with CNTL/Z.\n"
                                               "Zoneset activation initiated. check zone status\n")
    assert [(link.port, link.zone, link.remote_ip, link.state) for link in mds.links()] == [
        (5, 7, "198.18.1.1", "up")]
    brief = run(mds, session, "show interface brief | no-more").text
    assert "\nfcip5              1      auto   on      trunking    TE    5        --\n" in brief
    detail = run(mds, session, "show interface fcip 5").text
    assert detail.startswith("fcip5 is trunking\n")
    assert "      Peer Internet address is 198.18.1.1 and port is 3225\n" in detail
    assert "    Using Profile id 5  (interface IPStorage1/1)\n" in detail
    profiles = run(mds, session, "show fcip profile").text
    assert "5               198.18.0.1      3225\n" in profiles
    config = run(mds, session, "show running-config").text
    block = ("interface fcip5\n  switchport description flexzone\n  use-profile 5\n  peer-info ipaddr 198.18.1.1\n"
             "  no shutdown\n")
    assert block in config


def test_a_shut_interface_is_administratively_down(mds, session):
    script(mds, session, FCIP_LINK)
    script(mds, session, ["conf t", "interface fcip5", "shutdown", "end"])
    assert run(mds, session, "show interface fcip 5").text.startswith("fcip5 is down (Administratively down)\n")
    assert [link.state for link in mds.links()] == ["down"]


def test_no_interface_removes_the_link(mds, session):
    script(mds, session, FCIP_LINK)
    script(mds, session, ["configure terminal", "no interface fcip 5", "no fcip profile 5", "end"])
    assert mds.links() == []
    assert mds.running["profiles"] == {}


def test_a_profile_in_use_cannot_be_removed(mds, session):
    script(mds, session, FCIP_LINK)
    text = script(mds, session, ["configure terminal", "no fcip profile 5"])
    assert "fcip profile 5 is in use by interface fcip5" in text


def test_zoning_in_a_vsan_and_activation(mds, session):
    script(mds, session, [
        "configure terminal",
        "zone name fz_z7_fcip5 vsan 1",
        "member pwwn 50:00:09:73:98:06:C8:08",
        "zoneset name fz_zoneset vsan 1",
        "member fz_z7_fcip5",
    ])
    assert run(mds, session, "zoneset activate name fz_zoneset vsan 1").text == (
        "Zoneset activation initiated. check zone status\n")
    run(mds, session, "end")
    active = run(mds, session, "show zoneset active vsan 1").text
    assert active == ("zoneset name fz_zoneset vsan 1\n  zone name fz_z7_fcip5 vsan 1\n"
                      "    pwwn 50:00:09:73:98:06:c8:08\n")
    config = run(mds, session, "show running-config").text
    assert "zoneset activate name fz_zoneset vsan 1\n" in config
    assert "!Full Zone Database Section for vsan 1\n" in config


def test_terminal_length_zero_turns_the_pager_off(mds, session):
    script(mds, session, ["configure terminal", "feature fcip"]
           + [f"interface fcip {n}" for n in range(1, 40)] + ["end", "terminal length 24"])
    paged = run(mds, session, "show interface brief", pager_answers=[""] * 5).text
    assert " --More-- " in paged
    run(mds, session, "terminal length 0")
    assert run(mds, session, "terminal width 511").text == ""
    assert " --More-- " not in run(mds, session, "show interface brief").text


def test_include_pipe_filters_lines(mds, session):
    script(mds, session, FCIP_LINK)
    text = run(mds, session, "show running-config | include peer-info").text
    assert text == "  peer-info ipaddr 198.18.1.1\n"


def test_copy_running_config_saves_the_startup_config(mds, session):
    script(mds, session, FCIP_LINK)
    assert mds.state.saved == {}
    text = run(mds, session, "copy running-config startup-config").text
    assert text.endswith("Copy complete.\n")
    assert mds.state.saved["interfaces"]["5"]["peer"] == "198.18.1.1"
    script(mds, session, ["conf t", "no interface fcip5", "end"])
    assert "interface fcip5" in run(mds, session, "show startup-config").text
    assert "interface fcip5" not in run(mds, session, "show running-config").text


def test_exit_from_exec_mode_ends_the_session(mds, session):
    assert run(mds, session, "exit").keep is False


def test_mutating_lines_are_classified(mds, session):
    assert not mds.is_mutating(session, "show interface brief")
    assert mds.is_mutating(session, "copy running-config startup-config")
    session.modes = ["config"]
    assert mds.is_mutating(session, "interface fcip 5")
    assert not mds.is_mutating(session, "end")


def test_fcip_summary_and_zone_status_describe_the_link(mds, session):
    script(mds, session, FCIP_LINK)
    summary = run(mds, session, "show fcip summary").text
    assert "\n5   5     IPS1/1            198.18.1.1       TRNK   " in summary
    status = run(mds, session, "show zone status vsan 1").text
    assert status.startswith("VSAN: 1 default-zone: deny distribute: active only Interop: default\n"
                             "    mode: basic merge-control: allow\n    session:  none\n")
    assert "Active Zoning Database :\n    DB Size: " in status
    assert "    Name: fz_zoneset Zonesets: 1 Zones: 1\n" in status
    assert re.search(r"^Status: Activation completed at \d\d:\d\d:\d\d UTC \w{3} [ \d]\d \d{4}$", status, re.M)

"""The Cisco MDS simulator prints what real NX-OS switches print: the zone, zoneset, fcalias and
device-alias views, the active zoneset with its logged-in members, the running-config around the zoning
and FCIP parts, and ``show interface fcipN``.

The layouts are those of public captures (cisco.nxos fixtures, a Nexus 5548, a dCloud MDS session and
a real MDS 9148S running-config); the simulator fills them with its own data.
"""

from __future__ import annotations

import re

import pytest

from simulators.cisco_mds import MdsPersonality
from simulators.personality import SimState
from tests.support.recording_console import Login

HOST, ARRAY, TAPE = "10:00:00:10:9b:5e:b0:01", "50:00:09:72:08:1a:f1:04", "50:01:04:f0:00:a1:b2:99"
BUSY = "Lock is currently busy\n"
CREATED = "Enhanced zone session has been created. Please 'commit' the changes when done.\n"


@pytest.fixture
def mds():
    return MdsPersonality(SimState(), "mds1")


@pytest.fixture
def me(mds):
    cli = Login(mds, 1, paging=False)
    cli("terminal dont-ask")
    return cli


def aliases(cli, *pairs):
    """Device-aliases name=pwwn, committed."""
    cli.script(["configure terminal", "device-alias database",
                *(f"device-alias name {name} pwwn {wwn}" for name, wwn in pairs), "device-alias commit", "end"])


def mixed_zone(cli):
    """Zone z_mixed: a pwwn with a device-alias, a device-alias member and an fcalias of two members."""
    aliases(cli, ("hostA", HOST))
    cli.script(["configure terminal", "fcalias name arrayA vsan 1", f"member pwwn {ARRAY}", f"member pwwn {TAPE}",
                "exit", "zone name z_mixed vsan 1", f"member pwwn {HOST}", "member device-alias hostB",
                "member fcalias arrayA", "exit", "zone name z_plain vsan 1", f"member pwwn {TAPE}", "exit",
                "zoneset name PROD vsan 1", "member z_mixed", "member z_plain", "exit", "end"])


# --- full database views ------------------------------------------------------------------------------


def test_show_zone_prints_members_without_the_word_member_and_fcaliases_as_blocks(me):
    mixed_zone(me)
    assert me("show zone vsan 1").text == (
        "zone name z_mixed vsan 1\n"
        f"  pwwn {HOST} [hostA]\n"
        "  device-alias hostB\n"
        "  fcalias name arrayA vsan 1\n"
        f"    pwwn {ARRAY}\n"
        f"    pwwn {TAPE}\n"
        "\n"
        "zone name z_plain vsan 1\n"
        f"  pwwn {TAPE}\n")


def test_show_zone_says_zone_not_present_when_the_vsan_has_none(me):
    mixed_zone(me)
    assert me("show zone vsan 10").text == "Zone not present\n"
    assert me("show zone name z_plain vsan 1").text == f"zone name z_plain vsan 1\n  pwwn {TAPE}\n"


def test_show_zoneset_nests_zones_and_fcalias_members_two_spaces_deeper(me):
    mixed_zone(me)
    assert me("show zoneset vsan 1").text == (
        "zoneset name PROD vsan 1\n"
        "  zone name z_mixed vsan 1\n"
        f"    pwwn {HOST} [hostA]\n"
        "    device-alias hostB\n"
        "    fcalias name arrayA vsan 1\n"
        f"      pwwn {ARRAY}\n"
        f"      pwwn {TAPE}\n"
        "\n"
        "  zone name z_plain vsan 1\n"
        f"    pwwn {TAPE}\n")
    assert me("show zoneset vsan 2").text == "Zoneset not present\n"


def test_show_zoneset_brief_lists_the_zone_names_of_each_zoneset(me):
    mixed_zone(me)
    assert me("show zoneset brief vsan 1").text == "zoneset name PROD vsan 1\n  zone z_mixed\n  zone z_plain\n"
    assert me("show zoneset brief active vsan 1").text == "Zoneset not present\n"
    assert me("show zoneset brief vsan 7").text == "Zoneset not present\n"


def test_show_fcalias_lists_each_alias_with_its_members(me):
    mixed_zone(me)
    me.script(["configure terminal", "fcalias name hostsB vsan 1", "member device-alias hostB", "end"])
    assert me("show fcalias vsan 1").text == (
        f"fcalias name arrayA vsan 1\n  pwwn {ARRAY}\n  pwwn {TAPE}\n\n"
        "fcalias name hostsB vsan 1\n  device-alias hostB\n")
    assert me("show fcalias name hostsB vsan 1").text == "fcalias name hostsB vsan 1\n  device-alias hostB\n"


# --- fcalias configuration --------------------------------------------------------------------------


def test_fcalias_has_its_own_mode_and_members_are_added_and_removed(mds, me):
    me("configure terminal")
    assert me("fcalias name arrayA vsan 1").prompt_after == "mds1(config-fcalias)# "
    me(f"member pwwn {ARRAY.upper()}")
    me("member device-alias hostB")
    assert mds.running["fcaliases"]["1"]["arrayA"] == [ARRAY, "device-alias hostB"]
    assert me("no member device-alias hostC").text == (
        'Fcalias member "device-alias hostC" not present in fcalias "arrayA"\n')
    me("no member device-alias hostB")
    assert me("exit").prompt_after == "mds1(config)# "
    assert "Aliases: 1" in me("show zone status vsan 1").text
    me("no fcalias name arrayA vsan 1")
    assert mds.running["fcaliases"]["1"] == {}
    assert me("no fcalias name arrayA vsan 1").text == 'Alias "arrayA" not present\n'


def test_a_zone_cannot_name_an_fcalias_that_does_not_exist(mds, me):
    me.script(["configure terminal", "zone name z1 vsan 1"])
    assert me("member fcalias ghost").text == 'Alias "ghost" not present\n'
    assert mds.running["zones"]["1"]["z1"] == []


def test_activation_copies_fcalias_members_into_the_active_zoneset(mds, me):
    mixed_zone(me)
    me.script(["configure terminal", "zoneset activate name PROD vsan 1", "fcalias name arrayA vsan 1",
               f"no member pwwn {TAPE}", "end"])
    assert mds.running["active"]["1"]["zones"]["z_mixed"] == [HOST, "device-alias hostB", ARRAY, TAPE]
    assert "fcalias" not in me("show zoneset active vsan 1").text
    assert f"    pwwn {TAPE}\n" in me("show zoneset active vsan 1").text  # the alias changed, the copy did not


def test_fcalias_edits_in_enhanced_mode_go_to_the_pending_copy_under_the_lock(mds, me):
    me.script(["configure terminal", "zone mode enhanced vsan 1"])
    assert me("fcalias name arrayA vsan 1").text == CREATED
    me(f"member pwwn {ARRAY}")
    assert "arrayA" not in mds.running["fcaliases"].get("1", {})
    other = Login(mds, 2, "bob", paging=False)
    other("configure terminal")
    assert other("fcalias name arrayB vsan 1").text == BUSY
    assert other("fcalias name arrayB vsan 1").prompt_after == "mds1(config)# "
    me("zone commit vsan 1")
    assert mds.running["fcaliases"]["1"] == {"arrayA": [ARRAY]}


# --- device-alias database ---------------------------------------------------------------------------


def test_device_alias_changes_are_pending_until_device_alias_commit(mds, me):
    me("configure terminal")
    assert me("device-alias database").prompt_after == "mds1(config-device-alias-db)# "
    assert me(f"device-alias name hostA pwwn {HOST}").text == ""
    assert me("show device-alias database").text == "Total number of entries = 0\n"
    console = me("device-alias commit")
    assert (console.text, console.prompt_after) == ("", "mds1(config)# ")
    assert me("show device-alias database").text == (
        f"device-alias name hostA pwwn {HOST}\n\nTotal number of entries = 1\n")
    assert me("device-alias commit").text == "There are no pending changes\n"
    me.script(["device-alias database", "no device-alias name hostA", "device-alias abort"])
    assert mds.running["device_aliases"] == {"hostA": HOST}


def test_device_alias_names_and_pwwns_are_unique(me):
    aliases(me, ("hostA", HOST))
    me.script(["configure terminal", "device-alias database"])
    assert me(f"device-alias name hostA pwwn {ARRAY}").text == "Device Alias already present\n"
    assert me(f"device-alias name hostZ pwwn {HOST}").text == (
        "Another device-alias already present with the same pwwn\n")
    assert me("no device-alias name ghost").text == "Device Alias not present\n"


# --- the active zoneset ------------------------------------------------------------------------------


def test_logged_in_members_of_the_active_zoneset_show_their_fcid(mds, me):
    mixed_zone(me)
    aliases(me, ("hostB", "10:00:00:10:9b:5e:b0:02"))
    mds.running["logged_in"] = [HOST, ARRAY, "10:00:00:10:9b:5e:b0:02"]
    me.script(["configure terminal", "zoneset activate name PROD vsan 1", "end"])
    text = me("show zoneset active vsan 1").text
    fcid = r"0x1e[0-9a-f]{4}"
    assert re.fullmatch(
        "zoneset name PROD vsan 1\n"
        "  zone name z_mixed vsan 1\n"
        rf"  \* fcid {fcid} \[pwwn {HOST}\] \[hostA\]\n"
        rf"  \* fcid {fcid} \[device-alias hostB\]\n"
        rf"  \* fcid {fcid} \[pwwn {ARRAY}\]\n"
        f"    pwwn {TAPE}\n"
        "\n"
        "  zone name z_plain vsan 1\n"
        f"    pwwn {TAPE}\n", text), text
    first = re.search(rf"fcid ({fcid}) \[pwwn {HOST}", text).group(1)
    assert first in me("show running-config").text  # the same FCID in the fcdomain database
    assert re.search(rf"^ \* fcid {fcid} \[pwwn {HOST}\] \[hostA\]$", me("show zone active vsan 1").text, re.M)


def test_no_active_zoneset_is_zoneset_not_present(me):
    assert me("show zoneset active vsan 1").text == "Zoneset not present\n"
    assert me("show zone active").text == "Zone not present\n"


# --- running-config -------------------------------------------------------------------------------------


def test_the_running_config_carries_what_every_real_switch_has(me):
    text = me("show running-config").text
    assert text.startswith("\n!Command: show running-config\n!Running configuration last done at: ")
    assert re.search(r"^!Time: \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\n\nversion 9\.4\(2a\)\n", text, re.M)
    assert "rmon event 1 log trap public description FATAL(1) owner PMON@FATAL\n" in text
    assert "rmon event 5 log trap public description INFORMATION(5) owner PMON@INFO\n" in text
    assert re.search(r"^username admin password 5 \$5\$[./\w]{16}\$[./\w]{43}  role network-admin$", text, re.M)
    assert re.search(r"^snmp-server user admin network-admin auth md5 0x[0-9a-f]{32} priv aes-128 0x[0-9a-f]{32} "
                     r"localizedkey$", text, re.M)
    assert "\nsnmp-server community public group network-operator\n" in text
    assert "\n\n\n\ninterface mgmt0\n  ip address 192.0.2.10 255.255.255.0\nswitchname mds1\n" in text
    assert "boot system bootflash:/m9148-s6ek9-mz.9.4.2a.bin\ninterface fc1/1\ninterface fc1/2\n" in text
    assert "\ninterface fc1/1\n  port-license acquire\n  no shutdown\n\n" in text
    assert text.endswith("interface fc1/48\n  port-license acquire\nip default-gateway 192.0.2.1\n")
    assert len(text.splitlines()) > 150


def test_the_running_config_zone_sections_follow_the_real_order(mds, me):
    mixed_zone(me)
    mds.running["logged_in"] = [HOST]
    me.script(["configure terminal", "zoneset activate name PROD vsan 1", "end"])
    text = me("show running-config").text
    assert (f"device-alias database\n  device-alias name hostA pwwn {HOST}\n\ndevice-alias commit\n\n"
            f"fcdomain fcid database\n  vsan 1 wwn {HOST} fcid 0x1e") in text
    assert " dynamic\n    !        [hostA]\n" in text
    assert f"fcalias name arrayA vsan 1\n    member pwwn {ARRAY}\n    member pwwn {TAPE}\n\n" in text
    active = text.index("!Active Zone Database Section for vsan 1\n")
    full = text.index("!Full Zone Database Section for vsan 1\n")
    assert active < full
    assert text[active:full].endswith("zoneset activate name PROD vsan 1\ndo clear zone database vsan 1\n")
    assert (f"zone name z_mixed vsan 1\n    member pwwn {HOST}\n    member device-alias hostB\n"
            f"    member pwwn {ARRAY}\n    member pwwn {TAPE}\n\n") in text[active:full]
    assert ("zone name z_mixed vsan 1\n    member pwwn 10:00:00:10:9b:5e:b0:01\n    member device-alias hostB\n"
            "    member fcalias arrayA\n\n") in text[full:]
    assert "zoneset name PROD vsan 1\n    member z_mixed\n    member z_plain\n\n\n\ninterface mgmt0\n" in text[full:]


def test_the_full_zone_section_is_left_out_when_the_full_database_is_empty(me):
    mixed_zone(me)
    me.script(["configure terminal", "zoneset activate name PROD vsan 1", "end", "clear zone database vsan 1"])
    text = me("show running-config").text
    assert "!Full Zone Database Section" not in text
    assert "do clear zone database vsan 1\n\n\n\ninterface mgmt0\n" in text


def test_the_startup_config_is_the_saved_state_in_the_same_layout(me):
    mixed_zone(me)
    me("copy running-config startup-config")
    me.script(["configure terminal", "no zone name z_plain vsan 1", "end"])
    startup = me("show startup-config").text
    assert startup.startswith("\n!Command: show startup-config\n!Time: ")
    assert "\n!Startup config saved at: " in startup
    assert "zone name z_plain vsan 1\n" in startup
    assert "zone name z_plain vsan 1\n" not in me("show running-config").text


def test_vsan_names_and_port_members_appear_where_the_device_writes_them(mds, me):
    me.script(["configure terminal", "vsan database", 'vsan 10 name "backup"', "vsan 10 interface fc1/7", "end"])
    text = me("show running-config").text
    assert 'vsan database\n  vsan 10 name "backup"\n' in text
    assert "  ip address 192.0.2.10 255.255.255.0\nvsan database\n  vsan 10 interface fc1/7\nswitchname" in text
    assert re.search(r"^fc1/7      10     auto", me("show interface brief").text, re.M)
    me.script(["configure terminal", "vsan database", "vsan 1 interface fc1/7", "end"])
    assert mds.running["vsans"]["10"] == {"name": "backup", "interfaces": []}


# --- FCIP ------------------------------------------------------------------------------------------------

FCIP = ["configure terminal", "feature fcip", "fcip profile 5", "ip address 198.18.0.1", "interface fcip5",
        "switchport description flexzone", "use-profile 5", "peer-info ipaddr 198.18.1.1", "no shutdown", "end"]


def test_show_running_config_fcip_holds_only_the_fcip_part(me):
    text = me("show running-config fcip").text
    assert re.fullmatch(r"\n!Command: show running-config fcip\n!Running configuration last done at: .+\n"
                        r"!Time: .+\n\nversion 9\.4\(2a\)\n", text)
    me.script(FCIP)
    text = me("show running-config fcip").text
    assert text.endswith("\nversion 9.4(2a)\nfeature fcip\n\nfcip profile 5\n  ip address 198.18.0.1\n\n"
                         "interface fcip5\n  switchport description flexzone\n  use-profile 5\n"
                         "  peer-info ipaddr 198.18.1.1\n  no shutdown\n")
    assert "\ninterface fcip5\n  switchport description flexzone\n" in me("show running-config interface fcip5").text
    blocks = text.split("feature fcip\n\n")[1]
    assert me("show running-config").text.endswith(
        f"interface fc1/48\n  port-license acquire\n\n{blocks}ip default-gateway 192.0.2.1\n")


def test_show_interface_fcip_takes_the_number_with_or_without_a_space(me):
    me.script(FCIP)
    assert me("show interface fcip5").text == me("show interface fcip 5").text
    assert me("show interface fcip5").text.startswith("fcip5 is trunking\n")
    assert "% Invalid interface format at '^' marker." in me("show interface fcip6").text

"""The simulators print the layouts of real switches: set up the state a real-layout fixture shows (the
fixtures in tests/support/real_layouts/ name the public capture of each), run the command, and
the simulator's reply is the fixture, byte for byte. What the parsers accept beyond these (older
releases, odd placements) is tested on the fixtures alone."""

from __future__ import annotations

import re

import pytest

from simulators.brocade_fos import FosPersonality
from simulators.cisco_mds import MdsPersonality
from simulators.cisco_mds.fabric import log_in
from simulators.faults import Fault, FaultBook
from simulators.personality import SimState
from tests.support.real_layouts import body_of
from tests.support.recording_console import Login


@pytest.fixture
def fos():
    return FosPersonality(SimState(), "fos-ext1")


def shown(login, command):
    """The whole reply, however many pages (the test answers every pager prompt)."""
    return login(command, pager_answers=[""] * 50).text.replace("Type <CR> to continue, Q<CR> to stop: ", "")


def configure(login, *commands, answers=()):
    for command in commands:
        console = login(command, answers=list(answers))
        assert "Operation Succeeded" in console.text or console.text == "" or console.questions, console.text


def test_fos_cfgshow_prints_aliases_sorted_wrapped_and_resolved_as_fos_9(fos):
    admin = Login(fos)
    body = body_of("fos/cfgshow__fos9_aliases_wrapped.txt")
    aliases = [line for line in body.splitlines() if line.startswith(" alias:")]
    wwns = [line.strip() for line in body.splitlines() if line.startswith("\t\t50:") and line.endswith(" ")]
    for alias, wwn in zip(aliases, wwns, strict=True):
        configure(admin, f'alicreate "{alias.split()[1]}", "{wwn.upper()}"')  # FOS shows them in lower case
    dlm = [a.split()[1] for a in aliases if "DLM" in a]
    srdf = [a.split()[1] for a in aliases if "SRDF" in a]
    configure(admin, f'zonecreate "DRSITE_SRDF_0521_0526", "{"; ".join(reversed(srdf))}"',
              f'zonecreate "DRSITE_DLM_2001_2004", "{"; ".join(dlm)}"',
              'cfgcreate "DRS_A", "DRSITE_SRDF_0521_0526; DRSITE_DLM_2001_2004"')
    configure(admin, 'cfgenable "DRS_A"', answers=["y"])
    assert shown(admin, "cfgshow") == body


def test_fos_cfgshow_of_an_empty_fabric(fos):
    assert shown(Login(fos), "cfgshow") == body_of("fos/cfgshow__fos9_empty_fabric.txt")


def test_fos_cfgshow_of_a_zone_defined_with_nothing_in_effect(fos):
    admin = Login(fos)
    configure(admin, 'zonecreate "REPL_C_SRDF_0611_0617", "REPL_C_SRDF_0617_3_9; REPL_C_SRDF_0611_3_10; '
                     'REPL_C_SRDF_0611_3_9; REPL_C_SRDF_0617_3_10"')
    admin("cfgsave", answers=["y"])
    assert shown(admin, "cfgshow") == body_of("fos/cfgshow__fos9_defined_not_in_effect.txt")


def test_fos_cfgtransshow_with_nothing_open_and_with_another_sessions_transaction(fos):
    admin = Login(fos)
    assert admin("cfgtransshow").text == body_of("fos/cfgtransshow__none.txt")
    fos.faults = FaultBook([Fault("zoning_locked")])
    assert admin("cfgtransshow").text == body_of("fos/cfgtransshow__hex_token_not_abortable.txt")


def test_fos_tunnel_table_prints_the_columns_of_fos_9(fos):
    admin = Login(fos)
    configure(admin, "portcfg ipif ge2.dp0 create 198.18.0.1/24", "portcfg fciptunnel 24 create -d flexzone",
              "portcfg fcipcircuit 24 create 0 --local-ip 198.18.0.1 --remote-ip 198.18.1.1",
              "portcfg fciptunnel 26 create")
    assert shown(admin, "portshow fciptunnel all -c") == body_of("fos/portshow_fciptunnel_all_c__7840.txt")


# --- Cisco MDS ---------------------------------------------------------------------------------------
MDS_ALIASES = {"esx0101_f0": "c0:50:76:09:aa:20:00:64", "unity07_SPA1": "50:06:01:61:47:e4:aa:97",
               "sap0001_san01": "21:00:f4:e9:d4:aa:6e:66", "ntap01_c01_0a": "20:12:00:a0:98:fa:aa:6e",
               "ntap01_c01_0c": "20:32:00:a0:98:fa:aa:6e", "sap0002_san01": "21:00:f4:e9:d4:aa:a7:c8"}
MDS_ZONES = {"z50_esx0101_f0_unity07_spa1": ["pwwn c0:50:76:09:aa:20:00:64", "pwwn 50:06:01:61:47:e4:aa:97"],
             "z50_sap0001_san01-ntap01_0ac": ["fcalias sap0001_san01", "fcalias ntap01_c01_0a",
                                              "fcalias ntap01_c01_0c"],
             "z50_sap0002_san01-ntap01_0ac": ["fcalias sap0002_san01", "fcalias ntap01_c01_0a"]}


@pytest.fixture
def mds():
    return MdsPersonality(SimState(), "mds1")


@pytest.fixture
def nxos(mds):
    cli = Login(mds, 1, paging=False)
    cli("terminal dont-ask")
    return cli


def production_vsan_50(cli, logged_in=()):
    """The zoning the MDS fixtures show: device-aliases, fcaliases, three zones active in zs_fabric_a."""
    lines = ["configure terminal", "device-alias database",
             *(f"device-alias name {name} pwwn {wwn}" for name, wwn in MDS_ALIASES.items()), "device-alias commit"]
    for name in ("sap0001_san01", "ntap01_c01_0a", "ntap01_c01_0c", "sap0002_san01"):
        lines += [f"fcalias name {name} vsan 50", f"member pwwn {MDS_ALIASES[name]}", "exit"]
    for zone, members in MDS_ZONES.items():
        lines += [f"zone name {zone} vsan 50", *(f"member {member}" for member in members), "exit"]
    lines += ["zoneset name zs_fabric_a vsan 50", *(f"member {zone}" for zone in MDS_ZONES), "exit",
              "zoneset activate name zs_fabric_a vsan 50", "end"]
    cli.script(lines)
    log_in(cli.personality.running, list(logged_in))


def shapes(text: str) -> set[str]:
    """Each line with its data (names, WWNs, FCIDs, numbers, the status text) replaced by placeholders:
    what is left is the layout."""
    result = set()
    for line in text.splitlines():
        line = re.sub(r"[0-9a-f]{2}(:[0-9a-f]{2}){7}", "W", line.rstrip())
        line = re.sub(r"0x[0-9a-f]+", "F", line)
        line = re.sub(r"\] \[[^\]]+\]", "] [A]", line)
        line = re.sub(r"(pwwn W) \[[^\]]+\]", r"\1 [A]", line)
        line = re.sub(r"(name|Name:) \S+", r"\1 X", line)
        line = re.sub(r"^(\s+zone) \S+$", r"\1 X", line)
        line = re.sub(r"^Status: .+$", "Status: S", line)
        result.add(re.sub(r"\d+", "N", line))
    return result


def test_mds_show_zone_prints_fcalias_blocks_and_device_aliases_as_nx_os(nxos):
    production_vsan_50(nxos)
    assert nxos("show zone vsan 50").text == body_of("mds/show_zone__fcalias_and_device_alias.txt")


def test_mds_show_zoneset_brief_has_the_layout_of_nx_os(nxos):
    production_vsan_50(nxos)
    assert shapes(nxos("show zoneset brief vsan 50").text) <= shapes(body_of("mds/show_zoneset_brief__names_only.txt"))


def test_mds_show_zoneset_active_marks_logged_in_members_as_nx_os(nxos):
    production_vsan_50(nxos, logged_in=list(MDS_ALIASES.values())[:4])
    text = nxos("show zoneset active vsan 50").text
    assert "  * fcid 0x" in text and "\n    pwwn " in text  # both forms are in this output
    assert shapes(text) <= shapes(body_of("mds/show_zoneset_active__fcid_and_offline.txt"))


def test_mds_show_device_alias_database_ends_with_its_total(nxos):
    production_vsan_50(nxos)
    text = nxos("show device-alias database").text
    assert text.endswith("\n\nTotal number of entries = 6\n")
    assert shapes(text) <= shapes(body_of("mds/show_device_alias_database__trailing_spaces.txt"))


@pytest.mark.parametrize("mode, fixture", [("basic", "mds/zone_status__basic_active_only.txt"),
                                           ("enhanced", "mds/zone_status__enhanced_full.txt")])
def test_mds_show_zone_status_has_the_layout_of_nx_os(nxos, mode, fixture):
    production_vsan_50(nxos)
    if mode == "enhanced":
        nxos.script(["configure terminal", "zone mode enhanced vsan 50", "end"])
    assert shapes(nxos("show zone status vsan 50").text) <= shapes(body_of(fixture))

"""The Brocade FOS personality as a state machine, driven through execute() with a recording console.

The console double stands in for the transport only; the grammar, outputs and state under test are
the real personality's. Over-the-wire behaviour is covered by the Brocade FOS driver tests.
"""

import pytest

from simulators.brocade_fos import FosPersonality
from simulators.personality import Session, SimState
from tests.support.recording_console import Login


@pytest.fixture
def fos():
    return FosPersonality(SimState(), "fos-ext1")


@pytest.fixture
def cli(fos):
    return Login(fos, 1)

# An empty fabric's cfgshow, as FOS 7-9 print it (public session logs).
EMPTY_FABRIC = "Defined configuration:\n\nEffective configuration:\nNo Effective configuration: (No Access)\n\n\n"


def add_tunnel(cli, ve=24, local="198.18.0.1", remote="198.18.1.1"):
    assert cli(f"portcfg fciptunnel {ve} create -d flexzone").text == "Operation Succeeded.\n"
    line = f"portcfg fcipcircuit {ve} create 0 --local-ip {local} --remote-ip {remote}"
    assert cli(line).text == "Operation Succeeded.\n"


def test_prompt_is_switch_name_colon_user():
    fos = FosPersonality(SimState(), "sw1")
    assert fos.prompt(Session(username="admin", transport="telnet")) == "sw1:admin> "
    assert fos.username_prompt() == "sw1 login: "
    assert "Fabric OS (sw1)" in fos.login_banner("telnet")
    assert "ATTENTION" in fos.motd(Session(username="admin", transport="ssh"))


def test_unknown_command_is_reported_by_the_restricted_shell(cli):
    assert cli("frobnicate now").text == "rbash: frobnicate: command not found\n"


def test_exit_closes_the_session(cli):
    console = cli("exit")
    assert console.keep is False
    assert "Closing the current session" in console.text


def test_tunnel_circuit_and_zone_make_a_flexzone_link(fos, cli):
    add_tunnel(cli)
    assert fos.links() == []
    cli('zonecreate "fz_z7_ve24", "10:00:00:00:c9:aa:bb:01"')
    assert fos.links() == []  # still the session's transaction: not on the fabric yet
    cli("cfgsave", answers=["y"])
    assert [(link.port, link.zone, link.remote_ip, link.state) for link in fos.links()] == [
        (24, 7, "198.18.1.1", "down")]
    cli('cfgcreate "fz_cfg", "fz_z7_ve24"')
    cli('cfgenable "fz_cfg"', answers=["y"])
    assert [link.state for link in fos.links()] == ["up"]
    assert fos.links()[0].targets == ("10:00:00:00:c9:aa:bb:01",)


def test_creating_an_existing_tunnel_gives_the_three_line_object_exists_error(cli):
    add_tunnel(cli)
    text = cli("portcfg fciptunnel 24 create").text
    assert text == "fciptunnel operation failed.\nObject exists.\nTunnel ID 24 already exists.\n"


def test_creating_an_existing_circuit_says_object_exists(cli):
    add_tunnel(cli)
    text = cli("portcfg fcipcircuit 24 create 0 --local-ip 198.18.0.9 --remote-ip 198.18.1.9").text
    assert text == "Object exists.\nCircuit 24.0 already exists.\n"


def test_circuit_modify_on_a_missing_circuit_cannot_locate_it(cli):
    add_tunnel(cli)
    text = cli("portcfg fcipcircuit 24 modify 3 -b 2000").text
    assert text == "Circuit modify failed: Object does not exist.\nUnable to locate circuit 24.3.\n"


def test_missing_ve_argument_prints_invalid_port_parameter_and_the_usage(cli):
    text = cli("portcfg fciptunnel modify -a 0").text
    assert text.startswith("\nfciptunnel: Invalid port parameter 'modify' (rc:-1).\n\nUsage:   portCfg fciptunnel")


def test_an_fc_port_is_not_a_ve_port(cli):
    assert "Invalid port parameter '3'" in cli("portcfg fciptunnel 3 create").text


def test_unknown_option_prints_its_name_and_the_usage(fos, cli):
    text = cli("portcfg fciptunnel 24 create -z 1").text
    assert text.startswith("fciptunnel: Unknown option '-z'.\n\nUsage:")
    assert fos.tunnels == {}


def test_tunnel_modify_asks_before_changing_and_no_keeps_the_old_value(fos, cli):
    add_tunnel(cli)
    console = cli("portcfg fciptunnel 24 modify -c deflate", answers=["n"])
    assert console.questions == ["Continue with Modification (Y,y,N,n): [ n]"]
    assert "!!!! WARNING !!!!" in console.text
    assert fos.tunnels["24"]["compression"] == "none"
    console = cli("portcfg fciptunnel 24 modify -c deflate", answers=["maybe", "y"])
    assert "Input not acceptable, please re-enter" in console.text
    assert console.text.endswith("Operation Succeeded.\n")
    assert fos.tunnels["24"]["compression"] == "deflate"


def test_modify_with_the_same_value_has_nothing_to_modify(cli):
    add_tunnel(cli)
    text = cli("portcfg fciptunnel 24 modify -d flexzone").text
    assert text == "fciptunnel operation failed.\nNothing to modify.\n"


def test_tunnel_delete_removes_its_circuits_and_the_ve_goes_offline(fos, cli):
    add_tunnel(cli)
    assert "Online      VE  VE-Port" in cli("switchshow").text
    assert cli("portcfg fciptunnel 24 delete").text == "Operation Succeeded.\n"
    assert fos.tunnels == {}
    show = cli("switchshow").text
    assert "   24   24   011800   --    --           Offline     VE" in show


def test_deleting_a_missing_tunnel_cannot_locate_it(cli):
    assert "Unable to locate tunnel 25." in cli("portcfg fciptunnel 25 delete").text


def test_switchshow_has_the_fos9_header_and_is_not_paged(fos, cli):
    console = cli("switchshow")
    assert console.text.startswith("switchName:fos-ext1\nswitchType:148.0\nswitchState:Online\n")
    assert "Type <CR> to continue" not in console.text
    assert "Index Port Address  Media Speed        State       Proto\n" + "=" * 60 in console.text
    assert "ge17" in console.text


def test_q_at_the_pager_stops_the_output(cli):
    for index in range(50):
        cli(f'zonecreate "z{index}", "10:00:00:00:c9:aa:bb:{index:02x}"')
    console = cli("cfgshow", pager_answers=["Q"])
    assert console.text.count("Type <CR> to continue") == 1
    assert "z49" not in console.text


def test_portshow_fciptunnel_all_lists_tunnel_and_circuit_rows(cli):
    add_tunnel(cli)
    text = cli("portshow fciptunnel all -c").text
    header = " Tunnel Circuit  OpStatus  Flags    Uptime  TxMBps  RxMBps ConnCnt CommRt Met/G\n"
    assert text.startswith("\n" + header + "-" * 80)
    assert "\n 24    -         Up      ---------      30s    0.00    0.00   1      -       -\n" in text
    assert "\n 24    0 -       Up      ----a-p-4      30s    0.00    0.00   1  1000/1000  0/-\n" in text
    assert "\n      (circuit): h=HA-Configured" in text


def test_the_tunnel_views_show_admin_and_operational_state_and_no_description(cli):
    add_tunnel(cli)
    configured = cli("portcfgshow fciptunnel 24").text
    title = "\n Tunnel: VE-Port:24 (idx:0, DP0)\n " + "=" * 52 + "\n"
    assert configured.startswith(title + "  Oper State           : Enabled\n")
    assert "Description" not in configured  # no capture shows one, set or not
    assert "  Oper State           : Online\n" in cli("portshow fciptunnel 24", pager_answers=[""]).text


def test_the_circuit_configuration_view_shows_its_addresses(cli):
    add_tunnel(cli)
    text = cli("portcfgshow fcipcircuit all").text
    assert "\n Circuit: VE-Port:24 ID:0 (DP0)\n" in text
    assert "  IP Addr (L/R)        : 198.18.0.1 <-> 198.18.1.1\n" in text
    assert "  Admin Status         : Enabled\n" in text


def test_ipif_duplicate_and_route_gateway_checks(cli):
    assert cli("portcfg ipif ge2.dp0 create 198.18.0.1/24 mtu auto vlan 100").text == "Operation Succeeded.\n"
    text = cli("portcfg ipif ge3.dp0 create 198.18.0.1/24").text
    assert text == "IP Address already configured.\nIP Address 198.18.0.1 already configured on port ge2.dp0.\n"
    assert cli("portcfg iproute ge2.dp0 create 198.19.0.0/24 10.9.9.9").text == "Route gateway unreachable.\n"
    assert cli("portcfg iproute ge2.dp0 create 198.19.0.0/24 198.18.0.254").text == "Operation Succeeded.\n"
    assert cli("portcfg iproute ge2.dp0 delete 198.19.1.0/24").text.startswith("IProute does not exist.\n")
    table = cli("portcfgshow ipif").text
    assert " ge2.dp0      198.18.0.1                     / 24   AUTO  100" in table
    assert table.rstrip().endswith("Flags: I=InUse X=Crossport")


def test_zoning_commands_succeed_silently_and_normalise_wwn_case(cli):
    console = cli('zonecreate "fz_z7_ve24", "50:00:09:73:98:06:C8:08"')
    assert console.text == ""
    assert console.applied_count == 1
    assert cli('cfgcreate "fz_cfg", "fz_z7_ve24"').text == ""
    show = cli("cfgshow").text
    assert " cfg:\tfz_cfg\tfz_z7_ve24 \n" in show  # up to 7 characters: the members on the name's line
    assert " zone:\tfz_z7_ve24\t\n\t\t50:00:09:73:98:06:c8:08 \n" in show  # longer: below it
    assert "No Effective configuration: (No Access)" in show


def test_zoning_error_strings(cli):
    assert cli('cfgadd "REPL_B", "z1"').text == '"REPL_B" not found\n'
    usage = 'Error: Invalid number of arguments\n\nUsage: cfgcreate "arg1", "arg2"\n'
    assert cli('cfgcreate "only_one"').text == usage
    assert cli("zonedelete").text == "error: Usage: zonedelete Name\n"
    assert cli("cfgdisable now").text == "error: Usage: cfgDisable [-force | -f]\n"
    cli('zonecreate "z1", "10:00:00:00:c9:aa:bb:01"')
    assert cli('zonecreate "z1", "10:00:00:00:c9:aa:bb:02"').text == 'duplicate name "z1"\n'
    text = cli('zoneadd "z1", "10:00:00:00:C9:AA:BB:01"').text
    assert text == '"z1" already contains "10:00:00:00:c9:aa:bb:01"\n'
    assert cli('zoneremove "z1", "10:00:00:00:c9:aa:bb:09"').text == '"10:00:00:00:c9:aa:bb:09" is not in "z1"\n'


def test_removing_the_last_member_deletes_the_zone_and_the_cfg(fos, cli):
    cli('zonecreate "z1", "10:00:00:00:c9:aa:bb:01"')
    cli('cfgcreate "c1", "z1"')
    cli('cfgremove "c1", "z1"')
    cli('zoneremove "z1", "10:00:00:00:c9:aa:bb:01"')
    assert cli("cfgshow").text == EMPTY_FABRIC


def test_cfgenable_asks_then_puts_the_cfg_in_effect_and_saves(fos, cli):
    cli('zonecreate "z1", "10:00:00:00:c9:aa:bb:01"')
    cli('cfgcreate "c1", "z1"')
    console = cli('cfgenable "c1"', answers=["no"])
    assert console.questions == ["Do you want to enable 'c1' configuration  (yes, y, no, n): [no] "]
    assert fos.zoning["effective"] is None
    console = cli('cfgenable "c1"', answers=["y"])
    assert 'zone config "c1" is in effect\nUpdating flash ...\n' in console.text
    assert fos.state.saved["zoning"]["effective"]["cfg"] == "c1"
    effective = "Effective configuration:\n cfg:\tc1\t\n zone:\tz1\t10:00:00:00:c9:aa:bb:01\n\n"
    assert effective in cli("cfgshow").text
    assert "zoning:ON (c1)" in cli("switchshow").text


def test_cfgsave_confirms_and_then_has_nothing_to_save(fos, cli):
    cli('zonecreate "z1", "10:00:00:00:c9:aa:bb:01"')
    assert "z1" not in fos.state.saved["zoning"]["defined"]["zones"]
    assert "z1" not in fos.zoning["defined"]["zones"]
    assert cli("cfgtransshow").text.endswith("It is abortable\n")
    console = cli("cfgsave", answers=["yes"])
    assert "Do you want to save the Defined zoning configuration only?  (yes, y, no, n): [no] " in console.questions
    assert "z1" in fos.state.saved["zoning"]["defined"]["zones"]
    assert "z1" in fos.zoning["defined"]["zones"]
    assert cli("cfgtransshow").text == "There is no outstanding zoning transaction\n"
    assert cli("cfgsave").text == "Nothing changed: nothing to save, returning ...\n"


def test_long_cfgshow_goes_through_the_pager(cli):
    for index in range(50):
        cli(f'zonecreate "z{index}", "10:00:00:00:c9:aa:bb:{index:02x}"')
    console = cli("cfgshow", pager_answers=["", ""])
    assert console.text.count("Type <CR> to continue, Q<CR> to stop: ") == 2


def test_extension_config_is_written_to_flash_at_once(fos, cli):
    add_tunnel(cli)
    assert fos.state.saved["tunnels"]["24"]["circuits"]["0"]["remote_ip"] == "198.18.1.1"


def test_state_reloads_from_its_json_form(fos, cli):
    import json

    add_tunnel(cli)
    cli('zonecreate "fz_z7_ve24", "10:00:00:00:c9:aa:bb:01"')
    cli("cfgsave", answers=["y"])
    cli('zonecreate "uncommitted", "10:00:00:00:c9:aa:bb:02"')
    state = SimState(**json.loads(json.dumps({"running": fos.state.running, "saved": fos.state.saved})))
    again = FosPersonality(state, "fos-ext1")
    assert again.links() == fos.links() != []
    show = Login(again)("cfgshow").text
    assert "fz_z7_ve24" in show
    assert "uncommitted" not in show  # a transaction lives in the switch's memory only


def test_a_state_file_from_before_the_default_zone_access_still_loads():
    zoning = {"defined": {"cfgs": {}, "zones": {}, "aliases": {}}, "effective": None}
    fos = FosPersonality(SimState(running={"zoning": dict(zoning)}, saved={"zoning": dict(zoning)}), "fos-ext1")
    assert Login(fos)("cfgactvshow").text == "Effective configuration:\nNo Effective configuration: (No Access)\n\n\n"
    assert fos.zoning["default_access"] == "No Access"


def test_mutating_lines_are_classified(fos):
    session = Session(username="admin", transport="ssh", id=1)
    assert fos.is_mutating(session, "portcfg fciptunnel 24 create")
    assert fos.is_mutating(session, 'zonecreate "a", "b"')
    assert fos.is_mutating(session, "defzone --allaccess")
    assert fos.is_mutating(session, "cfgtransabort")
    assert not fos.is_mutating(session, "defzone --show")
    assert not fos.is_mutating(session, "portshow fciptunnel all")
    assert not fos.is_mutating(session, "cfgshow")


def test_islshow_lists_an_isl_per_online_tunnel(cli):
    assert cli("islshow").text == "No ISL found\n"
    add_tunnel(cli)
    text = cli("islshow").text
    assert text.startswith("  1: 24-> 24 10:00:c4:f5:7c:12:01:01   2 ext-198-18-1-1")
    assert text.rstrip().endswith("sp:-------- bw: 10.000G")


def test_cfgtransabort_drops_the_unsaved_zoning_edits(fos, cli):
    cli('zonecreate "kept", "10:00:00:00:c9:aa:bb:01"')
    cli("cfgsave", answers=["y"])
    cli('zonecreate "dropped", "10:00:00:00:c9:aa:bb:02"')
    assert cli("cfgtransabort").text == ""
    assert list(fos.zoning["defined"]["zones"]) == ["kept"]
    assert cli("cfgtransabort").text == "There is no outstanding zoning transaction\n"

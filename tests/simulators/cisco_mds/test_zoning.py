"""The Cisco MDS simulator's zoning: basic and enhanced zoning modes, the enhanced-mode zone session
lock with its pending database and staged activation, commit and discard, `clear zone lock`, the
activation and zone-mode questions, `show zone status`, the zoning_locked fault, production zoning
and flexzone links.

Rules are checked on the personality (each Login is one session), then over real SSH with stock
netmiko cisco_nxos sessions, as two administrators would see them.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest
from netmiko import ConnectHandler

from simulators.cisco_mds import MdsPersonality
from simulators.cisco_mds.parser import Sink
from simulators.faults import Fault, FaultBook, write_faults
from simulators.personality import SimState
from tests.support.recording_console import Login, RecordingConsole
from tests.support.sims import PASSWORD, USERNAME

BUSY = "Lock is currently busy\n"
CREATED = "Enhanced zone session has been created. Please 'commit' the changes when done.\n"
COMMITTED = "Commit operation initiated. Check zone status\n"
MODE_QUESTION = ("WARNING: This command would distribute the zoning database of this switch throughout the fabric. "
                 "Do you want to continue? (y/n) [n] ")
CLEAR_QUESTION = "Command will clear lock from the entire fabric. Do you want to continue? (y/n) [n] "
WWN1, WWN2, WWN3 = "10:00:00:00:c9:aa:bb:01", "10:00:00:00:c9:aa:bb:02", "10:00:00:00:c9:aa:bb:03"
TARGET = "50:00:09:72:08:1a:f1:04"
HOST1, HOST2 = "10:00:00:10:9b:5e:b0:01", "10:00:00:10:9b:5e:b0:02"
STAMP = r"\d\d:\d\d:\d\d UTC \w{3} [ \d]\d \d{4}"


@pytest.fixture
def mds():
    return MdsPersonality(SimState(), "mds1")


def login(mds, session_id, username="admin", dont_ask=True):
    cli = Login(mds, session_id, username, paging=False)
    if dont_ask:
        cli("terminal dont-ask")
    return cli


@pytest.fixture
def me(mds):
    return login(mds, 1)


@pytest.fixture
def other(mds):
    return login(mds, 2, "bob")


def zone_lines(name, *members, vsan=1):
    return [f"zone name {name} vsan {vsan}", *(f"member pwwn {m}" for m in members), "exit"]


def basic_prod(cli):
    """PROD active in VSAN 1 with one zone (basic mode)."""
    cli.script(["configure terminal", *zone_lines("prod1", WWN1, WWN2), "zoneset name PROD vsan 1", "member prod1",
                "exit", "zoneset activate name PROD vsan 1", "end"])


def enhanced(cli, vsan=1):
    assert "Set zoning mode command initiated" in cli.script(["configure terminal", f"zone mode enhanced vsan {vsan}",
                                                               "end"])


def status(cli, vsan=1):
    return cli(f"show zone status vsan {vsan}").text


# --- zoning modes ---------------------------------------------------------------------------------


def test_terminal_dont_ask_is_remembered_for_the_session(mds):
    cli = login(mds, 1, dont_ask=False)
    assert "dont_ask" not in cli.session.scratch
    assert cli("terminal dont-ask").text == ""
    assert cli.session.scratch["dont_ask"] is True


def test_zone_mode_enhanced_asks_and_sets_the_mode(mds):
    cli = login(mds, 1, dont_ask=False)
    cli("configure terminal")
    console = cli("zone mode enhanced vsan 1", answers=["n"])
    assert console.questions == [MODE_QUESTION]
    assert "mode: basic" in status(cli)
    console = cli("zone mode enhanced vsan 1", answers=["y"])
    assert console.text == MODE_QUESTION + "Set zoning mode command initiated. Check zone status\n"
    assert cli("zone mode enhanced vsan 1").text == "Current zoning mode same as specified zoning mode\n"
    text = status(cli)
    assert text.startswith("VSAN: 1 default-zone: deny distribute: full Interop: default\n"
                           "    mode: enhanced merge-control: allow\n")
    assert re.search(rf"^Status: Set zoning mode complete at {STAMP}$", text, re.M)
    assert "\nzone mode enhanced vsan 1\n" in cli("show running-config").text
    cli("no zone mode enhanced vsan 1", answers=["y"])
    assert "mode: basic" in status(cli)
    assert "zone mode enhanced" not in cli("show running-config").text


def test_dont_ask_skips_the_zone_mode_question(me):
    me("configure terminal")
    console = me("zone mode enhanced vsan 1")
    assert console.questions == []
    assert console.text == "Set zoning mode command initiated. Check zone status\n"


def test_the_zone_mode_cannot_change_while_a_lock_is_held(mds, me, other):
    enhanced(me)
    me.script(["configure terminal", "zone name z1 vsan 1"])
    other("configure terminal")
    assert other("no zone mode enhanced vsan 1").text == BUSY
    assert me("no zone mode enhanced vsan 1").text == BUSY  # the holder too: commit or discard first
    assert "mode: enhanced" in status(me)


# --- basic mode -----------------------------------------------------------------------------------


def test_basic_mode_edits_and_activation_apply_at_once(mds, me, other):
    me.script(["configure terminal", *zone_lines("z1", WWN1)])
    assert other("show zone vsan 1").text == f"zone name z1 vsan 1\n  pwwn {WWN1}\n"
    me.script(["zoneset name S vsan 1", "member z1", "exit"])
    assert me("zoneset activate name S vsan 1").text == "Zoneset activation initiated. check zone status\n"
    assert mds.running["active"]["1"] == {"name": "S", "zones": {"z1": [WWN1]}}
    assert "    session:  none\n" in status(me)
    assert re.search(rf"^Status: Activation completed at {STAMP}$", status(me), re.M)
    me("no zoneset activate name S vsan 1")
    assert "1" not in mds.running["active"]
    text = status(me)
    assert "Active Zoning Database :\n   Database Not Available\nCurrent Total Zone DB Usage: " in text
    assert re.search(rf"^Status: Deactivation completed at {STAMP}$", text, re.M)


def test_the_default_zone_policy_is_per_vsan_shown_in_the_status_and_the_running_config(mds, me):
    me("configure terminal")
    assert me("zone default-zone permit vsan 2").text == ""
    assert status(me, 2).startswith("VSAN: 2 default-zone: permit distribute: active only")
    assert status(me, 1).startswith("VSAN: 1 default-zone: deny distribute: active only")
    assert "\nzone default-zone permit vsan 2\n" in me("show running-config").text
    assert mds.running["default_zones"] == {"2": "permit"}
    me("no zone default-zone permit vsan 2")
    assert status(me, 2).startswith("VSAN: 2 default-zone: deny")
    assert "\nzone default-zone permit" not in me("show running-config").text


def test_an_enhanced_default_zone_change_takes_the_lock_and_applies_at_commit(mds, me, other):
    enhanced(me)
    me("configure terminal")
    assert me("zone default-zone permit vsan 1").text == CREATED
    assert "default-zone: deny" in status(other)
    other("configure terminal")
    assert other("no zone default-zone permit vsan 1").text == BUSY
    assert me("zone commit vsan 1").text == COMMITTED
    assert "default-zone: permit" in status(other)


def test_device_alias_members_are_kept_shown_and_removed(mds, me):
    me.script(["configure terminal", "zone name prod_alias vsan 1"])
    assert me("member device-alias hostA").text == ""
    assert me("member pwwn 10:00:00:00:C9:AA:BB:01").text == ""
    assert mds.running["zones"]["1"]["prod_alias"] == ["device-alias hostA", WWN1]
    absent = 'Zone member "device-alias hostB" not present in zone "prod_alias"\n'
    assert me("no member device-alias hostB").text == absent
    me("end")
    assert "    member device-alias hostA\n    member pwwn 10:00:00:00:c9:aa:bb:01\n" in me("show running-config").text
    assert me("show zone vsan 1").text == f"zone name prod_alias vsan 1\n  device-alias hostA\n  pwwn {WWN1}\n"
    me.script(["configure terminal", "zone name prod_alias vsan 1", "no member device-alias hostA", "end"])
    assert mds.running["zones"]["1"]["prod_alias"] == [WWN1]


# --- enhanced mode: the lock ----------------------------------------------------------------------


def test_the_first_enhanced_edit_takes_the_lock_and_edits_a_pending_copy(mds, me, other):
    basic_prod(me)
    enhanced(me)
    me("configure terminal")
    assert me("zone name z1 vsan 1").text == CREATED
    assert me("member pwwn 10:00:00:00:C9:AA:BB:01").text == ""
    assert me("exit").prompt_after == "mds1(config)# "
    assert me("zone name z2 vsan 1").text == ""  # the session exists already
    assert "z1" not in mds.running["zones"]["1"]
    assert "zone name z1" not in other("show zone vsan 1").text
    assert "zone name z1" not in other("show running-config").text
    text = status(other)
    assert "    session:  cli [admin]\n" in text
    assert re.search(r"^    Full DB Copy size: [1-9]\d* bytes$", text, re.M)


def test_another_sessions_edits_are_refused_while_the_lock_is_held(mds, me, other):
    basic_prod(me)
    enhanced(me)
    me.script(["configure terminal", "zone name z1 vsan 1"])
    other("configure terminal")
    for line in ["zone name z9 vsan 1", "no zone name prod1 vsan 1", "zoneset name PROD vsan 1",
                 "no zoneset name PROD vsan 1", "zoneset activate name PROD vsan 1",
                 "no zoneset activate name PROD vsan 1", "zone commit vsan 1"]:
        console = other(line)
        assert console.text == BUSY, line
        assert console.prompt_after == "mds1(config)# ", line  # no submode entered
    assert "z9" not in me("show zone vsan 1").text


def test_enhanced_activation_is_staged_until_commit(mds, me, other):
    basic_prod(me)
    enhanced(me)
    me.script(["configure terminal", *zone_lines("fz_z7_fcip5", WWN3), "zoneset name PROD vsan 1", "member fz_z7_fcip5",
               "exit"])
    assert me("zoneset activate name PROD vsan 1").text == ""
    assert list(mds.running["active"]["1"]["zones"]) == ["prod1"]
    assert re.search(r"^    Active DB Copy size: [1-9]\d* bytes$", status(me), re.M)
    assert me("zone commit vsan 1").text == COMMITTED
    assert mds.running["active"]["1"]["zones"] == {"prod1": [WWN1, WWN2], "fz_z7_fcip5": [WWN3]}
    assert mds.running["zonesets"]["1"]["PROD"] == ["prod1", "fz_z7_fcip5"]
    text = status(other)
    assert "    session:  none\n" in text
    assert re.search(rf"^Status: Commit completed at {STAMP}$", text, re.M)
    other("configure terminal")
    assert other("zone name z2 vsan 1").text == CREATED  # the lock was released: another session takes it


def test_a_staged_deactivation_happens_at_commit(mds, me):
    basic_prod(me)
    enhanced(me)
    me("configure terminal")
    assert me("no zoneset activate name PROD vsan 1").text == CREATED
    assert "1" in mds.running["active"]
    me("zone commit vsan 1")
    assert "1" not in mds.running["active"]


def test_zone_commit_without_a_pending_session_has_nothing_to_commit(me):
    enhanced(me)
    me("configure terminal")
    assert me("zone commit vsan 1").text == "No pending info found\n"


def test_no_zone_commit_discards_the_pending_copy(mds, me):
    basic_prod(me)
    enhanced(me)
    me.script(["configure terminal", "no zone name prod1 vsan 1"])
    assert me("no zone commit vsan 1").text == ""
    assert "prod1" in mds.running["zones"]["1"]
    assert "    session:  none\n" in status(me)
    assert me("no zone commit vsan 1").text == "Zone database not locked\n"


def test_the_lock_is_the_users_for_no_zone_commit_but_not_for_commit(mds, me):
    enhanced(me)
    me.script(["configure terminal", "zone name z1 vsan 1"])
    same_user = login(mds, 3)
    stranger = login(mds, 4, "bob")
    same_user("configure terminal")
    stranger("configure terminal")
    assert same_user("zone commit vsan 1").text == BUSY
    assert stranger("no zone commit vsan 1").text == BUSY
    assert same_user("no zone commit vsan 1").text == ""
    assert "    session:  none\n" in status(me)


def test_a_session_that_ends_keeps_its_lock(mds, me, other):
    enhanced(me)
    me.script(["configure terminal", "zone name z1 vsan 1"])
    me.end()
    assert "    session:  cli [admin]\n" in status(other)


def test_locks_and_pending_edits_are_lost_when_the_switch_restarts(mds, me):
    enhanced(me)
    me.script(["configure terminal", *zone_lines("z1", WWN1)])
    state = SimState(**json.loads(json.dumps({"running": mds.state.running, "saved": mds.state.saved})))
    restarted = MdsPersonality(state, "mds1")
    cli = login(restarted, 1)
    assert "    session:  none\n" in status(cli)
    assert "mode: enhanced" in status(cli)
    assert "z1" not in cli("show zone vsan 1").text


def test_clear_zone_lock_asks_and_frees_anybodys_lock(mds, me):
    enhanced(me)
    me.script(["configure terminal", "zone name z1 vsan 1", "end"])
    admin = login(mds, 2, "bob", dont_ask=False)
    console = admin("clear zone lock vsan 1", answers=["n"])
    assert console.questions == [CLEAR_QUESTION]
    assert "    session:  cli [admin]\n" in status(admin)
    assert admin("clear zone lock vsan 1", answers=["y"]).text == CLEAR_QUESTION
    assert "    session:  none\n" in status(admin)
    assert "z1" not in mds.running["zones"].get("1", {})
    assert admin("clear zone lock vsan 1", answers=["y"]).text == CLEAR_QUESTION + "Zone database not locked\n"
    assert me("clear zone lock vsan 1").text == "Zone database not locked\n"  # dont-ask: no question


def test_locks_are_per_vsan(mds, me, other):
    enhanced(me, 1)
    enhanced(me, 10)
    me.script(["configure terminal", "zone name z1 vsan 1"])
    other("configure terminal")
    assert other("zone name z1 vsan 10").text == CREATED
    assert "    session:  cli [bob]\n" in status(me, 10)


# --- the zoning_locked fault ------------------------------------------------------------------------


def test_the_zoning_locked_fault_holds_every_enhanced_vsan_for_san_admin(mds, me):
    enhanced(me)
    mds.faults = FaultBook([Fault("zoning_locked")])
    assert "    session:  cli [san-admin]\n" in status(me)
    me("configure terminal")
    assert me("zone name z1 vsan 1").text == BUSY
    assert me("zone commit vsan 1").text == BUSY
    assert me("no zone commit vsan 1").text == BUSY
    assert me("do clear zone lock vsan 1").text == BUSY
    assert me("no zone mode enhanced vsan 1").text == BUSY
    assert me("zone name z1 vsan 2").text == ""  # basic-mode VSAN 2: no lock to hold
    mds.faults.set([])
    assert "    session:  none\n" in status(me)
    assert me("zone name z1 vsan 1").text == CREATED


# --- the activation question -----------------------------------------------------------------------


def bigger_zoneset(cli):
    basic_prod(cli)
    cli.script(["configure terminal", *zone_lines("a", WWN1), *zone_lines("b", WWN2), *zone_lines("c", WWN3),
                "zoneset name BIG vsan 1", "member a", "member b", "member c", "exit"])


def test_activating_a_much_bigger_zoneset_asks_first(mds):
    cli = login(mds, 1, dont_ask=False)
    bigger_zoneset(cli)
    question = ("WARNING: New Zoneset BIG is significantly bigger than current active Zoneset PROD. "
                "Do you want to continue? (y/n) [n] ")
    console = cli("zoneset activate name BIG vsan 1", answers=["n"])
    assert console.questions == [question]
    assert mds.running["active"]["1"]["name"] == "PROD"
    console = cli("zoneset activate name BIG vsan 1", answers=["y"])
    assert console.text == question + "Zoneset activation initiated. check zone status\n"
    assert mds.running["active"]["1"]["name"] == "BIG"


def test_dont_ask_activates_a_bigger_zoneset_without_a_question(mds, me):
    bigger_zoneset(me)
    console = me("zoneset activate name BIG vsan 1")
    assert console.questions == []
    assert mds.running["active"]["1"]["name"] == "BIG"


def test_a_declined_enhanced_activation_takes_no_lock(mds):
    cli = login(mds, 1, dont_ask=False)
    bigger_zoneset(cli)
    cli("zone mode enhanced vsan 1", answers=["y"])
    console = cli("zoneset activate name BIG vsan 1", answers=["n"])
    assert console.text.startswith("WARNING: New Zoneset BIG")
    assert "    session:  none\n" in status(cli)
    console = cli("zoneset activate name BIG vsan 1", answers=["y"])
    assert console.text.endswith(CREATED)


def test_output_written_before_a_question_reaches_the_console_first():
    console = RecordingConsole(answers=["y"])
    sink = Sink(console)
    sink.write("before\n")
    assert asyncio.run(sink.ask("continue? ")) == "y"
    sink.write("after\n")
    assert console.out == ["before\n", "continue? "]
    assert sink.text == "after\n"


# --- links and production zoning ------------------------------------------------------------------


def pair(initiator, zone=7, port=5):
    return f"fz_z{zone}_fcip{port}_{initiator.replace(':', '')}_{TARGET.replace(':', '')}"


def fcip_interface(cli, port=5, peer="198.18.1.1"):
    cli.script(["configure terminal", "feature fcip", f"fcip profile {port}", "ip address 198.18.0.1",
                f"interface fcip {port}", "use-profile 5", f"peer-info ipaddr {peer}", "no shutdown", "end"])


def test_pair_zones_make_one_link_up_when_all_are_active(mds, me):
    fcip_interface(me)
    me.script(["configure terminal", *zone_lines(pair(HOST1), HOST1, TARGET), *zone_lines(pair(HOST2), HOST2, TARGET),
               "zoneset name PROD vsan 1", f"member {pair(HOST1)}", "exit", "zoneset activate name PROD vsan 1"])
    [link] = mds.links()
    assert (link.port, link.zone, link.remote_ip, link.state) == (5, 7, "198.18.1.1", "down")
    assert (link.initiators, link.targets) == ((HOST1, HOST2), (TARGET,))
    me.script(["zoneset name PROD vsan 1", f"member {pair(HOST2)}", "exit", "zoneset activate name PROD vsan 1"])
    assert [link.state for link in mds.links()] == ["up"]
    me.script(["interface fcip 5", "shutdown", "end"])
    assert [link.state for link in mds.links()] == ["down"]


def test_a_pending_enhanced_edit_is_not_a_link_yet(mds, me):
    fcip_interface(me)
    enhanced(me)
    me.script(["configure terminal", *zone_lines(pair(HOST1), HOST1, TARGET)])
    assert mds.links() == []
    me("zone commit vsan 1")
    assert [link.state for link in mds.links()] == ["down"]


def test_production_zoning_makes_prod_active_in_vsan_1_with_its_devices_logged_in(mds, me):
    mds.seed_production_zoning()
    active = me("show zoneset active vsan 1").text
    assert re.fullmatch(r"zoneset name PROD vsan 1\n"
                        r"  zone name prod_oradb1_vmax vsan 1\n"
                        r"  \* fcid 0x1e[0-9a-f]{4} \[pwwn 10:00:00:90:fa:c7:43:10\]\n"
                        r"  \* fcid 0x1e[0-9a-f]{4} \[pwwn 50:00:09:73:f0:2c:51:04\]\n\n"
                        r"  zone name prod_backup1_tape vsan 1\n"
                        r"  \* fcid 0x1e[0-9a-f]{4} \[pwwn 10:00:00:90:fa:c7:43:22\]\n"
                        r"  \* fcid 0x1e[0-9a-f]{4} \[pwwn 50:01:04:f0:00:a1:b2:c3\]\n", active)
    assert "mode: basic" in status(me)
    assert mds.state.saved == mds.state.running


# --- over real SSH: two administrators ------------------------------------------------------------


class Admin:
    """A stock netmiko cisco_nxos session."""

    def __init__(self, sim, dont_ask=True):
        host, port = sim.addresses["ssh"]
        self.conn = ConnectHandler(device_type="cisco_nxos", host=host, port=port, username=USERNAME,
                                   password=PASSWORD, allow_agent=False, use_keys=False, ssh_config_file=None,
                                   conn_timeout=10)
        if dont_ask:
            self.conn.send_command("terminal dont-ask")

    def config(self, *lines):
        return self.conn.send_config_set(list(lines))

    def ask(self, command, answer):
        """Send a command that asks (y/n), answer it, return everything said."""
        output = self.conn.send_command(command, expect_string=r"\(y/n\) \[n\]\s*$")
        return output + self.conn.send_command(answer, expect_string=r"#\s*$")

    def show(self, command):
        return self.conn.send_command(command)

    def close(self):
        self.conn.disconnect()

    def cut(self):
        """The connection drops without a goodbye."""
        self.conn.remote_conn_pre.close()


@pytest.fixture
def switch(sim_factory):
    return sim_factory("cisco_mds", ssh=("127.0.0.1", 0))


@pytest.fixture
def admins(switch):
    opened = []

    def open_admin(**kwargs):
        admin = Admin(switch, **kwargs)
        opened.append(admin)
        return admin

    yield open_admin
    for admin in opened:
        try:
            admin.close()
        except Exception:  # noqa: BLE001 - a test may have cut it already
            pass


def held_by(admin):
    return re.search(r"^\s*session:\s*(.+?)\s*$", admin.show("show zone status vsan 1"), re.M).group(1)


def test_an_open_enhanced_session_blocks_the_other_admin_until_it_commits(switch, admins):
    first, second = admins(), admins()
    assert "Set zoning mode command initiated" in first.config("zone mode enhanced vsan 1")
    assert CREATED.strip() in second.config("zone name adm_pending vsan 1", f"member pwwn {WWN1}")
    assert held_by(first) == "cli [admin]"
    assert BUSY.strip() in first.config("zone name flexzone vsan 1")
    assert "adm_pending" not in first.show("show zone vsan 1")
    assert COMMITTED.strip() in second.config("zone commit vsan 1")
    assert held_by(first) == "none"
    assert "adm_pending" in first.show("show zone vsan 1")
    assert CREATED.strip() in first.config("zone name flexzone vsan 1")


def test_no_zone_commit_by_the_other_admin_releases_the_lock(switch, admins):
    first, second = admins(), admins()
    first.config("zone mode enhanced vsan 1")
    second.config("zone name adm_pending vsan 1")
    assert BUSY.strip() in first.config("zone name flexzone vsan 1")
    second.config("no zone commit vsan 1")
    assert held_by(first) == "none"
    assert CREATED.strip() in first.config("zone name flexzone vsan 1")


def test_the_lock_survives_a_disconnect_and_clear_zone_lock_frees_it(switch, admins):
    first, second = admins(dont_ask=False), admins()
    second.config("zone mode enhanced vsan 1", "zone name adm_pending vsan 1")
    second.cut()
    time.sleep(0.2)
    assert held_by(first) == "cli [admin]"
    output = first.ask("clear zone lock vsan 1", "y")
    assert "Command will clear lock from the entire fabric. Do you want to continue? (y/n) [n]" in output
    assert held_by(first) == "none"
    assert "adm_pending" not in first.show("show zone vsan 1")


def test_the_zoning_locked_fault_blocks_until_it_is_cleared(switch, admins):
    admin = admins()
    admin.config("zone mode enhanced vsan 1")
    switch.faults = [Fault("zoning_locked")]
    assert held_by(admin) == "cli [san-admin]"
    assert BUSY.strip() in admin.config("zone name flexzone vsan 1")
    switch.faults = []
    assert held_by(admin) == "none"
    assert CREATED.strip() in admin.config("zone name flexzone vsan 1")


def test_zone_mode_activation_and_clear_lock_questions_over_ssh(switch, admins):
    admin = admins(dont_ask=False)
    admin.config(*zone_lines("prod1", WWN1), "zoneset name PROD vsan 1", "member prod1", "exit",
                 "zoneset activate name PROD vsan 1", *zone_lines("a", WWN1), *zone_lines("b", WWN2),
                 *zone_lines("c", WWN3), "zoneset name BIG vsan 1", "member a", "member b", "member c")
    admin.conn.config_mode()
    declined = admin.ask("zoneset activate name BIG vsan 1", "n")
    assert "WARNING: New Zoneset BIG is significantly bigger than current active Zoneset PROD." in declined
    assert switch.state().running["active"]["1"]["name"] == "PROD"
    accepted = admin.ask("zoneset activate name BIG vsan 1", "y")
    assert "Zoneset activation initiated. check zone status" in accepted
    assert switch.state().running["active"]["1"]["name"] == "BIG"
    mode = admin.ask("zone mode enhanced vsan 1", "y")
    assert MODE_QUESTION.strip() in mode and "Set zoning mode command initiated" in mode
    admin.conn.exit_config_mode()
    assert admin.ask("clear zone lock vsan 1", "y").endswith("Zone database not locked")


# --- over real SSH: a simulator process ---------------------------------------------------------------


def test_production_zoning_is_seeded_once_and_survives_a_restart(sim_process_factory, tmp_path):
    first = sim_process_factory("cisco_mds", state_dir=tmp_path, ssh="127.0.0.1:0", args=["--production-zoning"])
    admin = Admin(first)
    assert admin.show("show zoneset active vsan 1").startswith("zoneset name PROD vsan 1\n"
                                                               "  zone name prod_oradb1_vmax vsan 1\n")
    admin.config("zoneset name PROD vsan 1", "no member prod_backup1_tape", "exit", "zoneset activate name PROD vsan 1")
    admin.close()
    assert first.stop() == 0
    second = sim_process_factory("cisco_mds", state_dir=tmp_path, ssh="127.0.0.1:0", args=["--production-zoning"])
    admin = Admin(second)
    active = admin.show("show zoneset active vsan 1")
    startup = admin.show("show startup-config")
    admin.close()
    assert "zone name prod_oradb1_vmax vsan 1" in active
    assert "prod_backup1_tape" not in active  # the existing state was kept, not seeded again
    assert "zoneset activate name PROD vsan 1" in startup  # seeded into the startup configuration too


def test_zoning_locked_armed_through_the_faults_file_is_cleared_the_same_way(sim_process_factory, tmp_path):
    process = sim_process_factory("cisco_mds", state_dir=tmp_path, ssh="127.0.0.1:0")
    admin = Admin(process)
    try:
        admin.config("zone mode enhanced vsan 1")
        write_faults(tmp_path, [Fault("zoning_locked")])
        assert BUSY.strip() in admin.config("zone name flexzone vsan 1")
        assert held_by(admin) == "cli [san-admin]"
        write_faults(tmp_path, [])
        assert CREATED.strip() in admin.config("zone name flexzone vsan 1")
    finally:
        admin.close()

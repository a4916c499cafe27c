"""The Brocade FOS simulator's zoning: one zoning transaction per switch, owned by the session that
opened it, the default zone access, the zoning_locked fault, production zoning and flexzone links.

Rules are checked on the personality (two Logins are two sessions), then over real SSH with stock
netmiko sessions, as two administrators would see them.
"""

from __future__ import annotations

import json
import re
import socket
import time

import pytest
from netmiko import ConnectHandler

from simulators.brocade_fos import FosPersonality
from simulators.faults import Fault, FaultBook, write_faults
from simulators.personality import SimState
from tests.support.recording_console import Login
from tests.support.sims import PASSWORD, USERNAME

BUSY = "Another zoning transaction is in progress (token 0x{:x}); try again later.\n"
NOT_YOURS = "The transaction belongs to another session; give its token to abort it.\n"
NONE_OPEN = "There is no outstanding zoning transaction\n"
WWN1, WWN2, WWN3 = "10:00:00:00:c9:aa:bb:01", "10:00:00:00:c9:aa:bb:02", "10:00:00:00:c9:aa:bb:03"
TARGET = "50:00:09:72:08:1a:f1:04"
HOST1, HOST2 = "10:00:00:10:9b:5e:b0:01", "10:00:00:10:9b:5e:b0:02"


def pair(zone, port, initiator, target=TARGET):
    return f"fz_z{zone}_ve{port}_{initiator.replace(':', '')}_{target.replace(':', '')}"


@pytest.fixture
def fos():
    return FosPersonality(SimState(), "fos-ext1")


@pytest.fixture
def me(fos):
    return Login(fos, 1)


@pytest.fixture
def other(fos):
    return Login(fos, 2)


def enable(login, cfg):
    return login(f'cfgenable "{cfg}"', answers=["y"]).text


def add_tunnel(login, ve=24, remote="198.18.1.1"):
    assert login(f"portcfg fciptunnel {ve} create -d flexzone").text == "Operation Succeeded.\n"
    line = f"portcfg fcipcircuit {ve} create 0 --local-ip 198.18.0.{ve} --remote-ip {remote}"
    assert login(line).text == "Operation Succeeded.\n"


# --- the transaction, on the personality ----------------------------------------------------------


def test_an_edit_opens_a_transaction_only_its_session_sees(fos, me, other):
    assert me(f'zonecreate "z1", "{WWN1}"').text == ""
    assert " zone:\tz1\t" in me("cfgshow").text
    assert other("cfgshow").text.startswith("Defined configuration:\n\nEffective configuration:\n")
    assert fos.zoning["defined"]["zones"] == {}
    assert me("cfgtransshow").text == "Current transaction token is 0x3109\nIt is abortable\n"
    assert other("cfgtransshow").text == "Current transaction token is 0x3109\nIt is not abortable\n"


def test_every_change_of_another_session_is_refused_while_the_transaction_is_open(fos, me, other):
    me(f'zonecreate "z1", "{WWN1}"')
    me('cfgcreate "c1", "z1"')
    me("cfgsave", answers=["y"])
    enable(me, "c1")
    me(f'zonecreate "mine", "{WWN2}"')
    before = json.dumps(fos.state.running, sort_keys=True)
    for line in [f'zonecreate "z2", "{WWN2}"', f'zoneadd "z1", "{WWN3}"', f'zoneremove "z1", "{WWN1}"',
                 'zonedelete "z1"', f'alicreate "a1", "{WWN3}"', f'aliadd "a1", "{WWN3}"', f'aliremove "a1", "{WWN3}"',
                 'alidelete "a1"', 'cfgcreate "c2", "z1"', 'cfgadd "c1", "z1"', 'cfgremove "c1", "z1"',
                 'cfgdelete "c1"', "cfgclear", "cfgsave", 'cfgenable "c1"', "cfgdisable", "defzone --allaccess"]:
        console = other(line)
        assert console.text == BUSY.format(0x310A), line
        assert console.questions == [], line
    assert json.dumps(fos.state.running, sort_keys=True) == before
    assert "mine" in me("cfgshow").text


def test_cfgsave_commits_the_working_copy_and_closes_the_transaction(fos, me, other):
    me(f'zonecreate "z1", "{WWN1}"')
    console = me("cfgsave", answers=["y"])
    assert console.questions == ["Do you want to save the Defined zoning configuration only?  (yes, y, no, n): [no] "]
    assert console.text.endswith("Updating flash ...\n")
    assert fos.zoning["defined"]["zones"] == {"z1": [WWN1]}
    assert fos.state.saved["zoning"]["defined"]["zones"] == {"z1": [WWN1]}
    assert other("cfgtransshow").text == NONE_OPEN
    assert " zone:\tz1\t" in other("cfgshow").text
    assert other(f'zonecreate "z2", "{WWN2}"').text == ""  # the switch is free again


def test_answering_no_to_cfgsave_keeps_the_transaction_open(fos, me):
    me(f'zonecreate "z1", "{WWN1}"')
    me("cfgsave", answers=["n"])
    assert fos.zoning["defined"]["zones"] == {}
    assert me("cfgtransshow").text.endswith("It is abortable\n")


def test_an_unchanged_transaction_has_nothing_to_save_and_is_closed(fos, me):
    me(f'zonecreate "z1", "{WWN1}"')
    me('zonedelete "z1"')
    assert me("cfgtransshow").text.startswith("Current transaction token is")
    assert me("cfgsave").text == "Nothing changed: nothing to save, returning ...\n"
    assert me("cfgtransshow").text == NONE_OPEN


def test_cfgenable_commits_the_session_working_copy_and_puts_the_cfg_in_effect(fos, me, other):
    me(f'zonecreate "z1", "{WWN1}"')
    me('cfgcreate "c1", "z1"')
    assert other('cfgenable "c1"').text == BUSY.format(0x3109)
    console = me('cfgenable "c1"', answers=["y"])
    assert console.questions == ["Do you want to enable 'c1' configuration  (yes, y, no, n): [no] "]
    assert console.text.endswith('zone config "c1" is in effect\nUpdating flash ...\n')
    assert fos.zoning["defined"]["cfgs"] == {"c1": ["z1"]}
    assert fos.zoning["effective"] == {"cfg": "c1", "zones": {"z1": [WWN1]}}
    assert fos.state.saved["zoning"] == fos.zoning
    assert other("cfgtransshow").text == NONE_OPEN


def test_cfgenable_without_a_transaction_uses_the_committed_configuration(fos, me, other):
    me(f'alicreate "host1", "{WWN1}"')
    me(f'zonecreate "z1", "host1; {WWN2}"')
    me('cfgcreate "c1", "z1"')
    me(f'zonecreate "z2", "{WWN3}"')
    me('cfgcreate "c2", "z2"')
    me("cfgsave", answers=["y"])
    enable(other, "c1")
    # The alias resolved, in the order FOS shows the zone's members (sorted: "10:..." before "host1").
    assert fos.zoning["effective"] == {"cfg": "c1", "zones": {"z1": [WWN2, WWN1]}}
    enable(other, "c2")
    assert fos.zoning["effective"] == {"cfg": "c2", "zones": {"z2": [WWN3]}}  # one cfg in effect at a time


def test_a_cfg_only_in_someone_elses_working_copy_is_not_found(fos, me, other):
    me(f'zonecreate "z1", "{WWN1}"')
    me('cfgcreate "c1", "z1"')
    me("cfgsave", answers=["y"])
    other("cfgtransshow")
    assert other('cfgenable "c2"').text == '"c2" not found\n'


def test_cfgdisable_also_commits_the_session_transaction(fos, me):
    me(f'zonecreate "z1", "{WWN1}"')
    me('cfgcreate "c1", "z1"')
    enable(me, "c1")
    me(f'zonecreate "z2", "{WWN2}"')
    console = me("cfgdisable", answers=["y"])
    assert console.text.endswith("Updating flash ...\n")
    assert fos.zoning["effective"] is None
    assert "z2" in fos.zoning["defined"]["zones"]
    assert me("cfgtransshow").text == NONE_OPEN
    assert me("cfgactvshow").text == "Effective configuration:\nNo Effective configuration: (No Access)\n\n\n"


def test_cfgtransabort_drops_only_the_own_transaction(fos, me, other):
    assert me("cfgtransabort").text == NONE_OPEN
    me(f'zonecreate "z1", "{WWN1}"')
    assert other("cfgtransabort").text == NOT_YOURS
    assert me("cfgtransshow").text.endswith("It is abortable\n")
    console = me("cfgtransabort")
    assert console.text == ""
    assert me("cfgtransshow").text == NONE_OPEN
    assert "z1" not in me("cfgshow").text


def test_an_administrator_who_gives_the_token_aborts_another_sessions_transaction(fos, me, other):
    me(f'zonecreate "z1", "{WWN1}"')
    assert other("cfgtransabort 0x1234").text == NOT_YOURS
    assert other("cfgtransabort nonsense").text == "error: Usage: cfgTransAbort [token]\n"
    assert other(f"cfgtransabort {0x3109}").text == ""  # decimal works as well as hex
    assert me("cfgtransshow").text == NONE_OPEN
    me(f'zonecreate "z2", "{WWN2}"')
    assert other("cfgtransabort 0x310a").text == ""
    assert other(f'zonecreate "z3", "{WWN3}"').text == ""


def test_the_end_of_a_session_aborts_its_transaction(fos, me, other):
    me(f'zonecreate "z1", "{WWN1}"')
    other.end()  # another session leaving changes nothing
    assert other("cfgtransshow").text.endswith("It is not abortable\n")
    me.end()
    assert other("cfgtransshow").text == NONE_OPEN
    assert fos.zoning["defined"]["zones"] == {}


def test_each_transaction_gets_a_new_token(fos, me, other):
    me(f'zonecreate "z1", "{WWN1}"')
    me("cfgtransabort")
    other(f'zonecreate "z1", "{WWN1}"')
    assert other("cfgtransshow").text.startswith("Current transaction token is 0x310a\n")


def test_the_zoning_locked_fault_is_a_transaction_nobody_here_can_abort(fos, me):
    fos.faults = FaultBook([Fault("zoning_locked")])
    assert me("cfgtransshow").text == "Current transaction token is 0x5eed\nIt is not abortable\n"
    assert me(f'zonecreate "z1", "{WWN1}"').text == BUSY.format(0x5EED)
    assert me("cfgsave").text == BUSY.format(0x5EED)
    assert me("defzone --noaccess").text == BUSY.format(0x5EED)
    assert me("cfgtransabort").text == NOT_YOURS
    assert me("cfgtransabort 0x5eed").text == NOT_YOURS
    assert me("cfgtransshow").text.startswith("Current transaction token is 0x5eed")  # checks spend nothing
    fos.faults.set([])
    assert me("cfgtransshow").text == NONE_OPEN
    assert me(f'zonecreate "z1", "{WWN1}"').text == ""


def test_the_zoning_locked_fault_with_a_spent_count_is_disarmed(fos, me):
    fos.faults = FaultBook([Fault("zoning_locked", count=0)])
    assert me(f'zonecreate "z1", "{WWN1}"').text == ""


# --- default zone access ------------------------------------------------------------------------------


def test_defzone_shows_and_sets_the_default_zone_access(fos, me):
    assert me("defzone --show").text == "Default Zone Access Mode: No Access\n"
    console = me("defzone --allaccess", answers=["n"])
    assert console.questions == [
        "Do you want to set the Default Zone Access Mode to All Access ? (yes, y, no, n): [no] "]
    assert fos.zoning["default_access"] == "No Access"
    assert me("defzone --allaccess", answers=["y"]).text.endswith("Updating flash ...\n")
    assert me("defzone --show").text == "Default Zone Access Mode: All Access\n"
    assert me("cfgshow").text.endswith("No Effective configuration: (All Access)\n\n\n")
    assert fos.state.saved["zoning"]["default_access"] == "All Access"
    console = me("defzone --noaccess", answers=["yes"])
    assert console.questions == [
        "Do you want to set the Default Zone Access Mode to No Access ? (yes, y, no, n): [no] "]
    assert me("cfgactvshow").text == "Effective configuration:\nNo Effective configuration: (No Access)\n\n\n"
    assert me("defzone").text == "Usage: defzone [--noaccess | --allaccess | --show]\n"


# --- outputs ------------------------------------------------------------------------------------------


def test_cfgshow_and_cfgactvshow_keep_the_tab_separated_layout(fos, me):
    me(f'zonecreate "z1", "{WWN1}; {WWN2}; {WWN3}; 1,4"')
    me('cfgcreate "c1", "z1"')
    enable(me, "c1")
    show = me("cfgshow").text
    # Short names keep their first member on their own line; members are sorted and wrapped before
    # column 80 (two WWNs a line), a wrapped line ending in "; " (FOS 9 session logs, brocadesan).
    assert show == ("Defined configuration:\n"
                    " cfg:\tc1\tz1 \n"
                    f" zone:\tz1\t1,4; {WWN1}; {WWN2}; \n\t\t{WWN3} \n"
                    "\n"
                    "Effective configuration:\n"
                    " cfg:\tc1\t\n"
                    " zone:\tz1\t1,4\n"
                    f"\t\t{WWN1}\n\t\t{WWN2}\n\t\t{WWN3}\n\n")
    assert me("cfgactvshow").text == show[show.index("Effective"):]


# --- links ----------------------------------------------------------------------------------------


def test_pair_zones_of_a_link_make_one_link_with_its_initiators_and_targets(fos, me):
    add_tunnel(me)
    me(f'zonecreate "{pair(7, 24, HOST2)}", "{HOST2}; {TARGET}"')
    me(f'zonecreate "{pair(7, 24, HOST1)}", "{HOST1}; {TARGET}"')
    me(f'cfgcreate "PROD", "{pair(7, 24, HOST1)}"')
    enable(me, "PROD")
    [link] = fos.links()
    assert (link.port, link.zone, link.remote_ip, link.state) == (24, 7, "198.18.1.1", "down")  # one pair not in effect
    assert (link.initiators, link.targets) == ((HOST1, HOST2), (TARGET,))
    me(f'cfgadd "PROD", "{pair(7, 24, HOST2)}"')
    enable(me, "PROD")
    assert [link.state for link in fos.links()] == ["up"]
    me("portcfg fcipcircuit 24 modify 0 -a disable")
    assert [link.state for link in fos.links()] == ["down"]


def test_links_count_zones_in_effect_that_are_no_longer_defined_and_ignore_other_zones(fos, me):
    add_tunnel(me)
    add_tunnel(me, ve=25, remote="198.18.1.2")
    me(f'zonecreate "fz_z8_ve25", "{TARGET}"')
    me(f'zonecreate "prod_db", "{WWN1}; {WWN2}"')
    me('cfgcreate "PROD", "prod_db; fz_z8_ve25"')
    enable(me, "PROD")
    me('cfgremove "PROD", "fz_z8_ve25"')
    me('zonedelete "fz_z8_ve25"')
    me("cfgsave", answers=["y"])
    [link] = fos.links()
    assert (link.port, link.zone, link.state, link.targets) == (25, 8, "up", (TARGET,))


def test_an_uncommitted_zone_is_not_a_link_yet(fos, me):
    add_tunnel(me)
    me(f'zonecreate "{pair(7, 24, HOST1)}", "{HOST1}; {TARGET}"')
    assert fos.links() == []


# --- production zoning --------------------------------------------------------------------------------


def test_production_zoning_puts_prod_in_effect_and_on_flash(fos, me):
    fos.seed_production_zoning()
    effective = fos.zoning["effective"]
    assert effective["cfg"] == "PROD"
    assert effective["zones"] == {
        "prod_oradb1_vmax": ["10:00:00:90:fa:c7:43:10", "50:00:09:73:f0:2c:51:04"],
        "prod_backup1_tape": ["10:00:00:90:fa:c7:43:22", "50:01:04:f0:00:a1:b2:c3"],
    }
    assert fos.state.saved["zoning"] == fos.zoning
    assert me("cfgsave").text == "Nothing changed: nothing to save, returning ...\n"
    assert fos.links() == []


# --- over real SSH: two administrators ----------------------------------------------------------


PROMPT_OR_QUESTION = r"(?:\[no\]\s*$)|(?:>\s*$)"


class Admin:
    """A stock netmiko brocade_fos session."""

    def __init__(self, sim):
        host, port = sim.addresses["ssh"]
        self.conn = ConnectHandler(device_type="brocade_fos", host=host, port=port, username=USERNAME,
                                   password=PASSWORD, allow_agent=False, use_keys=False, ssh_config_file=None,
                                   conn_timeout=10)

    def __call__(self, command):
        return self.conn.send_command(command, expect_string=PROMPT_OR_QUESTION)

    def confirmed(self, command, answer="y"):
        output = self(command)
        assert output.rstrip().endswith("(yes, y, no, n): [no]"), output
        return output + self(answer)

    def close(self):
        self.conn.disconnect()

    def cut(self):
        """The connection drops without a goodbye (EOF on the switch's side)."""
        self.conn.remote_conn_pre.close()


@pytest.fixture
def switch(sim_factory):
    return sim_factory("brocade_fos", ssh=("127.0.0.1", 0))


@pytest.fixture
def admins(switch):
    opened = []

    def open_admin():
        admin = Admin(switch)
        opened.append(admin)
        return admin

    yield open_admin
    for admin in opened:
        try:
            admin.close()
        except Exception:  # noqa: BLE001 - a test may have cut it already
            pass


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_second_sessions_open_transaction_blocks_the_first_until_it_is_saved(switch, admins):
    first, second = admins(), admins()
    assert second(f'zonecreate "adm_pending", "{WWN1}"') == ""
    token = re.search(r"token is (0x[0-9a-f]+)", second("cfgtransshow")).group(1)
    assert first("cfgtransshow") == f"Current transaction token is {token}\nIt is not abortable"
    assert second("cfgtransshow") == f"Current transaction token is {token}\nIt is abortable"
    refused = f"Another zoning transaction is in progress (token {token}); try again later."
    assert first(f'zonecreate "flexzone", "{WWN2}"') == refused
    assert first("cfgsave") == refused
    assert "adm_pending" not in first("cfgshow")
    saved = second.confirmed("cfgsave")
    assert "Updating flash ..." in saved
    assert first("cfgtransshow") == "There is no outstanding zoning transaction"
    assert first(f'zonecreate "flexzone", "{WWN2}"') == ""
    assert switch.state().running["zoning"]["defined"]["zones"] == {"adm_pending": [WWN1]}


def test_a_second_sessions_abort_releases_the_switch(switch, admins):
    first, second = admins(), admins()
    second(f'zonecreate "adm_pending", "{WWN1}"')
    assert first(f'zonecreate "flexzone", "{WWN2}"').startswith("Another zoning transaction is in progress")
    assert second("cfgtransabort") == ""
    assert first(f'zonecreate "flexzone", "{WWN2}"') == ""


def test_a_transaction_is_aborted_when_its_session_disconnects(switch, admins):
    first, second = admins(), admins()
    second(f'zonecreate "adm_pending", "{WWN1}"')
    assert first("cfgtransshow").endswith("It is not abortable")
    second.cut()
    assert wait_for(lambda: first("cfgtransshow") == "There is no outstanding zoning transaction")
    assert first(f'zonecreate "flexzone", "{WWN2}"') == ""
    assert "adm_pending" not in first("cfgshow")


def test_the_zoning_locked_fault_blocks_edits_until_it_is_cleared(switch, admins):
    admin = admins()
    switch.faults = [Fault("zoning_locked")]
    assert admin("cfgtransshow") == "Current transaction token is 0x5eed\nIt is not abortable"
    assert admin(f'zonecreate "flexzone", "{WWN2}"') == BUSY.format(0x5EED).strip()
    switch.faults = []
    assert admin("cfgtransshow") == "There is no outstanding zoning transaction"
    assert admin(f'zonecreate "flexzone", "{WWN2}"') == ""


def test_cfgenable_and_cfgsave_prompts_are_answered_over_ssh(switch, admins):
    admin = admins()
    admin(f'zonecreate "z1", "{WWN1}"')
    admin('cfgcreate "c1", "z1"')
    declined = admin.confirmed('cfgenable "c1"', answer="n")
    assert "Do you want to enable 'c1' configuration  (yes, y, no, n): [no]" in declined
    assert switch.state().running["zoning"]["effective"] is None
    assert 'zone config "c1" is in effect' in admin.confirmed('cfgenable "c1"')
    admin(f'zonecreate "z2", "{WWN2}"')
    assert "Do you want to save the Defined zoning configuration only?" in admin.confirmed("cfgsave")
    assert "z2" in switch.state().saved["zoning"]["defined"]["zones"]


def test_cfgshow_and_cfgactvshow_keep_their_tabs_over_ssh(switch, admins):
    admin = admins()
    admin(f'zonecreate "z1", "{WWN1}; {WWN2}"')
    admin('cfgcreate "c1", "z1"')
    admin.confirmed('cfgenable "c1"')
    assert f" zone:\tz1\t{WWN1}; {WWN2} \n" in admin("cfgshow")
    assert admin("cfgactvshow") == f"Effective configuration:\n cfg:\tc1\t\n zone:\tz1\t{WWN1}\n\t\t{WWN2}\n"


def test_the_session_limit_still_refuses_a_session_too_many(sim_factory):
    switch = sim_factory("brocade_fos", telnet=("127.0.0.1", 0), max_sessions=1)
    host, port = switch.addresses["telnet"]
    with socket.create_connection((host, port), timeout=5) as first:
        first.settimeout(5)
        greeting = b""
        while b"login: " not in greeting:  # after telnet option negotiation: the session counts
            greeting += first.recv(4096)
        with socket.create_connection((host, port), timeout=5) as second:
            second.settimeout(5)
            refused = b""
            while chunk := second.recv(4096):
                refused += chunk
    assert b"Maximum number of remote sessions for login admin (32) exceeded. Connection closed." in refused


# --- over real SSH: a simulator process ---------------------------------------------------------------


def process_admin(process):
    return Admin(process)


def test_production_zoning_is_seeded_once_and_survives_a_restart(sim_process_factory, tmp_path):
    first = sim_process_factory("brocade_fos", state_dir=tmp_path, ssh="127.0.0.1:0", args=["--production-zoning"])
    admin = process_admin(first)
    active = admin("cfgactvshow")
    # Zones in the order FOS lists them (sorted), members one per line below a long zone name.
    assert active.startswith("Effective configuration:\n cfg:\tPROD\t\n zone:\tprod_backup1_tape\t\n")
    assert "\n zone:\tprod_oradb1_vmax\t\n\t\t10:00:00:90:fa:c7:43:10\n" in active
    assert "\t\t50:01:04:f0:00:a1:b2:c3" in active
    admin('cfgremove "PROD", "prod_backup1_tape"')
    admin.confirmed('cfgenable "PROD"')
    admin.close()
    assert first.stop() == 0
    second = sim_process_factory("brocade_fos", state_dir=tmp_path, ssh="127.0.0.1:0", args=["--production-zoning"])
    admin = process_admin(second)
    active = admin("cfgactvshow")
    admin.close()
    assert " cfg:\tPROD\t" in active and "prod_oradb1_vmax" in active
    assert "prod_backup1_tape" not in active  # the existing state was kept, not seeded again


def test_zoning_locked_armed_on_the_command_line_is_cleared_through_the_faults_file(sim_process_factory, tmp_path):
    process = sim_process_factory("brocade_fos", state_dir=tmp_path, ssh="127.0.0.1:0",
                                  args=["--fault", "zoning_locked"])
    admin = process_admin(process)
    try:
        assert admin(f'zonecreate "z1", "{WWN1}"') == BUSY.format(0x5EED).strip()
        write_faults(tmp_path, [])
        assert admin(f'zonecreate "z1", "{WWN1}"') == ""
        write_faults(tmp_path, [Fault("zoning_locked")])
        assert admin("cfgtransshow").startswith("Current transaction token is 0x3109")  # our own is shown
        assert admin("cfgsave") == BUSY.format(0x5EED).strip()
    finally:
        admin.close()

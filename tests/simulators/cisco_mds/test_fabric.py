"""The fabric state around the MDS simulator's zoning: how the full database is distributed (``zoneset
distribute full``), emptied (``clear zone database``) and rebuilt from the active zoneset (``zone copy
active-zoneset full-zoneset``), and the production-sized fabrics ``--fabric-size N`` seeds.

A basic-mode switch whose full database is empty while a zoneset is active is what a real fabric with
``distribute: active only`` looks like on a switch that did not activate it; these tests reproduce that
state and its fix.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from routers.drivers.cisco_mds_show import (
    parse_active_zoneset,
    parse_device_aliases,
    parse_zone_status,
    parse_zones,
    parse_zoneset_brief,
    resolve,
)
from simulators.__main__ import build_parser
from simulators.cisco_mds import MdsPersonality
from simulators.cisco_mds.fabric import PROD_ZONES
from simulators.personality import SimState
from tests.support.recording_console import Login

HOST, ARRAY = "10:00:00:10:9b:5e:b0:01", "50:00:09:72:08:1a:f1:04"
BUSY = "Lock is currently busy\n"
CREATED = "Enhanced zone session has been created. Please 'commit' the changes when done.\n"


@pytest.fixture
def mds():
    return MdsPersonality(SimState(), "mds1")


def login(mds, session_id=1, username="admin"):
    cli = Login(mds, session_id, username, paging=False)
    cli("terminal dont-ask")
    return cli


@pytest.fixture
def me(mds):
    return login(mds)


def distribute(cli, vsan=1):
    return re.search(r"distribute: (.+?) Interop:", cli(f"show zone status vsan {vsan}").text).group(1)


def prod_with_an_fcalias(cli):
    """PROD active in VSAN 1 (basic mode), its zone naming its array port through an fcalias."""
    cli.script(["configure terminal", "fcalias name arrayA vsan 1", f"member pwwn {ARRAY}", "exit",
                "zone name prod1 vsan 1", f"member pwwn {HOST}", "member fcalias arrayA", "exit",
                "zoneset name PROD vsan 1", "member prod1", "exit", "zoneset activate name PROD vsan 1", "end"])


# --- distribute, clear, copy ---------------------------------------------------------------------------


def test_basic_mode_distributes_the_active_zoneset_only_until_told_full(mds, me):
    assert distribute(me) == "active only"
    me.script(["configure terminal", "zoneset distribute full vsan 1", "end"])
    assert distribute(me) == "full"
    assert mds.running["zoneset_distribute"] == {"1": "full"}
    assert "\nzoneset distribute full vsan 1\n" in me("show running-config").text
    me.script(["configure terminal", "no zoneset distribute full vsan 1", "end"])
    assert distribute(me) == "active only"
    assert "zoneset distribute" not in me("show running-config").text


def test_enhanced_mode_always_distributes_the_full_database(me):
    me.script(["configure terminal", "zone mode enhanced vsan 2", "end"])
    assert distribute(me, 2) == "full"


def test_clear_zone_database_empties_the_full_database_and_keeps_the_active_zoneset(mds, me):
    prod_with_an_fcalias(me)
    assert me("clear zone database vsan 1").text == ""
    assert me("show zone vsan 1").text == "Zone not present\n"
    assert me("show zoneset brief vsan 1").text == "Zoneset not present\n"
    assert me("show fcalias vsan 1").text == ""
    assert mds.running["active"]["1"] == {"name": "PROD", "zones": {"prod1": [HOST, ARRAY]}}
    status = parse_zone_status(me("show zone status vsan 1").text, 1)
    assert (status.mode, status.distribute) == ("basic", "active only")
    assert "    Zonesets:  0 Zones: 0 Aliases: 0\n" in me("show zone status vsan 1").text


def test_zone_copy_rebuilds_the_full_database_from_the_active_zoneset(mds, me):
    prod_with_an_fcalias(me)
    me("clear zone database vsan 1")
    assert me("zone copy active-zoneset full-zoneset vsan 1").text == ""
    assert mds.running["zones"]["1"] == {"prod1": [HOST, ARRAY]}  # the fcalias comes back expanded
    assert mds.running["zonesets"]["1"] == {"PROD": ["prod1"]}
    assert me("show zoneset brief vsan 1").text == "zoneset name PROD vsan 1\n  zone prod1\n"
    assert me("zone copy active-zoneset full-zoneset vsan 2").text == "Zoneset not present\n"


def test_zone_copy_replaces_same_named_zones_and_keeps_the_others(mds, me):
    prod_with_an_fcalias(me)
    me.script(["configure terminal", "zone name prod1 vsan 1", "no member fcalias arrayA", "exit",
               "zone name spare vsan 1", f"member pwwn {ARRAY}", "end"])
    me("zone copy active-zoneset full-zoneset vsan 1")
    assert mds.running["zones"]["1"] == {"prod1": [HOST, ARRAY], "spare": [ARRAY]}
    assert mds.running["fcaliases"]["1"] == {"arrayA": [ARRAY]}
    assert me.personality.is_mutating(me.session, "zone copy active-zoneset full-zoneset vsan 1")


def test_in_enhanced_mode_clear_and_copy_are_edits_under_the_lock(mds, me):
    prod_with_an_fcalias(me)
    me.script(["configure terminal", "zone mode enhanced vsan 1", "end"])
    assert me("clear zone database vsan 1").text == CREATED
    assert "prod1" in mds.running["zones"]["1"]
    other = login(mds, 2, "bob")
    assert other("zone copy active-zoneset full-zoneset vsan 1").text == BUSY
    assert other("clear zone database vsan 1").text == BUSY
    assert me("zone copy active-zoneset full-zoneset vsan 1").text == ""
    me.script(["configure terminal", "zone commit vsan 1", "end"])
    assert mds.running["zones"]["1"] == {"prod1": [HOST, ARRAY]}
    assert mds.running["fcaliases"]["1"] == {}


# --- seeded fabrics ------------------------------------------------------------------------------------


def test_a_seeded_fabric_mixes_member_kinds_and_shares_array_ports(mds, me):
    mds.seed_production_zoning()
    mds.seed_fabric(60)
    zones = mds.running["zones"]["1"]
    assert len(zones) == 62 and set(PROD_ZONES) <= set(zones)
    foreign = [members for name, members in zones.items() if name.startswith("z1_")]
    kinds = [" ".join(sorted({m.split(" ")[0] if " " in m else "pwwn" for m in members})) for members in foreign]
    assert {kind: kinds.count(kind) for kind in set(kinds)} == {"pwwn": 20, "device-alias": 20, "fcalias": 20}
    assert all(len(members) == 2 for members in foreign)
    array_ports = [name.split("_", 3)[3] for name in zones if name.startswith("z1_")]
    assert len(set(array_ports)) == 10  # each array port serves six zones (as pwwn, device-alias or fcalias)
    assert mds.running["zonesets"]["1"]["PROD"] == list(zones)
    assert mds.running["active"]["1"]["name"] == "PROD" and len(mds.running["active"]["1"]["zones"]) == 62
    assert len(mds.running["logged_in"]) == 4 + 10 + 54  # production devices, array ports, 9 hosts in 10
    assert "mode: basic" in me("show zone status vsan 1").text
    assert mds.state.saved == mds.state.running


def test_a_seeded_fabric_is_the_same_every_time(mds):
    mds.seed_fabric(30)
    again = MdsPersonality(SimState(), "mds1")
    again.seed_fabric(30)
    assert json.dumps(mds.running, sort_keys=True) == json.dumps(again.running, sort_keys=True)


def test_the_drivers_parsers_read_a_seeded_fabric_as_one_consistent_vsan(mds, me):
    mds.seed_production_zoning()
    mds.seed_fabric(90)
    zones = parse_zones(me("show zone vsan 1").text, 1)
    name, active = parse_active_zoneset(me("show zoneset active vsan 1").text, 1)
    brief = parse_zoneset_brief(me("show zoneset brief vsan 1").text, 1)
    aliases = parse_device_aliases(me("show device-alias database").text)
    assert name == "PROD" and brief["PROD"] == list(zones)
    assert {zone: resolve(members, aliases) for zone, members in zones.items()} == {
        zone: resolve(members, aliases) for zone, members in active.items()}
    assert re.search(r"^  \* fcid 0x1e[0-9a-f]{4} \[device-alias \w+\]$", me("show zoneset active vsan 1").text, re.M)


def test_two_thousand_zones_are_seeded_and_shown_in_well_under_a_second(mds, me):
    started = time.monotonic()
    mds.seed_fabric(2000)
    shown = [me(command).text for command in ("show zone vsan 1", "show zoneset active vsan 1",
                                              "show running-config")]
    assert time.monotonic() - started < 1.0
    assert shown[0].count("zone name ") == 2000


def test_the_fabric_size_option_seeds_a_new_state_only(sim_process_factory, tmp_path):
    assert build_parser().parse_args(["--platform", "cisco_mds", "--fabric-size", "40"]).fabric_size == 40
    first = sim_process_factory("cisco_mds", state_dir=tmp_path, ssh="127.0.0.1:0",
                                args=["--fabric-size", "40", "--production-zoning"])
    first.stop()  # the seeded state is written before the switch serves anyone
    state = json.loads((tmp_path / "state.json").read_text())
    assert len(state["running"]["active"]["1"]["zones"]) == 42
    assert state["saved"]["zones"] == state["running"]["zones"]
    second = sim_process_factory("cisco_mds", state_dir=tmp_path, ssh="127.0.0.1:0", args=["--fabric-size", "5"])
    second.stop()
    assert len(json.loads((tmp_path / "state.json").read_text())["running"]["zones"]["1"]) == 42

"""Every parser of the FCIP drivers on layouts taken from real switch output (tests/support/real_layouts/).

Each fixture names the public capture its layout comes from; the data in it is ours. A parser must read
each fixture of its command into what the switch meant (EXPECTED), and must refuse, with LayoutError
naming a line, the fixtures of every other command: a reply that is not what it asked for is never
half-read into a wrong picture of the switch. tests/simulators/test_real_layouts.py checks that the
simulators print these layouts.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from routers.drivers.base import LayoutError
from routers.drivers.brocade_fos_show import (
    parse_cfgshow,
    parse_cfgtransshow,
    parse_circuit_details,
    parse_tunnel_table,
)
from routers.drivers.cisco_mds_show import (
    parse_active_zoneset,
    parse_device_aliases,
    parse_fcip_config,
    parse_zone_status,
    parse_zones,
    parse_zoneset_brief,
)
from tests.support.real_layouts import FIXTURES, load, name


def command_of(path: Path) -> str:
    return load(path)[0]["command"]


def vsan_of(path: Path) -> int:
    return int(load(path)[0].get("vsan", "1"))


# The command each parser reads, and how it is called on a fixture.
PARSERS: dict[str, Any] = {
    "cfgshow": lambda text, path: parse_cfgshow(text),
    "cfgtransshow": lambda text, path: parse_cfgtransshow(text),
    "portshow fciptunnel all -c": lambda text, path: parse_tunnel_table(text),
    "portcfgshow fcipcircuit all": lambda text, path: parse_circuit_details(text),
    "show zone status vsan N": lambda text, path: parse_zone_status(text, vsan_of(path)),
    "show zone vsan N": lambda text, path: parse_zones(text, vsan_of(path)),
    "show zoneset brief vsan N": lambda text, path: parse_zoneset_brief(text, vsan_of(path)),
    "show zoneset active vsan N": lambda text, path: parse_active_zoneset(text, vsan_of(path)),
    "show device-alias database": lambda text, path: parse_device_aliases(text),
    "show running-config fcip": lambda text, path: parse_fcip_config(text),
}


def summary(result: Any) -> Any:
    """What a parse result says, as plain data to compare with EXPECTED."""
    if hasattr(result, "__dataclass_fields__"):
        return prune(asdict(result))
    if isinstance(result, dict):
        return {key: summary(value) for key, value in result.items()}
    if isinstance(result, tuple):
        return tuple(summary(value) for value in result)
    return result


def prune(data: Any) -> Any:
    """Dataclass fields left at their empty defaults say nothing: leave them out."""
    if isinstance(data, dict):
        return {key: prune(value) for key, value in data.items() if value not in ({}, None, "")}
    return data


DLM = ["50:00:09:72:c0:11:a4:06", "50:00:09:72:c0:11:a4:46", "50:00:09:72:c0:11:b0:06", "50:00:09:72:c0:11:b0:46"]
SRDF = ["50:00:09:73:a0:06:c8:08", "50:00:09:73:a0:06:c8:09", "50:00:09:73:a0:06:c8:88",
        "50:00:09:73:a0:06:d8:08", "50:00:09:73:a0:06:d8:09", "50:00:09:73:a0:06:d8:88"]
SYNERGY = "SynergyZone_esx14bay07a1c2e9__null_VPC_N2__S_Auto_FABRICAPRIMARY"
ZONE_B = ["50:01:43:80:00:aa:01:00", "50:01:43:80:00:aa:02:60", "50:01:43:80:00:aa:03:18", "50:01:43:80:00:aa:04:70"]

EXPECTED: dict[str, Any] = {
    "fos/cfgshow__fos9_aliases_wrapped.txt": {
        "configs": {"DRS_A": ["DRSITE_DLM_2001_2004", "DRSITE_SRDF_0521_0526"]},
        # 8 aliases, 6 WWNs: the defined side resolves and removes duplicates as the switch does.
        "zones": {"DRSITE_DLM_2001_2004": DLM, "DRSITE_SRDF_0521_0526": SRDF},
        "in_effect": "DRS_A",
        "active": {"DRSITE_DLM_2001_2004": DLM, "DRSITE_SRDF_0521_0526": SRDF},
        "default_access": "No Access", "aliases_count": 12,
    },
    "fos/cfgshow__fos9_empty_fabric.txt": {"configs": {}, "zones": {}, "in_effect": None, "active": {},
                                            "default_access": "No Access", "aliases_count": 0},
    "fos/cfgshow__fos9_defined_not_in_effect.txt": {
        "configs": {}, "zones": {"REPL_C_SRDF_0611_0617": sorted(["REPL_C_SRDF_0611_3_10", "REPL_C_SRDF_0611_3_9",
                                                                  "REPL_C_SRDF_0617_3_10", "REPL_C_SRDF_0617_3_9"])},
        "in_effect": None, "active": {}, "default_access": "No Access", "aliases_count": 0,
    },
    "fos/cfgshow__fos5_short_names_ports.txt": {
        "configs": {"cfgA": ["hostA_a", "hostA_b", "hostB_a"]},
        "zones": {"hostA_a": ["2,4", "2,6"], "hostA_b": ["2,4", "2,7"], "hostB_a": ["10:00:00:90:fa:02:11:0c", "2,4"]},
        "in_effect": "cfgA",
        "active": {"hostA_a": ["2,4", "2,6"], "hostA_b": ["2,4", "2,7"], "hostB_a": ["10:00:00:90:fa:02:11:0c", "2,4"]},
        "default_access": "No Access", "aliases_count": 2,
    },
    "fos/cfgshow__fos6_nothing_in_effect.txt": {"configs": {}, "zones": {}, "in_effect": None, "active": {},
                                                "default_access": "unknown", "aliases_count": 0},
    "fos/cfgshow__fos9_very_long_names.txt": {
        "configs": {"FABRIC_A_PROD": [SYNERGY, "zoneq1"]},
        "zones": {SYNERGY: ["10:00:2e:c0:14:83:21:20", "20:21:00:02:ac:02:88:b9", "21:21:00:02:ac:02:88:b9"],
                  "zoneq1": ["10:00:00:90:fa:aa:00:01", "50:00:09:73:00:00:00:01"]},
        "in_effect": "FABRIC_A_PROD",
        "active": {SYNERGY: ["10:00:2e:c0:14:83:21:20", "20:21:00:02:ac:02:88:b9", "21:21:00:02:ac:02:88:b9"],
                   "zoneq1": ["10:00:00:90:fa:aa:00:01", "50:00:09:73:00:00:00:01"]},
        "default_access": "No Access", "aliases_count": 5,
    },
    "fos/cfgshow__brocadesan_mixed_placement.txt": {
        "configs": {"SAN_B_MAIN": ["zb1", "zb2", "zb3"]},
        "zones": {"zb1": ZONE_B[:2], "zb2": [ZONE_B[0], ZONE_B[2]], "zb3": ZONE_B[2:], "zb5": [ZONE_B[0], ZONE_B[3]]},
        "in_effect": "SAN_B_MAIN",
        "active": {"zb1": ZONE_B[:2], "zb2": [ZONE_B[0], ZONE_B[2]], "zb3": ZONE_B[2:]},
        "default_access": "No Access", "aliases_count": 4,
    },
    "fos/cfgtransshow__none.txt": None,
    "fos/cfgtransshow__fosexec_none.txt": None,
    "fos/cfgtransshow__decimal_token_abortable.txt": {"token": "274932201", "abortable": True},
    "fos/cfgtransshow__hex_token_not_abortable.txt": {"token": "0x5eed", "abortable": False},
    "fos/portshow_fciptunnel_all_c__blade_lifetime.txt": {
        "3/16": {"ve": "3/16", "oper": "Up", "circuits": {0: {"oper": "Up", "ge": "3/ge2", "enabled": True},
                                                          1: {"oper": "Degrade", "ge": "3/ge10", "enabled": True}}},
        "12/16": {"ve": "12/16", "oper": "UpWarn", "circuits": {0: {"oper": "Up", "ge": "12/ge2", "enabled": True}}},
        "12/17": {"ve": "12/17", "oper": "InProg"},
    },
    "fos/portshow_fciptunnel_all_c__7840.txt": {
        "24": {"ve": "24", "oper": "Up", "circuits": {0: {"oper": "Up", "ge": "ge2", "enabled": True}}},
        "26": {"ve": "26", "oper": "Empty"},
    },
    "fos/portcfgshow_fcipcircuit_all__reconstructed.txt": {
        ("24", 0): {"enabled": True, "local_ip": "198.18.0.1", "remote_ip": "198.18.1.1"},
        ("24", 1): {"enabled": False, "local_ip": "198.18.0.2", "remote_ip": "198.18.1.2"},
        ("31", 0): {"enabled": True, "local_ip": "fd00:18::1", "remote_ip": "fd00:19::1"},
    },
    "mds/zone_status__basic_active_only.txt": {
        "mode": "basic", "status": "Activation completed at 09:12:44 UTC Mar 11 2024", "default_zone": "deny",
        "distribute": "active only"},
    "mds/zone_status__enhanced_full.txt": {
        "mode": "enhanced", "status": "Commit completed at 10:19:02 UTC Jul  5 2024", "default_zone": "deny",
        "distribute": "full"},
    "mds/zone_status__failed_status_wrapped.txt": {
        "mode": "enhanced", "default_zone": "permit", "distribute": "full",
        "status": "Operation failed: [Error: WARNING: Specified zoneset already active and unchanged]:"},
    "mds/zone_status__older_build_one_space.txt": {
        "mode": "basic", "status": "Activation completed at 22:19:08 PDT Apr 13 2024", "default_zone": "deny",
        "distribute": "full"},
    "mds/zone_status__single_session_nothing_active.txt": {"mode": "basic", "default_zone": "deny",
                                                           "distribute": "active only"},
    "mds/zone_status__nexus5k_short.txt": {
        "mode": "enhanced", "status": "Commit completed at 09:48:48 UTC May 10 2017", "default_zone": "deny",
        "distribute": "full"},
    "mds/show_zone__fcalias_and_device_alias.txt": {
        "z50_esx0101_f0_unity07_spa1": ["50:06:01:61:47:e4:aa:97", "c0:50:76:09:aa:20:00:64"],
        # fcalias blocks are replaced by the pwwns printed under them.
        "z50_sap0001_san01-ntap01_0ac": ["20:12:00:a0:98:fa:aa:6e", "20:32:00:a0:98:fa:aa:6e",
                                         "21:00:f4:e9:d4:aa:6e:66"],
        "z50_sap0002_san01-ntap01_0ac": ["20:12:00:a0:98:fa:aa:6e", "21:00:f4:e9:d4:aa:a7:c8"],
    },
    "mds/show_zone__smart_zoning_types.txt": {
        "zoneA": ["11:22:33:44:55:66:77:01", "device-alias arrayA_p1 both"],
        "SZ-WLD-APP1-ARRAY07": ["20:00:00:25:b5:10:aa:00 init", "20:00:00:25:b5:10:aa:01 init",
                                "50:00:09:73:00:10:aa:01 target"],
    },
    "mds/show_zone__empty_zone_and_mixed.txt": {
        "temp": ["50:0a:09:89:aa:89:93:0a"], "SPARE_ARRAY": [],
        "zone6": ["20:01:74:86:aa:d7:df:4d", "50:06:09:60:3e:aa:39:dc", "50:09:01:61:3e:aa:39:dc"],
        "Zone_App1": ["20:01:74:76:aa:d7:cb:59", "50:00:d3:17:00:aa:c4:24"],
    },
    "mds/show_zone__not_present.txt": {},
    "mds/show_zoneset_brief__names_only.txt": {"Zoneset_App": ["Zone_App1", "abcde6", "abcde1"],
                                               "Zoneset_Old": ["temp"]},
    "mds/show_zoneset_active__fcid_and_offline.txt": ("zs_fabric_a", {
        "z50_esx0101_f0_unity07_spa1": ["50:06:01:61:47:e4:aa:97", "c0:50:76:09:aa:20:00:64"],
        "z50_sap0001_san01-ntap01_0ac": ["20:12:00:a0:98:fa:aa:6e", "20:32:00:a0:98:fa:aa:6e",
                                         "21:00:f4:e9:d4:aa:6e:66"],
        "z50_sap0002_san01-ntap01_0ac": ["20:12:00:a0:98:fa:aa:6e", "21:00:f4:e9:d4:aa:a7:c8"],
        "z50_retired_host": [],
        "z50_db0042_f1_unity07_spb0": ["50:06:01:68:47:e4:aa:97", "c0:50:76:09:aa:20:00:35"],
    }),
    "mds/show_zoneset_active__device_alias_members.txt": ("ZS_POD12", {
        "Z_POD12": ["50:0a:09:81:86:78:aa:ca", "device-alias SRV_POD12", "device-alias SRV_POD13"]}),
    "mds/show_zoneset_active__not_present.txt": (None, {}),
    "mds/show_device_alias_database__trailing_spaces.txt": {
        "test": "20:00:00:25:b1:aa:00:01", "Conflict": "20:00:00:25:b1:aa:00:02",
        "SRV_POD12": "20:00:00:25:b5:55:aa:12", "Server-24": "20:00:00:25:b5:55:aa:24"},
    "mds/show_running_config_fcip__reconstructed.txt": {
        "interfaces": {8: {"shutdown": "no", "profile": "8", "peer": "198.18.1.32"}}, "profiles": {8: "198.18.0.8"}},
}


def comparable(path: Path, result: Any) -> Any:
    data = summary(result)
    if command_of(path) == "cfgshow":
        data = {"configs": result.configs, "zones": result.zones, "in_effect": result.in_effect,
                "active": result.active, "default_access": result.default_access,
                "aliases_count": len(result.aliases)}
    return data


def test_every_fixture_names_its_command_source_and_layout_and_has_an_expectation():
    assert FIXTURES
    for path in FIXTURES:
        fields, body = load(path)
        assert fields.get("command") in PARSERS, name(path)
        assert fields.get("source") and fields.get("layout"), f"{name(path)}: say where the layout comes from"
        assert body.strip(), name(path)
        assert name(path) in EXPECTED, f"{name(path)}: no expectation"
    assert set(EXPECTED) == {name(path) for path in FIXTURES}


@pytest.mark.parametrize("path", FIXTURES, ids=name)
def test_each_parser_reads_what_the_switch_meant(path):
    _fields, body = load(path)
    result = PARSERS[command_of(path)](body, path)
    assert comparable(path, result) == EXPECTED[name(path)]


def other_commands() -> list[tuple[Path, str]]:
    """(fixture, command) for every parser whose command does not print that fixture's layout."""
    pairs = []
    for path in FIXTURES:
        printed_by = (command_of(path), load(path)[0].get("also"))
        pairs += [(path, command) for command in sorted(PARSERS) if command not in printed_by]
    return pairs


@pytest.mark.parametrize(("path", "command"), other_commands(), ids=lambda v: name(v) if isinstance(v, Path) else v)
def test_each_parser_refuses_every_other_commands_output(path, command):
    _fields, body = load(path)
    with pytest.raises(LayoutError) as refused:
        PARSERS[command](body, path)
    assert refused.value.line in body or refused.value.line.strip() in body


@pytest.mark.parametrize("path", FIXTURES, ids=name)
def test_a_damaged_reply_is_read_or_refused_never_a_crash(path):
    """Lines lost and characters flipped on the way (what the simulators' garble fault does): the parser
    reads what is left or refuses it with LayoutError; no other error escapes it. Whether what is left
    still makes sense is the driver's to judge (staged changes, members per zone), not the parser's."""
    import random

    _fields, body = load(path)
    parse = PARSERS[command_of(path)]
    lines = body.splitlines(keepends=True)
    rng = random.Random(name(path))
    damaged = ["".join(lines[:cut] + lines[cut + 1:]) for cut in range(len(lines))]
    for _ in range(40):
        chars = list(body)
        for index in rng.sample(range(len(chars)), k=max(1, len(chars) // 30)):
            if chars[index] != "\n":
                chars[index] = rng.choice("$&*@~^?!;: \t")
        damaged.append("".join(chars))
    for text in damaged:
        try:
            parse(text, path)
        except LayoutError:
            pass

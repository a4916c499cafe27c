"""``show running-config`` / ``startup-config`` (and ``show running-config fcip | interface fcipN``) as an
MDS 9148S on NX-OS 9.4(2a) prints them, rendered from the simulator's state.

The order and indentation follow a real 9148S running-config (public, 2025) and a dCloud MDS capture:
the ``!Command``/``!Running configuration last done at``/``!Time`` header, version, the default
role/user/SNMP/RMON lines every switch carries (with the simulator's own fake password hash and
localized key), ``vsan database``, the ``device-alias database`` block ending ``device-alias
commit``, ``fcdomain fcid database`` with a ``!  [alias]`` comment under an aliased device, then per
VSAN ``!Active Zone Database Section`` (the active zoneset, members expanded, ``zoneset activate``,
``do clear zone database``) directly followed by ``!Full Zone Database Section`` (absent when the
full database is empty); zone members at four spaces with ``member``. Three blank lines, mgmt0, the
port VSANs, switchname, lines and boot images, a bare ``interface fc1/N`` line per port, then each
port's block. [R] (no capture shows them): where ``fcalias`` blocks, ``zone mode enhanced``, ``zone
default-zone permit`` and ``zoneset distribute full`` sit, the fcip profile and interface blocks
(after the ports, two-space sub-commands), ``show running-config fcip`` and the startup-config
header.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from simulators.cisco_mds.fabric import fcids
from simulators.cisco_mds.zoning import Members, member_spec
from simulators.cisco_mds.zoning_show import by_vsan

VERSION = "9.4(2a)"
BOOT_KICKSTART = "bootflash:/m9148-s6ek9-kickstart-mz.9.4.2a.bin"
BOOT_SYSTEM = "bootflash:/m9148-s6ek9-mz.9.4.2a.bin"
FC_PORTS = 48
CABLED_PORTS = 12  # fc1/1-12 are in use (no shutdown); the others stay shut
MGMT_ADDRESS = "192.0.2.10"
GATEWAY = "192.0.2.1"
CRYPT_ALPHABET = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
RMON_LEVELS = (("FATAL", "FATAL"), ("CRITICAL", "CRITICAL"), ("ERROR", "ERROR"), ("WARNING", "WARNING"),
               ("INFORMATION", "INFO"))
ROLE_RULES = ("environment", "hardware", "module", "snmp", "system")
TRAPS = (
    "license", "entity fru", "rf redundancy_framework", "fcdomain", "zone merge-failure", "zone merge-success",
    "zone default-zone-behavior-change", "zone unsupp-mem", "zone enhanced-zone-db-change",
    "system Clock-change-notification", "feature-control ciscoFeatOpStatusChange", "syslog message-generated",
)


def stamp(seconds: float) -> str:
    """``Mon Dec 15 13:18:41 2025`` (the day padded with a space, as ctime)."""
    return time.asctime(time.gmtime(seconds))


def header(command: str, changed_at: float, saved_at: float | None = None) -> list[str]:
    """The comment lines a configuration starts with, a blank line before and after them (as captured)."""
    lines = ["", f"!Command: {command}"]
    if saved_at is None:
        lines += [f"!Running configuration last done at: {stamp(changed_at)}", f"!Time: {stamp(time.time())}"]
    else:
        lines += [f"!Time: {stamp(time.time())}", f"!Startup config saved at: {stamp(saved_at)}"]  # [R]
    return [*lines, ""]


def fake_secret(hostname: str, purpose: str, alphabet: str, length: int) -> str:
    """A made-up but stable secret of the switch (never a real hash of anything that logs in)."""
    digest = hashlib.sha512(f"{purpose}:{hostname}".encode()).digest()
    return "".join(alphabet[byte % len(alphabet)] for byte in digest[:length])


def render_config(config: dict[str, Any], hostname: str, which: str, changed_at: float,
                  saved_at: float | None = None) -> str:
    """The whole configuration `config` (running, or with `saved_at` the startup copy)."""
    lines = header(f"show {which}", changed_at, saved_at)
    lines += [f"version {VERSION}", "power redundancy-mode redundant", "system default switchport trunk mode off"]
    lines += [f"feature {name}" for name in sorted({"telnet", *config.get("features", [])})]
    lines += ["role name default-role", "  description This is a system defined role and applies to all users."]
    lines += [f"  rule {5 - index} permit show feature {rule}" for index, rule in enumerate(ROLE_RULES)]
    salt = fake_secret(hostname, "salt", CRYPT_ALPHABET, 16)
    digest = fake_secret(hostname, "password", CRYPT_ALPHABET, 43)
    key = fake_secret(hostname, "snmp", "0123456789abcdef", 32)
    lines += [f"username admin password 5 $5${salt}${digest}  role network-admin", "ip domain-lookup",
              f"ip host {hostname}  {MGMT_ADDRESS}",
              f"snmp-server user admin network-admin auth md5 0x{key} priv aes-128 0x{key} localizedkey"]
    lines += [f"rmon event {n} log trap public description {level}({n}) owner PMON@{owner}"
              for n, (level, owner) in enumerate(RMON_LEVELS, start=1)]
    lines += [f"snmp-server enable traps {trap}" for trap in TRAPS]
    lines.append("snmp-server community public group network-operator")
    vsans = sorted((int(v), info) for v, info in config.get("vsans", {}).items() if v != "1")
    if vsans:
        lines += ["vsan database", *(f'  vsan {v} name "{info["name"]}"' for v, info in vsans)]
    lines += device_alias_lines(config) + fcdomain_lines(config) + zoning_lines(config)
    while lines[-1] == "":
        lines.pop()
    lines += ["", "", "", "interface mgmt0", f"  ip address {MGMT_ADDRESS} 255.255.255.0"]
    members = [(v, port) for v, info in vsans for port in info.get("interfaces", [])]
    if members:
        lines += ["vsan database", *(f"  vsan {v} interface {port}" for v, port in members)]
    lines += [f"switchname {hostname}", "line console", "line vty", f"boot kickstart {BOOT_KICKSTART}",
              f"boot system {BOOT_SYSTEM}"]
    lines += [f"interface fc1/{port}" for port in range(1, FC_PORTS + 1)]
    blocks = [[f"interface fc1/{port}", "  port-license acquire", *(["  no shutdown"] if port <= CABLED_PORTS else [])]
              for port in range(1, FC_PORTS + 1)]
    blocks += fcip_blocks(config)
    for block in blocks:
        lines += ["", *block]
    lines.append(f"ip default-gateway {GATEWAY}")
    return "\n".join(lines) + "\n"


def render_fcip(config: dict[str, Any], changed_at: float) -> str:
    """``show running-config fcip`` [R]: the header, version, ``feature fcip`` and the FCIP blocks."""
    lines = [*header("show running-config fcip", changed_at), f"version {VERSION}"]
    if "fcip" in config.get("features", []):
        lines.append("feature fcip")
        for block in fcip_blocks(config):
            lines += ["", *block]
    return "\n".join(lines) + "\n"


def render_fcip_interface(config: dict[str, Any], number: int, changed_at: float) -> str:
    """``show running-config interface fcipN`` [R]: the header, version and that interface's block."""
    lines = [*header(f"show running-config interface fcip{number}", changed_at), f"version {VERSION}", "",
             *interface_block(number, config["interfaces"][str(number)])]
    return "\n".join(lines) + "\n"


def fcip_blocks(config: dict[str, Any]) -> list[list[str]]:
    """``fcip profile N`` blocks, then ``interface fcipN`` blocks, two-space sub-commands [R]."""
    blocks = []
    for number, profile in sorted(config.get("profiles", {}).items(), key=lambda item: int(item[0])):
        blocks.append([f"fcip profile {number}", *([f"  ip address {profile['ip']}"] if profile.get("ip") else [])])
    for number, interface in sorted(config.get("interfaces", {}).items(), key=lambda item: int(item[0])):
        blocks.append(interface_block(int(number), interface))
    return blocks


def interface_block(number: int, interface: dict[str, Any]) -> list[str]:
    lines = [f"interface fcip{number}"]
    if interface.get("description"):
        lines.append(f"  switchport description {interface['description']}")
    if interface.get("profile"):
        lines.append(f"  use-profile {interface['profile']}")
    if interface.get("peer"):
        lines.append(f"  peer-info ipaddr {interface['peer']}")
    lines.append("  shutdown" if interface.get("shutdown") else "  no shutdown")
    return lines


def device_alias_lines(config: dict[str, Any]) -> list[str]:
    aliases = config.get("device_aliases", {})
    if not aliases:
        return []
    return ["device-alias database", *(f"  device-alias name {name} pwwn {wwn}" for name, wwn in aliases.items()),
            "", "device-alias commit", ""]


def fcdomain_lines(config: dict[str, Any]) -> list[str]:
    """The persistent FCIDs of the logged-in devices, each aliased one with its alias as a comment whose
    padding grows with the VSAN number, as on the device."""
    assigned = fcids(config.get("logged_in", []))
    if not assigned:
        return []
    alias_of = {wwn: name for name, wwn in config.get("device_aliases", {}).items()}
    lines = ["fcdomain fcid database"]
    for wwn, fcid in assigned.items():
        lines.append(f"  vsan 1 wwn {wwn} fcid {fcid} dynamic")
        if wwn in alias_of:
            lines.append(f"    !        [{alias_of[wwn]}]")  # eight spaces: seven and the width of "1"
    return lines


def zoning_lines(config: dict[str, Any]) -> list[str]:
    """fcalias definitions, the zoning policy lines and each VSAN's active and full zone sections."""
    lines: list[str] = []
    for key, fcaliases in by_vsan(config.get("fcaliases", {}), None):
        for alias, members in fcaliases.items():
            lines += [f"fcalias name {alias} vsan {key}", *(f"    member {member_spec(m)}" for m in members), ""]
    lines += [f"zone mode enhanced vsan {key}" for key, _ in by_vsan(config.get("zone_modes", {}), None)]
    lines += [f"zone default-zone permit vsan {key}" for key, _ in by_vsan(config.get("default_zones", {}), None)]
    lines += [f"zoneset distribute full vsan {key}" for key, _ in by_vsan(config.get("zoneset_distribute", {}), None)]
    full_zones, full_zonesets = config.get("zones", {}), config.get("zonesets", {})
    for key in sorted({*config.get("active", {}), *full_zones, *full_zonesets}, key=int):
        zones, zonesets = full_zones.get(key, {}), full_zonesets.get(key, {})
        active = config.get("active", {}).get(key)
        if active:
            lines.append(f"!Active Zone Database Section for vsan {key}")
            lines += zone_blocks(active["zones"], key) + zoneset_block(active["name"], list(active["zones"]), key)
            lines += [f"zoneset activate name {active['name']} vsan {key}", f"do clear zone database vsan {key}"]
        if zones or zonesets:
            lines.append(f"!Full Zone Database Section for vsan {key}")
            lines += zone_blocks(zones, key)
            for name, names in zonesets.items():
                lines += zoneset_block(name, names, key)
        elif active:
            lines.append("")
    return lines


def zone_blocks(zones: Members, vsan: str) -> list[str]:
    lines = []
    for zone, members in zones.items():
        lines += [f"zone name {zone} vsan {vsan}", *(f"    member {member_spec(m)}" for m in members), ""]
    return lines


def zoneset_block(name: str, zones: list[str], vsan: str) -> list[str]:
    return [f"zoneset name {name} vsan {vsan}", *(f"    member {zone}" for zone in zones), ""]

"""A Cisco MDS's configuration as the MDS driver (cisco_mds.py) reads and writes it.

Read: ``show running-config`` (its FCIP profiles and interfaces, the full zone database and the
active zonesets) and ``show zone status vsan N``, parsed into plain data; every running-config line
must fit the grammar below, so that a damaged reply is refused rather than half-parsed. Which fcip
interfaces and profiles are flexzone's to change (``foreign_fcip``). Written: the lines that
configure a link's FCIP profile and interface, and the lines that define zones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from routers.drivers.base import LinkSpec
from routers.drivers.zoning import FabricZoning

DESCRIPTION = "flexzone"
# Running-config lines are keywords and values; free text and secrets appear only after the
# keywords listed. A line outside this grammar means the reply was damaged on the way.
CONFIG_LINE = re.compile(
    r"\s*(?:!.*|(?:username|snmp-server|radius-server|tacacs-server|banner|(?:switchport )?description) .*"
    r"|[A-Za-z0-9 \-_./:,()#'\"=<>+%\[\]]*)\s*"
)


@dataclass
class ZoneStatus:
    """``show zone status vsan N``: the zoning mode, who holds the session lock (None: nobody) and the
    default-zone policy (``deny``, or ``permit``: devices in no zone reach each other)."""

    mode: str
    holder: str | None
    status: str
    default_zone: str

    @property
    def enhanced(self) -> bool:
        return self.mode == "enhanced"


@dataclass
class RunningConfig:
    """The parts of ``show running-config`` a link lives in."""

    interfaces: dict[int, dict[str, str]] = field(default_factory=dict)
    profiles: dict[int, str] = field(default_factory=dict)
    zones: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    zonesets: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    active: dict[int, str] = field(default_factory=dict)
    active_zones: dict[tuple[int, str], list[str]] = field(default_factory=dict)

    def fabric(self, vsan: int) -> FabricZoning:
        """One VSAN's zoning: full zonesets and zones, the active zoneset and its enforced zones."""
        return FabricZoning(
            configs={name: members for (v, name), members in self.zonesets.items() if v == vsan},
            zones={name: members for (v, name), members in self.zones.items() if v == vsan},
            in_effect=self.active.get(vsan),
            active={name: members for (v, name), members in self.active_zones.items() if v == vsan},
        )


def parse_running_config(text: str) -> RunningConfig:
    """Interface fcip blocks, the full zone database and the activated zonesets with their members."""
    config = RunningConfig()
    block: list[str] | dict[str, str] | None = None
    full_db = False
    number = -1
    for raw in text.splitlines():
        line = raw.rstrip()
        if line and not line.startswith(" "):
            number = -1  # a new top-level block ends any fcip profile block
        if line.startswith("!Active Zone Database"):
            full_db = False
        elif line.startswith("!Full Zone Database"):
            full_db = True
        if match := re.match(r"^fcip profile (\d+)$", line):
            number = int(match.group(1))
            config.profiles[number] = ""
            block = None
        elif (match := re.match(r"^\s+ip address (\S+)$", line)) and number in config.profiles:
            config.profiles[number] = match.group(1)
        elif match := re.match(r"^interface fcip(\d+)$", line):
            block = config.interfaces.setdefault(int(match.group(1)), {"shutdown": "yes"})
        elif match := re.match(r"^zone name (\S+) vsan (\d+)$", line):
            key = (int(match.group(2)), match.group(1))
            block = config.zones.setdefault(key, []) if full_db else config.active_zones.setdefault(key, [])
        elif match := re.match(r"^zoneset name (\S+) vsan (\d+)$", line):
            block = config.zonesets.setdefault((int(match.group(2)), match.group(1)), []) if full_db else None
        elif match := re.match(r"^zoneset activate name (\S+) vsan (\d+)$", line):
            config.active[int(match.group(2))] = match.group(1)
            block = None
        elif line.startswith(" ") and isinstance(block, dict):
            words = line.split()
            if words[:2] == ["switchport", "description"]:
                block["description"] = " ".join(words[2:])
            elif words[0] == "use-profile":
                block["profile"] = words[1]
            elif words[:2] == ["peer-info", "ipaddr"]:
                block["peer"] = words[2]
            elif words == ["no", "shutdown"]:
                block["shutdown"] = "no"
        elif line.startswith(" ") and isinstance(block, list):
            words = line.split()
            if words[:2] == ["member", "pwwn"]:
                block.append(words[2].lower())
            elif words[0] == "member":
                # A zone's `member device-alias X` / `fcalias X` / `interface ...` is kept whole, so a
                # staged change from one alias to another shows; a zoneset's `member Z` is a zone name.
                block.append(" ".join(words[1:]))
        elif line and not line.startswith(" "):
            block = None
    return config


def parse_zone_status(text: str) -> ZoneStatus:
    mode = re.search(r"^\s*mode:\s*(\w+)", text, re.M)
    session = re.search(r"^\s*session:\s*(.+?)\s*$", text, re.M)
    status = re.search(r"^Status:\s*(.*)$", text, re.M)
    default_zone = re.match(r"VSAN:\s*\d+\s+default-zone:\s*(\w+)", text)
    if mode is None or session is None or default_zone is None:
        raise ValueError(f"unrecognised zone status {text[:200]!r}")
    holder = None if session.group(1) == "none" else session.group(1)
    return ZoneStatus(mode.group(1), holder, status.group(1) if status else "", default_zone.group(1))


def profile_users(config: RunningConfig, profile: int) -> list[int]:
    """The fcip interfaces that use FCIP profile `profile`."""
    return sorted(number for number, interface in config.interfaces.items() if interface.get("profile") == str(profile))


def foreign_fcip(config: RunningConfig, port: int) -> str | None:
    """Why the port's fcip interface or profile is not flexzone's to configure (None: it is, or is free).

    The interface is flexzone's only with flexzone's description; profile N only when flexzone's own
    ``fcip N`` is its one user: a profile any other interface uses, or none, is someone else's.
    """
    interface = config.interfaces.get(port)
    if interface is not None and interface.get("description") != DESCRIPTION:
        return (f"interface fcip{port} was not created by flexzone (description "
                f"{interface.get('description', '')!r}, not {DESCRIPTION!r}); flexzone leaves it alone")
    if port not in config.profiles:
        return None
    others = [number for number in profile_users(config, port) if number != port]
    if others:
        used_by = ", ".join(f"fcip{number}" for number in others)
        return f"fcip profile {port} is used by interface {used_by}; flexzone leaves it alone"
    if interface is None or interface.get("profile") != str(port):
        return (f"fcip profile {port} exists and no flexzone interface fcip{port} uses it: it is not flexzone's, "
                "flexzone leaves it alone")
    return None


def interface_lines(spec: LinkSpec) -> list[str]:
    """The lines that turn FCIP on and configure a link's FCIP profile and interface (described flexzone)."""
    return [
        "feature fcip",
        f"fcip profile {spec.port}",
        f"ip address {spec.local_ip}",
        f"interface fcip {spec.port}",
        f"switchport description {DESCRIPTION}",
        f"use-profile {spec.port}",
        f"peer-info ipaddr {spec.remote_ip}",
        "no shutdown",
    ]


def zone_lines(zones: dict[str, list[str]], vsan: int) -> list[str]:
    """Each zone with its ``member pwwn`` lines, in the VSAN."""
    lines = []
    for name, members in zones.items():
        lines.append(f"zone name {name} vsan {vsan}")
        lines += [f"member pwwn {member}" for member in members]
    return lines

"""What Cisco MDS (NX-OS) prints about zoning and FCIP, read into plain data.

The MDS driver reads only what a change needs (cisco_mds.py): ``show zone status vsan N``, ``show
zone vsan N`` (the full database's zones, fcalias members shown expanded under them), ``show zoneset
brief vsan N`` (which zones each full zoneset lists), ``show zoneset active vsan N``, ``show
device-alias database`` (only when a zone names a device-alias) and ``show running-config fcip``.

Each parser knows the layout of its command as real switches print it (public captures named in
tests/support/real_layouts/README.md) and checks the structure it relies on: the headers,
the indentation of zones, fcalias blocks and members, the member forms, the VSAN it asked for and
the totals a listing ends with. A line outside that structure raises LayoutError naming it, so a
reply damaged on the way, or a layout nobody has seen, stops the operation before anything is
changed. Lines the parsers do not use (most of ``show zone status``) are not checked at all.

Members are read into one comparable form: a pwwn is its lower-case WWN, every other kind keeps
its words (``device-alias NAME``, ``fcid 0x010203``, ``interface fc1/1 swwn ...``), and a smart-zoning
type (``init``, ``target``, ``both``) stays attached. ``resolve`` then replaces each device-alias by
its pwwn, so that the full database (which keeps fcalias and device-alias members) and the active
zoneset (which shows them expanded) compare as the switch enforces them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from routers.drivers.base import LayoutError

NAME = r"[A-Za-z][\w$^\-]{0,63}"
WWN = r"[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){7}"
TYPE = r"(?:\s+(?P<type>init|target|both))?"
# Every member form NX-OS prints in zone views (after the indentation, without the word "member").
MEMBER = re.compile(
    rf"(?:pwwn (?P<pwwn>{WWN})(?: \[{NAME}\])?"
    rf"|device-alias (?P<alias>{NAME})"
    rf"|(?P<other>fcid 0x[0-9a-fA-F]{{6}}|fwwn {WWN}|symbolic-nodename \S+|ip-address \S+"
    rf"|interface (?:fc\d+/\d+|port-channel \d+) (?:domain-id \d+|swwn {WWN})))" + TYPE
)
# `* fcid 0x.. [member] [device-alias]`: a logged-in member of an active zone (one space in `show zone active`).
ONLINE = re.compile(
    rf" {{1,2}}\* fcid 0x[0-9a-fA-F]{{6}} \[(?P<member>[^\]]+)\](?: \[{NAME}\])?(?P<suffix>{TYPE})"
)
NO_ZONE = "Zone not present"
NO_ZONESET = "Zoneset not present"


def member_key(spec: str) -> str:
    """One member line (`pwwn W [alias]  init`, `device-alias D`, ...) in its comparable form."""
    match = MEMBER.fullmatch(spec.strip())
    if match is None:
        raise LayoutError(spec, "unknown zone member")
    kind = match.group("type")
    if match.group("pwwn"):
        key = match.group("pwwn").lower()
    elif match.group("alias"):
        key = f"device-alias {match.group('alias')}"
    else:
        key = " ".join(match.group("other").split()).lower()
    return f"{key} {kind}" if kind else key


def unique(members: Iterable[str]) -> list[str]:
    """A zone's members as the switch applies them: each once, in a stable order."""
    return sorted(set(members))


@dataclass
class ZoneStatus:
    """``show zone status vsan N``: the zoning mode, who holds the session lock (None: nobody), how the
    zone database is distributed (``full`` or ``active only``) and the default-zone policy (``deny``, or
    ``permit``: devices in no zone reach each other)."""

    mode: str
    holder: str | None
    status: str
    default_zone: str
    distribute: str = "full"

    @property
    def enhanced(self) -> bool:
        return self.mode == "enhanced"


@dataclass
class FcipConfig:
    """The FCIP part of the running configuration: interfaces (description, profile, peer, shutdown)
    and profiles (their local address, "" when none is set)."""

    interfaces: dict[int, dict[str, str]] = field(default_factory=dict)
    profiles: dict[int, str] = field(default_factory=dict)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def parse_zone_status(text: str, vsan: int) -> ZoneStatus:
    """The lines flexzone uses; the others (sizes, counters, newer keys) are not read."""
    head = re.search(r"^VSAN: (\d+) default-zone: (deny|permit) distribute: (full|active only) Interop: \S+$",
                     text, re.M)
    mode = re.search(r"^\s+mode: (basic|enhanced) merge-control: \S+$", text, re.M)
    session = re.search(r"^\s+session:\s+(\S.*?)\s*$", text, re.M)
    status = re.search(r"^Status:[ \t]*(.*)$", text, re.M)
    for found, what in ((head, "the VSAN line"), (mode, "the mode line"), (session, "the session line")):
        if found is None:
            raise LayoutError((text.strip().splitlines() or [""])[0], f"no {what} in")
    assert head is not None and mode is not None and session is not None
    if int(head.group(1)) != vsan:
        raise LayoutError(head.group(0), f"asked for vsan {vsan}, got")
    holder = None if session.group(1) == "none" else session.group(1)
    return ZoneStatus(mode.group(1), holder, status.group(1).strip() if status else "", head.group(2),
                      head.group(3))


def parse_zones(text: str, vsan: int) -> dict[str, list[str]]:
    """``show zone vsan N``: each zone with its members, an fcalias member replaced by the members
    printed under it."""
    zones: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_fcalias = False
    for line in _lines(text):
        if not line.strip() or line.strip() == NO_ZONE:
            continue
        if match := re.fullmatch(rf"zone name ({NAME}) vsan (\d+)", line):
            _check_vsan(line, match.group(2), vsan)
            if match.group(1) in zones:
                raise LayoutError(line, "a zone twice:")
            current, in_fcalias = zones.setdefault(match.group(1), []), False
        elif current is None:
            raise LayoutError(line, "a member before any zone:")
        elif match := re.fullmatch(rf"  fcalias name {NAME} vsan (\d+)", line):
            _check_vsan(line, match.group(1), vsan)
            in_fcalias = True
        elif line.startswith("    ") and not line.startswith("     "):
            if not in_fcalias:
                raise LayoutError(line, "an fcalias member outside an fcalias:")
            current.append(member_key(line))
        elif line.startswith("  ") and not line.startswith("   "):
            in_fcalias = False
            current.append(member_key(line))
        else:
            raise LayoutError(line)
    return {name: unique(members) for name, members in zones.items()}


def parse_zoneset_brief(text: str, vsan: int) -> dict[str, list[str]]:
    """``show zoneset brief vsan N``: each full zoneset with the names of its zones."""
    zonesets: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in _lines(text):
        if not line.strip() or line.strip() == NO_ZONESET:
            continue
        if match := re.fullmatch(rf"zoneset name ({NAME}) vsan (\d+)", line):
            _check_vsan(line, match.group(2), vsan)
            current = zonesets.setdefault(match.group(1), [])
        elif (match := re.fullmatch(rf"  zone ({NAME})", line)) and current is not None:
            current.append(match.group(1))
        else:
            raise LayoutError(line)
    return {name: list(dict.fromkeys(zones)) for name, zones in zonesets.items()}


def parse_active_zoneset(text: str, vsan: int) -> tuple[str | None, dict[str, list[str]]]:
    """``show zoneset active vsan N``: the active zoneset's name (None: none is active) and its zones
    with their members as enforced (logged-in members as ``* fcid ... [member]``)."""
    name: str | None = None
    zones: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in _lines(text):
        if not line.strip() or line.strip() == NO_ZONESET:
            continue
        if match := re.fullmatch(rf"zoneset name ({NAME}) vsan (\d+)", line):
            _check_vsan(line, match.group(2), vsan)
            if name is not None:
                raise LayoutError(line, "a second active zoneset in one vsan:")
            name = match.group(1)
        elif name is None:
            raise LayoutError(line, "a line before the zoneset:")
        elif match := re.fullmatch(rf"  zone name ({NAME}) vsan (\d+)", line):
            _check_vsan(line, match.group(2), vsan)
            if match.group(1) in zones:
                raise LayoutError(line, "a zone twice:")
            current = zones.setdefault(match.group(1), [])
        elif current is None:
            raise LayoutError(line, "a member before any zone:")
        elif match := ONLINE.fullmatch(line):
            current.append(member_key(match.group("member") + match.group("suffix")))
        elif line.startswith("    ") and not line.startswith("     "):
            current.append(member_key(line))
        else:
            raise LayoutError(line)
    return name, {zone: unique(members) for zone, members in zones.items()}


def parse_device_aliases(text: str) -> dict[str, str]:
    """``show device-alias database``: name -> pwwn, checked against the total it ends with."""
    aliases: dict[str, str] = {}
    total = None
    for line in _lines(text):
        if not line.strip():
            continue
        if match := re.fullmatch(rf"device-alias name ({NAME}) pwwn ({WWN})", line):
            aliases[match.group(1)] = match.group(2).lower()
        elif (match := re.fullmatch(r"Total number of entries = (\d+)", line)) and total is None:
            total = int(match.group(1))
        else:
            raise LayoutError(line)
    if total is None and aliases:
        raise LayoutError(text.strip().splitlines()[-1], "no 'Total number of entries' after the last entry:")
    if total is not None and total != len(aliases):
        raise LayoutError(f"Total number of entries = {total}", f"{len(aliases)} entries listed, but")
    return aliases


def resolve(members: list[str], aliases: dict[str, str]) -> list[str]:
    """Members with each known device-alias replaced by its pwwn (the smart-zoning type kept)."""
    resolved = []
    for member in members:
        words = member.split(" ")
        if words[0] == "device-alias" and words[1] in aliases:
            member = " ".join([aliases[words[1]], *words[2:]])
        resolved.append(member)
    return unique(resolved)


def compared_members(zones: dict[str, list[str]], active: dict[str, list[str]],
                     ours: re.Pattern[str]) -> list[list[str]]:
    """The member lists whose device-aliases a comparison depends on: both views of a zone whose views
    differ, and flexzone's own zones (named by `ours`), whose names say their pwwns."""
    differing = [name for name in zones.keys() & active.keys() if zones[name] != active[name]]
    mine = [name for name in zones.keys() | active.keys() if ours.fullmatch(name)]
    return [views.get(name, []) for name in {*differing, *mine} for views in (zones, active)]


def names_device_alias(zones: Iterable[list[str]]) -> bool:
    return any(member.startswith("device-alias ") for members in zones for member in members)


def parse_fcip_config(text: str) -> FcipConfig:
    """``show running-config fcip``: the ``fcip profile N`` and ``interface fcipN`` blocks.

    Inside a block the lines flexzone reads must have their documented form; any other sub-command
    (``tcp-connections 5``, ``switchport mode E``) is a keyword line and is kept out of the way.
    """
    config = FcipConfig()
    block: dict[str, str] | None = None
    seen: set[str] = set()
    profile: int | None = None
    for line in _lines(text):
        stripped = line.strip()
        if not stripped or line.startswith("!"):
            continue
        if not line.startswith(" "):
            block, profile = None, None
            if re.fullmatch(r"version \S+|feature fcip|fcip enable", line):
                continue
            if match := re.fullmatch(r"fcip profile (\d+)", line):
                if int(match.group(1)) in config.profiles:
                    raise LayoutError(line, "a profile twice:")
                profile = int(match.group(1))
                config.profiles[profile] = ""
            elif match := re.fullmatch(r"interface fcip ?(\d+)", line):
                if int(match.group(1)) in config.interfaces:
                    raise LayoutError(line, "an interface twice:")
                block, seen = config.interfaces.setdefault(int(match.group(1)), {"shutdown": "yes"}), set()
            else:
                raise LayoutError(line)
        elif profile is not None:
            # An interface's sub-command here means its 'interface fcipN' line was lost on the way.
            if (match := re.fullmatch(r"ip address (\d+\.\d+\.\d+\.\d+)", stripped)) and not config.profiles[profile]:
                config.profiles[profile] = match.group(1)
            elif (stripped.startswith(("ip address", *INTERFACE_KEYS, "shutdown", "no shutdown"))
                  or not re.fullmatch(r"[a-z][\w-]*(?: .*)?", stripped)):
                raise LayoutError(line)
        elif block is not None:
            _interface_line(block, seen, line, stripped)
        else:
            raise LayoutError(line, "a sub-command outside any block:")
    return config


def _interface_line(block: dict[str, str], seen: set[str], line: str, stripped: str) -> None:
    words = stripped.split()
    key = "shutdown" if stripped in ("shutdown", "no shutdown") else next(
        (name for name, prefix in (("description", "switchport description"), ("description", "description"),
                                   ("profile", "use-profile"), ("peer", "peer-info")) if stripped.startswith(prefix)),
        None)
    # A setting read twice for one interface means the next interface's header was lost on the way.
    if key is not None and key in seen:
        raise LayoutError(line, "a setting twice in one interface:")
    if key is not None:
        seen.add(key)
    if words[:2] == ["switchport", "description"] or words[0] == "description":
        block["description"] = stripped.split(None, 2 if words[0] == "switchport" else 1)[-1]
    elif words[0] == "use-profile":
        if not re.fullmatch(r"use-profile \d+", stripped):
            raise LayoutError(line)
        block["profile"] = words[1]
    elif words[0] == "peer-info":
        if not (match := re.fullmatch(r"peer-info ipaddr (\d+\.\d+\.\d+\.\d+)(?: port \d+)?", stripped)):
            raise LayoutError(line)
        block["peer"] = match.group(1)
    elif stripped in ("shutdown", "no shutdown"):
        block["shutdown"] = "yes" if stripped == "shutdown" else "no"
    elif not re.fullmatch(r"(?:no )?[a-z][\w-]*(?: .*)?", stripped):
        raise LayoutError(line)


INTERFACE_KEYS = ("use-profile", "peer-info", "switchport", "description")


def _check_vsan(line: str, found: str, vsan: int) -> None:
    if int(found) != vsan:
        raise LayoutError(line, f"asked for vsan {vsan}, got")

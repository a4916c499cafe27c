"""How Brocade FOS 8/9 lays out ``cfgshow``, ``zoneshow`` and ``cfgactvshow``, as public captures show it.

* ``Defined configuration:``, then one entry per cfg, zone and alias (in that order, each kind sorted
  by name as FOS sorts them): `` <kind>:\\t<name>\\t``. A name of up to 7 characters leaves the next
  tab stop at column 16 and the members follow on the same line; a longer name ends the line and
  the members start on the next one after two tabs. Members are sorted, joined by ``; `` and wrapped
  before column 80 (tabs counted as 8), a wrapped line ending in ``; ``; the last member of an
  entry is followed by a space (FOS 9 session logs, brocadesan's test outputs, a FOS 6 capture).
* A blank line, ``Effective configuration:``, `` cfg:\\t<name>\\t``, then each zone of the cfg with its
  members resolved (aliases replaced by their WWNs, each WWN once), one per line after two tabs
  (the first on the zone's line when the name is short), and a blank line.
* With no configuration in effect: ``No Effective configuration: (No Access)`` (or ``All Access``)
  and two blank lines; an empty defined configuration prints nothing under its header.
"""

from __future__ import annotations

from typing import Any

LINE_END = 80  # FOS wraps member lists before this column
MEMBER_COLUMN = 16  # two tabs
SHORT_NAME = 7  # up to this length the members start on the entry's own line


def resolve(defined: dict[str, Any], cfg: str) -> dict[str, list[str]]:
    """The cfg's zones with their members as the fabric enforces them: aliases replaced by their WWNs
    (taken in the sorted order FOS shows the zone's members) and each WWN once."""
    zones = {}
    for zone in sorted(defined["cfgs"][cfg]):
        members: list[str] = []
        for member in sorted(defined["zones"].get(zone, [])):
            members.extend(defined["aliases"].get(member, [member]))
        zones[zone] = list(dict.fromkeys(members))
    return zones


def _columns(text: str) -> int:
    """The column a terminal reaches after `text` (tabs to the next multiple of 8)."""
    column = 0
    for char in text:
        column = (column // 8 + 1) * 8 if char == "\t" else column + 1
    return column


def render_entry(kind: str, name: str, members: list[str]) -> str:
    """One defined entry with its sorted members, wrapped as FOS wraps them."""
    head = f" {kind}:\t{name}\t"
    lines, current = [], head if len(name) <= SHORT_NAME else "\t\t"
    if len(name) > SHORT_NAME:
        lines.append(head)
    pending = sorted(members)
    for index, member in enumerate(pending):
        last = index == len(pending) - 1
        piece = member + (" " if last else ";")
        if current.strip() and _columns(current) + len(piece) > LINE_END:
            lines.append(current)
            current = "\t\t"
        current += piece + ("" if last else " ")
    lines.append(current)
    return "\n".join(lines) + "\n"


def render_defined(defined: dict[str, Any]) -> str:
    text = "Defined configuration:\n"
    for kind, label in (("cfgs", "cfg"), ("zones", "zone"), ("aliases", "alias")):
        for name in sorted(defined[kind]):
            text += render_entry(label, name, defined[kind][name])
    return text


def render_effective(committed: dict[str, Any]) -> str:
    effective = committed["effective"]
    if effective is None:
        return f"Effective configuration:\nNo Effective configuration: ({committed['default_access']})\n\n\n"
    text = f"Effective configuration:\n cfg:\t{effective['cfg']}\t\n"
    for zone, members in effective["zones"].items():
        first, rest = (members[0], members[1:]) if members and len(zone) <= SHORT_NAME else ("", members)
        text += f" zone:\t{zone}\t{first}\n" + "".join(f"\t\t{member}\n" for member in rest)
    return text + "\n"


def render_cfgshow(defined: dict[str, Any], committed: dict[str, Any]) -> str:
    """``cfgshow``/``zoneshow``: the Defined configuration (`defined`: what the session sees), then the Effective."""
    return render_defined(defined) + "\n" + render_effective(committed)

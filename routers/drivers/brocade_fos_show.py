"""What Brocade FOS prints about FCIP tunnels and zoning, read into plain data.

The FOS driver (brocade_fos.py) reads ``portcfgshow fciptunnel all -c``, ``cfgshow`` and
``cfgtransshow``; every line of those replies must fit the grammar below, so that a reply damaged on
the way is refused (GarbledOutput) rather than half-parsed into a wrong picture of the switch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from routers.drivers.zoning import FabricZoning

NO_TRANSACTION = "There is no outstanding zoning transaction"
TUNNEL_HEAD = re.compile(r"^\s*Tunnel: VE-Port:(?:\d+/)?(\d+)\b")
CIRCUIT_HEAD = re.compile(r"^\s*Circuit: VE-Port:(?:\d+/)?(\d+) ID:(\d+)")
KEY_VALUE = re.compile(r"^\s+([^:=][^:]*?)\s*:\s(.*)$")
# Every line the detail and zoning views may contain (values: what FOS prints for our objects).
DETAIL_LINE = re.compile(
    r"|\s*Tunnel: VE-Port:(?:\d+/)?\d+ \(idx:\d+, DP\d\)|\s*Circuit: VE-Port:(?:\d+/)?\d+ ID:\d+|\s*=+"
    r"|\s+[A-Za-z][A-Za-z0-9 /()\-.]*?\s*:(?: [\w .:/%()\-,]*)?"
    r"|\s+Description\s+: .*"  # free text an administrator typed
)
ZONING_LINE = re.compile(
    r"|Defined configuration:|Effective configuration:|No Effective configuration: \((?:No|All) Access\)"
    r"| no configuration defined|\s*(?:cfg|zone|alias):\t[A-Za-z][\w$^\-]*\t?[\w:;, $^\-]*|\t+[\w:;, $^\-]*"
)
TRANSACTION_LINE = re.compile(r"There is no outstanding zoning transaction|Current transaction token is \S+"
                              r"|It is (?:not )?abortable|")
TOKEN = re.compile(r"Current transaction token is (\S+)")


def token_of(transaction: str | None) -> str | None:
    """The token in a ``cfgtransshow`` reply (None: no transaction open)."""
    match = TOKEN.search(transaction or "")
    return match.group(1) if match else None


@dataclass
class TunnelInfo:
    """One tunnel as ``portcfgshow fciptunnel <ve> -c`` shows it: its keys, and its circuits' keys."""

    ve: int
    fields: dict[str, str] = field(default_factory=dict)
    circuits: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def description(self) -> str:
        return self.fields.get("Description", "")

    @property
    def remote_ip(self) -> str | None:
        return self.circuits.get(0, {}).get("Remote IP") or None

    @property
    def online(self) -> bool:
        return self.fields.get("Oper State") == "Online"


@dataclass
class FosZoning(FabricZoning):
    """``cfgshow``: the fabric's zoning plus FOS's default zone access (what applies with no cfg)."""

    default_access: str = "No Access"


def parse_tunnels(output: str) -> dict[int, TunnelInfo]:
    """Parse the ``portcfgshow fciptunnel all -c`` detail blocks into tunnels with their circuits."""
    tunnels: dict[int, TunnelInfo] = {}
    target: dict[str, str] | None = None
    for line in output.splitlines():
        if match := TUNNEL_HEAD.match(line):
            ve = int(match.group(1))
            target = tunnels.setdefault(ve, TunnelInfo(ve)).fields
        elif match := CIRCUIT_HEAD.match(line):
            ve = int(match.group(1))
            target = tunnels.setdefault(ve, TunnelInfo(ve)).circuits.setdefault(int(match.group(2)), {})
        elif target is not None and (match := KEY_VALUE.match(line)):
            target[match.group(1).strip()] = match.group(2).strip()
    return tunnels


def parse_cfgshow(output: str) -> FosZoning:
    """``cfgshow``: defined cfgs, zones (aliases resolved) and the effective cfg with its members.

    Defined lines are ``<tab>``-separated (`` zone:\\tNAME\\tm1; m2;``, continued on tab-indented
    lines); the effective section lists each zone's resolved members one per ``\\t\\t`` line.
    """
    fabric = FosZoning()
    defined: dict[str, dict[str, list[str]]] = {"cfg": {}, "zone": {}, "alias": {}}
    section, current = "", None
    for line in output.splitlines():
        if line.startswith("Defined configuration"):
            section, current = "defined", None
        elif line.startswith("Effective configuration"):
            section, current = "effective", None
        elif match := re.match(r"No Effective configuration: \((.*)\)", line):
            section, current, fabric.default_access = "effective", None, match.group(1)
        elif match := re.match(r"^\s*(cfg|zone|alias):\s*(\S+)\s*(.*)$", line):
            kind, name, rest = match.groups()
            if section == "defined":
                current = defined[kind].setdefault(name, [])
                current += [m.strip() for m in rest.split(";") if m.strip()]
            elif kind == "cfg":
                fabric.in_effect, current = name, None
            else:
                current = fabric.active.setdefault(name, [])
        elif current is not None and line.startswith("\t"):
            current += [m.strip() for m in line.split(";") if m.strip()]
    aliases = defined["alias"]
    fabric.configs = defined["cfg"]
    fabric.zones = {
        name: [wwn for member in members for wwn in aliases.get(member, [member])]
        for name, members in defined["zone"].items()
    }
    return fabric

"""What Brocade FOS prints about FCIP tunnels and zoning, read into plain data.

The FOS driver (brocade_fos.py) reads ``cfgshow``, ``cfgtransshow``, ``portshow fciptunnel all -c``
(which tunnels and circuits exist, and their operational status) and ``portcfgshow fcipcircuit
all`` (each circuit's addresses and administrative state). Each parser checks the structure its
command has on real switches (public captures, named in tests/support/real_layouts/):
section headers, entry and continuation lines, table header, rules and row shapes, block titles
and key lines. A line outside that structure raises LayoutError naming it, so a reply damaged on
the way, or a layout nobody has seen, stops the operation before anything is changed. Lines the
parsers do not use (the flag legends, key lines of other fields) are not checked.

``cfgshow`` as FOS prints it: `` cfg:``/`` zone:``/`` alias:`` entries with their ``; ``-separated
members on the same line (short names) or on following lines indented by tabs (two, or four on
FOS 9 for very long names, sometimes after a line holding only a tab), WWNs in either letter case,
and an Effective section listing each zone's members resolved, one per line. Aliases are resolved
and duplicates removed on the defined side too, so both sides compare as the switch applies them.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from routers.drivers.base import LayoutError
from routers.drivers.zoning import FabricZoning

NO_TRANSACTION = "There is no outstanding zoning transaction"
NAME = r"[A-Za-z][\w$^\-]{0,63}"
WWN_ANY = re.compile(r"[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){7}")
PORT_MEMBER = re.compile(r"\d{1,3},\d{1,4}")  # domain,port
ENTRY = re.compile(rf"^ (cfg|zone|alias):[ \t]+({NAME})(?:[ \t]+(.*?))?[ \t]*$")
CONTINUATION = re.compile(r"^\t+(.*?)[ \t]*$")
# `fosexec --fid N -cmd "X"` (FOS 9) puts a rule and a title before the command's own output.
FOSEXEC = re.compile(r'^-{10,}$|^"\w+" on FID \d+:$')
TABLE_HEAD = re.compile(r"^\s*" + r"\s+".join(
    ["Tunnel", "Circuit", "OpStatus", "Flags", "Uptime", "TxMBps", "RxMBps", "ConnCnt", "CommRt", "Met/G"]) + "$")
RULE = re.compile(r"^-{40,}$")
VE = r"((?:\d+/)?\d+)"  # as printed: "24" on a 7840, "9/16" on a director blade
STATS = r"\S+\s+[\d.]+\s+[\d.]+\s+\d+\s+\S+\s+\S+"  # uptime, Tx, Rx, connections, comm rate, metric/group
# The uptime is right-aligned in 8 columns after the 9-character flags: a 9-character uptime touches them.
TUNNEL_ROW = re.compile(rf"^\s*{VE}\s+-\s+(\S+)\s+([\w-]{{9}})\s*{STATS}$")
CIRCUIT_ROW = re.compile(rf"^\s*{VE}\s+(\d+)\s+(\S+)\s+(\S+)\s+([\w-]{{9}})\s*{STATS}$")
CIRCUIT_TITLE = re.compile(rf"^\s*Circuit(?: ID)?:\s*(?:VE-Port:)?{VE}(?:\.| ID:)(\d+)\b.*$")
KEY_LINE = re.compile(r"^\s+([A-Za-z][\w /()\-.]*?)\s*: ?(.*?)\s*$")
ADDRESS = r"[0-9A-Fa-f:.]+"  # IPv4 or IPv6, checked with ipaddress


@dataclass
class CircuitInfo:
    """One circuit of a tunnel: its operational status (the table's OpStatus), GE port, whether it
    is administratively enabled, and its addresses (None while unknown)."""

    oper: str = ""
    ge: str = ""
    enabled: bool = True
    local_ip: str | None = None
    remote_ip: str | None = None


@dataclass
class TunnelInfo:
    """One tunnel (VE port) and its circuits by id."""

    ve: str
    oper: str = ""
    circuits: dict[int, CircuitInfo] = field(default_factory=dict)

    @property
    def remote_ip(self) -> str | None:
        circuit = self.circuits.get(0)
        return circuit.remote_ip if circuit else None

    @property
    def carrying(self) -> bool:
        """Configured to carry traffic: circuit 0 has its remote address and is enabled (whether the
        WAN lets it come up is its operational status, `oper`)."""
        circuit = self.circuits.get(0)
        return circuit is not None and bool(circuit.remote_ip) and circuit.enabled


@dataclass
class FosZoning(FabricZoning):
    """``cfgshow``: the fabric's zoning plus FOS's default zone access (what applies with no cfg;
    ``unknown`` when the switch does not say)."""

    default_access: str = "No Access"
    aliases: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Transaction:
    """The open zoning transaction ``cfgtransshow`` reports."""

    token: str
    abortable: bool


def _members(text: str, line: str) -> list[str]:
    members = [member.strip() for member in text.split(";") if member.strip()]
    for member in members:
        if not (WWN_ANY.fullmatch(member) or PORT_MEMBER.fullmatch(member) or re.fullmatch(NAME, member)):
            raise LayoutError(line, f"not a zone member ({member!r}):")
    return [member.lower() if WWN_ANY.fullmatch(member) else member for member in members]


def parse_cfgshow(text: str) -> FosZoning:
    """``cfgshow``: defined cfgs, zones and aliases, and the configuration in effect with its zones."""
    fabric = FosZoning()
    defined: dict[str, dict[str, list[str]]] = {"cfg": {}, "zone": {}, "alias": {}}
    section = ""
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.strip() or (not section and FOSEXEC.match(line)):
            continue
        if line.rstrip() == "Defined configuration:":
            section, current = "defined", None
        elif line.rstrip() == "Effective configuration:":
            section, current = "effective", None
        elif match := re.fullmatch(r"No Effective configuration: \((No Access|All Access)\)\s*", line):
            section, current, fabric.default_access = "effective", None, match.group(1)
        elif line.strip() in ("no configuration defined", "no configuration in effect") and section:
            # FOS 6/7 wording; the default zone access is not shown there.
            fabric.default_access = "unknown" if section == "effective" else fabric.default_access
            current = None
        elif not section:
            raise LayoutError(line, "no 'Defined configuration:' before")
        elif match := ENTRY.match(line):
            kind, name, rest = match.group(1), match.group(2), match.group(3) or ""
            current = _entry(fabric, defined, section, kind, name, line)
            if current is not None:
                current += _members(rest, line)
            elif rest:
                raise LayoutError(line, "members on a cfg line of the Effective configuration:")
        elif (match := CONTINUATION.match(line)) and current is not None:
            current += _members(match.group(1), line)
        else:
            raise LayoutError(line)
    if not section:
        raise LayoutError((text.strip().splitlines() or [""])[0], "no 'Defined configuration:' in")
    aliases = {name: list(dict.fromkeys(members)) for name, members in defined["alias"].items()}
    fabric.aliases = aliases
    fabric.configs = {name: list(dict.fromkeys(zones)) for name, zones in defined["cfg"].items()}
    fabric.zones = {
        name: sorted({wwn for member in members for wwn in aliases.get(member, [member])})
        for name, members in defined["zone"].items()
    }
    for name, members in fabric.active.items():
        for member in members:
            if not (WWN_ANY.fullmatch(member) or PORT_MEMBER.fullmatch(member)):
                raise LayoutError(member, f"an unresolved member of effective zone {name}:")
    fabric.active = {name: sorted(set(members)) for name, members in fabric.active.items()}
    return fabric


def _entry(fabric: FosZoning, defined: dict[str, dict[str, list[str]]], section: str, kind: str, name: str,
           line: str) -> list[str] | None:
    """Start an entry; the list its members go to (None: an effective cfg line, which has none)."""
    if section == "defined":
        if name in defined[kind]:
            raise LayoutError(line, f"{kind} {name} listed twice:")
        return defined[kind].setdefault(name, [])
    if kind == "alias":
        raise LayoutError(line, "an alias in the Effective configuration:")
    if kind == "cfg":
        if fabric.in_effect is not None:
            raise LayoutError(line, "a second cfg in effect:")
        fabric.in_effect = name
        return None
    if fabric.in_effect is None:
        raise LayoutError(line, "an effective zone before its cfg:")
    if name in fabric.active:
        raise LayoutError(line, f"zone {name} in effect twice:")
    return fabric.active.setdefault(name, [])


def parse_cfgtransshow(text: str) -> Transaction | None:
    """``cfgtransshow``: None when no zoning transaction is open, else its token and whether this
    session may abort it. The token is kept as FOS prints it (decimal or ``0x`` hex)."""
    token = None
    abortable = None
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or FOSEXEC.match(line):
            continue
        if line == NO_TRANSACTION:
            return None
        if (match := re.fullmatch(r"Current transaction token is (0x[0-9a-fA-F]+|\d+)", line)) and token is None:
            token = match.group(1).lower()
        elif (match := re.fullmatch(r"It is (not )?abortable", line)) and token is not None:
            abortable = match.group(1) is None
        else:
            raise LayoutError(line)
    if token is None or abortable is None:
        raise LayoutError(text.strip()[:160], "no transaction token and its abortable line in")
    return Transaction(token, abortable)


def parse_tunnel_table(text: str) -> dict[str, TunnelInfo]:
    """``portshow fciptunnel all -c``: each tunnel row, then its circuit rows, between two rules.

    What follows the second rule (the flag legends) is not read. A switch with no tunnel prints the
    table without rows.
    """
    tunnels: dict[str, TunnelInfo] = {}
    stage = "head"  # head -> rule -> rows -> legend
    for raw in text.splitlines():
        line = raw.rstrip()
        if stage == "legend":
            continue
        if not line.strip():
            if stage == "rows":
                raise LayoutError(line, "a blank line inside the table:")
            continue
        if stage == "head" and TABLE_HEAD.match(line):
            stage = "rule"
        elif stage == "rule" and RULE.match(line):
            stage = "rows"
        elif stage == "rows" and RULE.match(line):
            stage = "legend"
        elif stage == "rows" and (match := TUNNEL_ROW.match(line)):
            ve = match.group(1)
            if ve in tunnels:
                raise LayoutError(line, "a tunnel row twice:")
            tunnels[ve] = TunnelInfo(ve, oper=match.group(2))
        elif stage == "rows" and (match := CIRCUIT_ROW.match(line)):
            ve, cid = match.group(1), int(match.group(2))
            if ve not in tunnels or cid in tunnels[ve].circuits:
                raise LayoutError(line, "a circuit row without its tunnel's row before it, or twice:")
            tunnels[ve].circuits[cid] = CircuitInfo(oper=match.group(4), ge=match.group(3))
        else:
            raise LayoutError(line)
    if stage not in ("head", "legend") or (stage == "head" and text.strip()):
        raise LayoutError((text.strip().splitlines() or [""])[-1], "the tunnel table is incomplete:")
    return tunnels


def parse_circuit_details(text: str) -> dict[tuple[str, int], CircuitInfo]:
    """``portcfgshow fcipcircuit all``: one block per circuit, a title naming its VE port and id, a rule
    of ``=``, then ``Key : value`` lines (the layout of FOS 8/9's tunnel detail view).

    The addresses are read from ``Local IP``/``Remote IP`` or ``IP Addr (L/R)`` (``L [port] <-> R``),
    the administrative state from ``Admin Status``, ``Admin State``, ``Admin/Oper State`` or the
    configuration view's ``Oper State``. A block without addresses is refused: its layout is unknown.
    """
    circuits: dict[tuple[str, int], CircuitInfo] = {}
    keys: dict[str, str] | None = None
    ruled = False  # the title's rule of "=" came
    blocks: list[tuple[tuple[str, int], dict[str, str], str]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        if match := CIRCUIT_TITLE.match(line):
            keys, ruled = {}, False
            blocks.append(((match.group(1), int(match.group(2))), keys, line))
        elif keys is not None and not ruled and re.fullmatch(r"\s*={10,}", line):
            ruled = True
        elif keys is not None and ruled and (match := KEY_LINE.match(line)):
            # A key twice in one block means the next block's title was lost on the way.
            if match.group(1).strip() in keys:
                raise LayoutError(line, "a key twice in one circuit block:")
            keys[match.group(1).strip()] = match.group(2)
        else:
            raise LayoutError(line)
    for key, fields, title in blocks:
        if key in circuits:
            raise LayoutError(title, "a circuit block twice:")
        circuits[key] = _circuit(fields, title)
    return circuits


def _circuit(fields: dict[str, str], title: str) -> CircuitInfo:
    local = fields.get("Local IP")
    remote = fields.get("Remote IP")
    if "IP Addr (L/R)" in fields:
        match = re.fullmatch(rf"({ADDRESS})(?: \S+)? <-> ({ADDRESS})", fields["IP Addr (L/R)"])
        if match is None:
            raise LayoutError(fields["IP Addr (L/R)"], "unreadable circuit addresses")
        local, remote = match.groups()
    if local is None or remote is None:
        raise LayoutError(title, "a circuit block without its local and remote addresses:")
    admin = next((fields[k] for k in ("Admin Status", "Admin State", "Admin/Oper State") if k in fields), None)
    if admin is None and fields.get("Oper State") in ("Enabled", "Disabled"):
        admin = fields["Oper State"]  # the configuration view's name for the admin state
    return CircuitInfo(enabled=(admin or "Enabled").split("/")[0].strip() == "Enabled", local_ip=_address(local),
                       remote_ip=_address(remote))


def _address(text: str) -> str | None:
    """A circuit address as flexzone writes addresses (canonical form); None for unset ones."""
    if text in ("", "none", "0.0.0.0", "::"):
        return None
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise LayoutError(text, "not an IP address:") from None


def merge_circuits(tunnels: dict[str, TunnelInfo], details: dict[tuple[str, int], CircuitInfo]) -> list[str]:
    """Put each circuit's configuration (addresses, admin state) beside its row of the table; the
    circuits of the table with no configuration block (``VE.cid``): the two reads disagree."""
    missing = []
    for ve, tunnel in tunnels.items():
        for cid, row in tunnel.circuits.items():
            detail = details.get((ve, cid))
            if detail is None:
                missing.append(f"{ve}.{cid}")
                continue
            row.enabled, row.local_ip, row.remote_ip = detail.enabled, detail.local_ip, detail.remote_ip
    return missing

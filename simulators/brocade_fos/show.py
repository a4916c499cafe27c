"""What a Brocade FOS switch shows: ``switchshow``, ``islshow``, ``version``, ``timeout``, the extension
tables (``portshow fciptunnel|fcipcircuit [<ve>|all] [-c]``, ``portshow ipif|iproute``, ``portcfgshow
ipif|iproute``, ``portcfgshow fciptunnel [<ve>|all] [-c]``, ``portcfgshow fcipcircuit``) and the zoning
views (``cfgshow``/``zoneshow``, ``cfgactvshow``, ``cfgtransshow``; their layout is zoning_show.py's).

Layouts follow real FOS 8/9 session logs (the tunnel detail and tables in FOS 9's columns) and OpenStack
Cinder's fixtures (``There is no outstanding zoning transaction``, ``Current transaction token is 0x..``
/ ``It is abortable``). The circuit configuration view and the peer identity shown on an online VE row
are reconstructed in the same style and marked ``[R]``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from simulators.brocade_fos.extension import DOMAIN, FC_PORTS, GE_PORTS, SWITCH_WWN, VE_PORTS, ExtensionConfig
from simulators.brocade_fos.portcfg import COMPRESSIONS
from simulators.brocade_fos.texts import (
    CIRCUIT_FLAG_LEGEND,
    CIRCUIT_FLAG_LEGEND_COMBINED,
    RULE,
    TUNNEL_FLAG_LEGEND,
    TUNNEL_USAGE,
)
from simulators.brocade_fos.zoning import PHANTOM_TOKEN, FabricZoning
from simulators.brocade_fos.zoning_show import render_cfgshow, render_effective
from simulators.personality import Console, Session

NO_TRANSACTION = "There is no outstanding zoning transaction\n"


def format_uptime(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60}s"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600}h"


def peer_identity(remote_ip: str) -> tuple[str, str]:
    """Peer switch WWN and name for an online VE row. [R] synthetic: derived from the circuit's remote IP."""
    packed = ipaddress.ip_address(remote_ip).packed[-3:]
    wwn = "10:00:c4:f5:7c:" + ":".join(f"{b:02x}" for b in packed)
    return wwn, "ext-" + remote_ip.replace(".", "-").replace(":", "-")


def tunnel_flags(tunnel: dict[str, Any]) -> str:
    flags = ["-"] * 9
    if tunnel.get("ipsec", "none") != "none":
        flags[2] = "i"
    if tunnel.get("fastwrite") == "enable":
        flags[3] = "f"
    compression = tunnel.get("compression", "none")
    flags[7] = {"fast-deflate": "a", "deflate": "d", "aggr-deflate": "D"}.get(compression, "-")
    return "".join(flags)


def tunnel_status(tunnel: dict[str, Any]) -> str:
    """The tunnel's OpStatus: ``Empty`` with no circuit, ``Up`` with an enabled circuit to a remote
    address, ``Down`` otherwise. (A real tunnel also waits for its far end: ``InProg``.)"""
    if not tunnel["circuits"]:
        return "Empty"
    return "Up" if any(circuit_up(c) for c in tunnel["circuits"].values()) else "Down"


def circuit_up(circuit: dict[str, Any]) -> bool:
    return circuit.get("admin", "enable") == "enable" and bool(circuit.get("remote_ip"))


def detail_lines(rows: list[tuple[str, str]]) -> str:
    """Key lines as FOS 8/9 prints them: two spaces, the key left-justified in 21 columns, ': ', the value."""
    return "".join(f"  {key:<21s}: {value}\n" for key, value in rows)


def tunnel_detail(ve: str, tunnel: dict[str, Any], live: bool) -> str:
    """``portcfgshow fciptunnel <ve>`` (configuration: Oper State is the admin state, ``Enabled``) or
    ``portshow fciptunnel <ve>`` (live: ``Online``/``In Progress`` and the peer and traffic keys).
    No Description key: no capture shows one."""
    ipsec = tunnel.get("ipsec", "none") != "none"
    up = tunnel_status(tunnel) == "Up"
    rows = [
        ("Oper State", ("Online" if up else "In Progress") if live else "Enabled"),
        ("TID", str(int(ve)) if live else "0"),
        ("Flags", "0x00000000"),
        ("IP-Extension", "Disabled"),
        ("Compression", COMPRESSIONS.get(tunnel.get("compression", "none"), "None")),
        ("QoS BW Ratio", "50% / 30% / 20%"),
        ("Fastwrite", "Enabled" if tunnel.get("fastwrite") == "enable" else "Disabled"),
        ("Tape Pipelining", "Disabled"),
        ("IPSec", "Enabled" if ipsec else "Disabled"),
        *([("IPSec-Policy", tunnel["ipsec"])] if ipsec else []),
        ("Legacy QOS Mode", "Disabled"),
    ]
    load_level = tunnel.get("load_leveling", "failover").capitalize()
    if live:
        peer = peer_identity(tunnel["circuits"]["0"]["remote_ip"])[0] if up and "0" in tunnel["circuits"] else None
        rows += [("Load-Level (Cfg/Peer)", f"{load_level} ({load_level} / {load_level})"),
                 ("Local WWN", SWITCH_WWN), ("Peer WWN", peer or "00:00:00:00:00:00:00:00"),
                 ("RemWWN (config)", tunnel.get("remote_wwn", "00:00:00:00:00:00:00:00")),
                 ("Peer Platform", "7840" if peer else "UNKNOWN")]
    else:
        rows += [("Load-Level", load_level), ("Local WWN", SWITCH_WWN)]
    rows += [("cfgmask", "0x0000001f 0x4000020c"), ("Uncomp/Comp Bytes", "0 / 0 / 1.00 : 1"),
             ("Uncomp/Comp Byte(30s)", "0 / 0 / 1.00 : 1")]
    if live:
        rows += [("Flow Status", "0"), ("ConCount/Duration", f"1 / {format_uptime(30) if up else '0s'}"),
                 ("Uptime", format_uptime(30) if up else "0s"), ("RTT (min/avg/max)", "5 / 5 / 49 ms"),
                 ("Wan Util", "0.0%"), ("TxQ Util", "0.0%")]
    return f"\n Tunnel: VE-Port:{ve} (idx:0, DP0)\n {'=' * 52}\n" + detail_lines(rows) + "\n"


def circuit_detail(ve: str, cid: str, circuit: dict[str, Any], ge: str) -> str:
    """``portcfgshow fcipcircuit``: one circuit's configuration. [R] No capture of this view exists;
    it is laid out as the tunnel detail is, with the circuit keys the FOS 8/9 command reference names."""
    admin = "Enabled" if circuit.get("admin", "enable") == "enable" else "Disabled"
    local = (circuit.get("local_ip") or "0.0.0.0") + (f" {ge}.dp0" if ge != "-" else "")
    rows = [
        ("Admin Status", admin),
        ("IP Addr (L/R)", f"{local} <-> {circuit.get('remote_ip') or '0.0.0.0'}"),
        ("Configured Comm Rates", f"{circuit.get('min_rate')} / {circuit.get('max_rate')} kbps"),
        ("Keepalive (Cfg)", f"{circuit.get('keepalive')} ms"),
        ("Metric", circuit.get("metric", "0")),
        ("Failover Group", circuit.get("failover_group", "-")),
    ]
    return f"\n Circuit: VE-Port:{ve} ID:{cid} (DP0)\n {'=' * 52}\n" + detail_lines(rows)


class FosShows:
    """The show commands of one switch, each a handler ``(session, console, rest)``."""

    def __init__(self, extension: ExtensionConfig, zoning: FabricZoning, hostname: Callable[[], str]) -> None:
        self.extension = extension
        self.zoning = zoning
        self.hostname = hostname

    def commands(self) -> dict[str, Callable[..., Any]]:
        return {
            "switchshow": self.switchshow, "portshow": self.portshow, "portcfgshow": self.portcfgshow,
            "islshow": self.islshow, "timeout": self.timeout, "version": self.version,
            "cfgshow": self.cfgshow, "zoneshow": self.cfgshow, "cfgactvshow": self.cfgactvshow,
            "cfgtransshow": self.cfgtransshow,
        }

    @property
    def tunnels(self) -> dict[str, dict[str, Any]]:
        return self.extension.tunnels

    # --- the switch ----------------------------------------------------------------------------
    async def timeout(self, session: Session, console: Console, rest: str) -> None:
        console.write("Shell Idle Timeout is 60 minutes\nSession Idle Timeout is disabled.\n")

    async def version(self, session: Session, console: Console, rest: str) -> None:
        console.write(
            "Kernel:     4.14.170\nFabric OS:  v9.1.1b\nMade on:    Tue Jun 13 03:17:32 2023\n"
            "Flash:      Mon Jan 8 10:12:44 2024\nBootProm:   2.0.17\n"
        )

    async def switchshow(self, session: Session, console: Console, rest: str) -> None:
        effective = self.zoning.committed["effective"]
        zoning = f"ON ({effective['cfg']})" if effective else "OFF"
        lines = [
            f"switchName:{self.hostname()}",
            "switchType:148.0",
            "switchState:Online",
            "switchMode:Native",
            "switchRole:Principal",
            f"switchDomain:{DOMAIN}",
            f"switchId:fffc{DOMAIN:02x}",
            f"switchWwn:{SWITCH_WWN}",
            f"zoning:{zoning}",
            "switchBeacon:OFF",
            "FC Router:OFF",
            "HIF Mode:OFF",
            "Allow XISL Use:OFF",
            "LS Attributes:[FID: 128, Base Switch: No, Default Switch: Yes, Ficon Switch: No, Address Mode 0]",
            "",
            "Index Port Address  Media Speed        State       Proto",
            "=" * 60,
        ]
        for port in FC_PORTS:
            lines.append(f"{port:5d} {port:4d}   {DOMAIN:02x}{port:02x}00   --    N32          No_Module   FC")
        for port in VE_PORTS:
            lines.append(self._ve_row(port))
        for ge in GE_PORTS:
            speed = "40G" if ge < 2 else "10G"
            state = "Online " if self.extension.ge_in_use(ge) else "No_Light"
            lines.append(f"{'':10s}ge{ge:<2d}        id    {speed:<12s} {state:11s} FCIP")
        # switchshow is not paged (scripts and netmiko users read it whole); the zoning and detail views are.
        console.write("\n".join(lines) + "\n")

    def _ve_row(self, port: int) -> str:
        prefix = f"{port:5d} {port:4d}   {DOMAIN:02x}{port:02x}00   --    --           "
        tunnel = self.tunnels.get(str(port))
        circuit = next(iter(tunnel["circuits"].values()), None) if tunnel else None
        if circuit and circuit.get("remote_ip") and circuit.get("admin", "enable") == "enable":
            wwn, name = peer_identity(circuit["remote_ip"])
            return f"{prefix}Online      VE  VE-Port  {wwn} \"{name}\""
        return f"{prefix}Offline     VE"

    async def islshow(self, session: Session, console: Console, rest: str) -> None:
        rows: list[str] = []
        for ve in sorted(self.tunnels, key=int):
            circuit = self.tunnels[ve]["circuits"].get("0")
            if circuit and circuit.get("remote_ip") and circuit.get("admin") == "enable":
                wwn, name = peer_identity(circuit["remote_ip"])
                rows.append(f"  {len(rows) + 1}:{int(ve):3d}->{int(ve):3d} {wwn} {DOMAIN + 1:3d} {name:<30s}"
                            f" sp:-------- bw: 10.000G")
        console.write("\n".join(rows) + "\n" if rows else "No ISL found\n")

    # --- extension tables ----------------------------------------------------------------------
    async def portcfgshow(self, session: Session, console: Console, rest: str) -> None:
        words = rest.split()
        what = words[0].lower() if words else ""
        if what == "ipif":
            lines = ["", " Port         IP Address                     / Pfx  MTU   VLAN  Flags", RULE]
            for entry in self.extension.ipif:
                in_use = self.extension.address_in_use(entry["ip"])
                vlan = "" if entry["vlan"] is None else str(entry["vlan"])
                lines.append(f" {entry['port']:<12s} {entry['ip']:<30s} / {entry['pfx']:<4d} {entry['mtu']!s:<5s} "
                             f"{vlan:<5s} {'I' if in_use else ''}".rstrip())
            lines += [RULE, "Flags: I=InUse X=Crossport", ""]
            console.write("\n".join(lines) + "\n")
        elif what == "iproute":
            lines = ["", " Port         IP Address                / Pfx  Gateway                Flags", RULE]
            for entry in self.extension.iproute:
                lines.append(f" {entry['port']:<12s} {entry['ip']:<25s} / {entry['pfx']:<4d} {entry['gw']:<22s} S")
            lines += [RULE, " Flags: S=Static X=Crossport", ""]
            console.write("\n".join(lines) + "\n")
        elif what == "fciptunnel":
            await self._portcfgshow_tunnel(console, words[1:])
        elif what == "fcipcircuit":
            await self._portcfgshow_circuit(console, words[1:])
        else:
            console.write(f"portcfgshow: Invalid option '{what}'.\n"
                          "Usage: portCfgShow ipif|iproute|fciptunnel|fcipcircuit [[<slot>/]<port>|all] [-c]\n")

    def _ves(self, console: Console, target: str | None) -> list[str] | None:
        """The VE ports a view covers: all (no target or ``all``), or one; None after an error."""
        if target is None or target == "all":
            return sorted(self.tunnels, key=int)
        ve = target.split("/")[-1]
        if not ve.isdigit() or int(ve) not in VE_PORTS:
            console.write(f"\nfciptunnel: Invalid port parameter '{target}' (rc:-1).\n\n{TUNNEL_USAGE}")
            return None
        return [ve] if ve in self.tunnels else []

    async def _portcfgshow_tunnel(self, console: Console, words: list[str]) -> None:
        """No VE: the AdminSt summary (its data one column left of the headings, as on the switch); a VE
        or ``all``: the detail blocks (``-c`` adds each circuit's block [R])."""
        circuits = any(w in ("-c", "--circuit") for w in words)
        targets = [w for w in words if not w.startswith("-")]
        if not targets:
            lines = ["", " Tunnel Circuit   AdminSt Flags", RULE]
            lines += [f" {ve:<6s}-         Enabled {tunnel_flags(self.tunnels[ve])}"
                      for ve in sorted(self.tunnels, key=int)]
            await console.page("\n".join([*lines, RULE, *TUNNEL_FLAG_LEGEND, "", ""]))
            return
        ves = self._ves(console, targets[0])
        if ves is None:
            return
        if not ves:
            console.write(f"Tunnel {targets[0]} does not exist.\n")  # [R]
            return
        text = ""
        for ve in ves:
            text += tunnel_detail(ve, self.tunnels[ve], live=False)
            if circuits:
                text += "".join(self._circuit_block(ve, cid) for cid in sorted(self.tunnels[ve]["circuits"], key=int))
        await console.page(text)

    async def _portcfgshow_circuit(self, console: Console, words: list[str]) -> None:
        """``portcfgshow fcipcircuit [all | <ve> [<cid>]]``: each circuit's configuration block [R]."""
        targets = [w for w in words if not w.startswith("-")]
        ves = self._ves(console, targets[0] if targets else None)
        if ves is None:
            return
        text = ""
        for ve in ves:
            cids = sorted(self.tunnels[ve]["circuits"], key=int)
            if len(targets) > 1:
                cids = [cid for cid in cids if cid == targets[1]]
            text += "".join(self._circuit_block(ve, cid) for cid in cids)
        await console.page(text + "\n" if text else "")

    def _circuit_block(self, ve: str, cid: str) -> str:
        circuit = self.tunnels[ve]["circuits"][cid]
        return circuit_detail(ve, cid, circuit, self.extension.circuit_ge(circuit))

    async def portshow(self, session: Session, console: Console, rest: str) -> None:
        """``portshow fciptunnel|fcipcircuit [<ve>|all] [-c] [--lifetime]``: the live table; ``portshow
        fciptunnel <ve>`` alone: the live detail block."""
        words = rest.split()
        what = words[0].lower() if words else ""
        if what in ("ipif", "iproute"):
            await self.portcfgshow(session, console, rest)
            return
        if what not in ("fciptunnel", "fcipcircuit"):
            console.write(f"portshow: Invalid port parameter '{what}'.\n")
            return
        options = [w for w in words[1:] if w.startswith("-")]
        targets = [w for w in words[1:] if not w.startswith("-")]
        ves = self._ves(console, targets[0] if targets else None)
        if ves is None:
            return
        circuits = what == "fcipcircuit" or "-c" in options or "--circuit" in options
        if what == "fciptunnel" and targets and targets[0] != "all" and not options:
            if ves:
                await console.page(tunnel_detail(ves[0], self.tunnels[ves[0]], live=True))
            else:
                console.write(f"Tunnel {targets[0]} does not exist.\n")  # [R]
            return
        header = " Tunnel Circuit  OpStatus  Flags    Uptime  TxMBps  RxMBps ConnCnt CommRt Met/G"
        lines = ["", header, RULE]
        for ve in ves:
            lines += self._tunnel_rows(ve, what == "fciptunnel", circuits)
        lines.append(RULE)
        if what == "fcipcircuit":
            lines += CIRCUIT_FLAG_LEGEND
        else:
            lines += TUNNEL_FLAG_LEGEND + (CIRCUIT_FLAG_LEGEND_COMBINED if circuits else [])
        await console.page("\n".join([*lines, "", ""]))

    def _tunnel_rows(self, ve: str, with_tunnel: bool, with_circuits: bool) -> list[str]:
        """Rows in the columns of FOS 9's table: VE (5), circuit and GE port (9), OpStatus (7), flags (9),
        uptime right-aligned to column 42, rates, connections, comm rate in Mb/s, metric/group."""
        tunnel = self.tunnels[ve]
        status = tunnel_status(tunnel)
        uptime = format_uptime(30) if status == "Up" else "0s"
        rows = []
        if with_tunnel:
            rows.append(f" {ve:<5s} {'-':<9s} {status:<7s} {tunnel_flags(tunnel)} {uptime:>8s}"
                        f" {0:7.2f} {0:7.2f} {1 if status == 'Up' else 0:>3d}      -       -")
        if with_circuits:
            for cid in sorted(tunnel["circuits"], key=int):
                circuit = tunnel["circuits"][cid]
                up = circuit_up(circuit)
                ge = self.extension.circuit_ge(circuit)
                rate = f"{int(circuit['min_rate']) // 1000}/{int(circuit['max_rate']) // 1000}"
                place = f"{cid} {ge}"
                rows.append(f" {ve:<5s} {place:<9s} {'Up' if up else 'Down':<7s} ----a-p-4 {uptime if up else '0s':>8s}"
                            f" {0:7.2f} {0:7.2f} {1 if up else 0:>3d} {rate:>10s}  {circuit.get('metric', '0')}/-")
        return rows

    # --- zoning --------------------------------------------------------------------------------
    async def cfgshow(self, session: Session, console: Console, rest: str) -> None:
        """The Defined configuration as `session` sees it (its open transaction's copy, if any), then the Effective."""
        await console.page(render_cfgshow(self.zoning.defined_for(session), self.zoning.committed))

    async def cfgactvshow(self, session: Session, console: Console, rest: str) -> None:
        await console.page(render_effective(self.zoning.committed))

    async def cfgtransshow(self, session: Session, console: Console, rest: str) -> None:
        transaction = self.zoning.transaction
        if transaction is not None:
            token, abortable = transaction.token, transaction.session == session.id
        elif self.zoning.locked_elsewhere():
            token, abortable = PHANTOM_TOKEN, False
        else:
            console.write(NO_TRANSACTION)
            return
        console.write(f"Current transaction token is 0x{token:x}\n"
                      f"It is {'abortable' if abortable else 'not abortable'}\n")  # [R] the "not" form

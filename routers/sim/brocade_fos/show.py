"""What a Brocade FOS switch shows: ``switchshow``, ``islshow``, ``version``, ``timeout``, the extension
tables (``portshow fciptunnel|fcipcircuit [<ve>|all] [-c]``, ``portshow ipif|iproute``, ``portcfgshow
ipif|iproute``, ``portcfgshow fciptunnel [<ve>|all] [-c]``) and the zoning views (``cfgshow``/``zoneshow``,
``cfgactvshow``, ``cfgtransshow``).

Layouts follow real FOS 8/9 session logs and OpenStack Cinder's fixtures (the tab-separated ``cfgshow``
and ``cfgactvshow``, ``There is no outstanding zoning transaction``, ``Current transaction token is 0x..``
/ ``It is abortable``). The circuit detail keys and the peer identity shown on an online VE row are
reconstructed in the same style and marked ``[R]``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from routers.sim.brocade_fos.extension import DOMAIN, FC_PORTS, GE_PORTS, SWITCH_WWN, VE_PORTS, ExtensionConfig
from routers.sim.brocade_fos.portcfg import COMPRESSIONS
from routers.sim.brocade_fos.texts import CIRCUIT_FLAG_LEGEND, RULE, TUNNEL_FLAG_LEGEND, TUNNEL_USAGE
from routers.sim.brocade_fos.zoning import PHANTOM_TOKEN, FabricZoning
from routers.sim.personality import Console, Session

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


def circuit_detail(ve: str, cid: str, circuit: dict[str, Any]) -> str:
    # [R] the circuit detail keys are reconstructed; values follow the circuit table's units.
    up = circuit.get("admin", "enable") == "enable" and bool(circuit.get("remote_ip"))
    rows = [
        ("Admin/Oper State", f"{'Enabled' if circuit.get('admin', 'enable') == 'enable' else 'Disabled'} / "
                             f"{'Online' if up else 'Offline'}"),
        ("Remote IP", circuit.get("remote_ip", "")),
        ("Local IP", circuit.get("local_ip", "")),
        ("Metric/Failover Grp", f"{circuit.get('metric', '0')} / {circuit.get('failover_group', '-')}"),
        ("Min/Max Comm Rt", f"{circuit.get('min_rate')} / {circuit.get('max_rate')}"),
        ("Keepalive (Cfg/Peer)", f"{circuit.get('keepalive')} / {circuit.get('keepalive')}"),
    ]
    text = f" Circuit: VE-Port:{ve} ID:{cid}\n {'=' * 50}\n"
    return text + "".join(f"  {key:<20s}: {value}\n" for key, value in rows) + "\n"


def tunnel_detail(ve: str, tunnel: dict[str, Any], with_circuits: bool) -> str:
    online = any(c.get("remote_ip") for c in tunnel["circuits"].values())
    rows = [
        ("Oper State", "Online" if online else "Offline"),
        ("TID", str(int(ve) - VE_PORTS.start)),
        ("Description", tunnel.get("description", "")),  # [R] key name
        ("Flags", "0x00000000"),
        ("IP-Extension", "Disabled"),
        ("Compression", COMPRESSIONS.get(tunnel.get("compression", "none"), "None")),
        ("QoS BW Ratio", "50% / 30% / 20%"),
        ("Fastwrite", "Enabled" if tunnel.get("fastwrite") == "enable" else "Disabled"),
        ("Tape Pipelining", "Disabled"),
        ("IPSec", "Disabled" if tunnel.get("ipsec", "none") == "none" else "Enabled"),
        ("IPSec-Policy", "" if tunnel.get("ipsec", "none") == "none" else tunnel["ipsec"]),
        ("Legacy QOS Mode", "Disabled"),
        ("Load-Level", tunnel.get("load_leveling", "Failover").capitalize()),
        ("Local WWN", SWITCH_WWN),
        ("RemWWN (config)", tunnel.get("remote_wwn", "00:00:00:00:00:00:00:00")),
        ("cfgmask", "0x0000001f 0x80000208"),
    ]
    text = f" Tunnel: VE-Port:{ve} (idx:{int(ve) - VE_PORTS.start}, DP0)\n {'=' * 50}\n"
    text += "".join(f"  {key:<20s}: {value}\n" for key, value in rows) + "\n"
    if with_circuits:
        for cid in sorted(tunnel["circuits"], key=int):
            text += circuit_detail(ve, cid, tunnel["circuits"][cid])
    return text


def render_defined(defined: dict[str, Any]) -> str:
    if not any(defined.values()):
        return "Defined configuration:\n no configuration defined\n"
    text = "Defined configuration:\n"
    for name, zones in defined["cfgs"].items():
        text += f" cfg:\t{name}\t" + _wrap(zones) + "\n"
    for kind, label in (("zones", "zone"), ("aliases", "alias")):
        for name, members in defined[kind].items():
            text += f" {label}:\t{name}\t" + _wrap(members) + "\n"
    return text


def render_effective(committed: dict[str, Any]) -> str:
    effective = committed["effective"]
    if effective is None:
        return f"No Effective configuration: ({committed['default_access']})\n"
    text = f"Effective configuration:\n cfg:\t{effective['cfg']}\t\n"
    for zone, members in effective["zones"].items():
        text += f" zone:\t{zone}\t\n" + "".join(f"\t\t{member}\n" for member in members)
    return text


def _wrap(members: list[str], per_line: int = 3) -> str:
    """cfgshow member lists: `; `-separated, continued on tab-indented lines."""
    chunks = [members[i : i + per_line] for i in range(0, len(members), per_line)] or [[]]
    return ";\n\t\t".join("; ".join(chunk) for chunk in chunks)


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
        rows = []
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
        else:
            console.write(f"portcfgshow: Invalid option '{what}'.\n"
                          "Usage: portCfgShow ipif|iproute|fciptunnel|fcipcircuit [[<slot>/]<port>|all] [-c]\n")

    async def _portcfgshow_tunnel(self, console: Console, words: list[str]) -> None:
        circuits = any(w in ("-c", "--circuit") for w in words)
        targets = [w for w in words if not w.startswith("-")]
        if not targets:
            lines = [" Tunnel Circuit   AdminSt Flags", RULE]
            for ve in sorted(self.tunnels, key=int):
                lines.append(f" {ve:<6s}-         Enabled {tunnel_flags(self.tunnels[ve])}")
                if circuits:
                    for cid in sorted(self.tunnels[ve]["circuits"], key=int):
                        circuit = self.tunnels[ve]["circuits"][cid]
                        admin = "Enabled " if circuit.get("admin", "enable") == "enable" else "Disabled"
                        lines.append(f" {ve:<6s}{cid:<10s}{admin}----4")
            lines += [RULE, *TUNNEL_FLAG_LEGEND]
            await console.page("\n".join(lines) + "\n")
            return
        target = targets[0].split("/")[-1]
        if target == "all":
            ves = sorted(self.tunnels, key=int)
        elif target.isdigit() and int(target) in VE_PORTS:
            if target not in self.tunnels:
                console.write(f"Tunnel {target} does not exist.\n")  # [R]
                return
            ves = [target]
        else:
            console.write(f"\nfciptunnel: Invalid port parameter '{targets[0]}' (rc:-1).\n\n{TUNNEL_USAGE}")
            return
        await console.page("".join(tunnel_detail(ve, self.tunnels[ve], circuits) for ve in ves))

    async def portshow(self, session: Session, console: Console, rest: str) -> None:
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
        circuits = what == "fcipcircuit" or "-c" in options or "--circuit" in options
        ves = sorted(self.tunnels, key=int)
        if targets and targets[0] != "all":
            target = targets[0].split("/")[-1]
            if not target.isdigit() or int(target) not in VE_PORTS:
                console.write(f"\nfciptunnel: Invalid port parameter '{targets[0]}' (rc:-1).\n\n{TUNNEL_USAGE}")
                return
            ves = [target] if target in self.tunnels else []
        header = " Tunnel Circuit  OpStatus  Flags    Uptime  TxMBps  RxMBps ConnCnt CommRt Met/G"
        lines = [header, RULE]
        for ve in ves:
            lines += self._tunnel_rows(ve, what == "fciptunnel", circuits)
        lines += [RULE, *TUNNEL_FLAG_LEGEND]
        if circuits:
            lines += CIRCUIT_FLAG_LEGEND
        await console.page("\n".join(lines) + "\n")

    def _tunnel_rows(self, ve: str, with_tunnel: bool, with_circuits: bool) -> list[str]:
        tunnel = self.tunnels[ve]
        up = [c for c in tunnel["circuits"].values() if c.get("remote_ip") and c.get("admin") == "enable"]
        status = "Up" if up else "Empty" if not tunnel["circuits"] else "Down"
        uptime = format_uptime(30) if up else "0s"
        rows = []
        if with_tunnel:
            rows.append(f" {ve:<6s}-         {status:<7s} {tunnel_flags(tunnel)} {uptime:>8s}"
                        f"    0.00    0.00   1      -       -")
        if with_circuits:
            for cid in sorted(tunnel["circuits"], key=int):
                circuit = tunnel["circuits"][cid]
                cstatus = "Up" if circuit in up else "Down"
                ge = self.extension.circuit_ge(circuit)
                rate = f"{int(circuit['min_rate']) // 1000}/{int(circuit['max_rate']) // 1000}"
                rows.append(f" {ve:<6s}{cid:<2s}{ge:<7s}{cstatus:<8s}---va---4 {uptime:>8s}"
                            f"    0.00    0.00   1  {rate}  {circuit.get('metric', '0')}/-")
        return rows

    # --- zoning --------------------------------------------------------------------------------
    async def cfgshow(self, session: Session, console: Console, rest: str) -> None:
        """The Defined configuration as `session` sees it (its open transaction's copy, if any), then the Effective."""
        await console.page(render_defined(self.zoning.defined_for(session)) + "\n"
                           + render_effective(self.zoning.committed))

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

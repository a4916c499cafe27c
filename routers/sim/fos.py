"""Brocade Fabric OS 9 personality: a 7840 extension switch (FC 0-23, VE 24-43, GE ge0-ge17).

Formats follow real FOS 8/9 session logs: the ``NAME:USER>`` prompt, the ATTENTION banner,
``Operation Succeeded.``, the ``Object exists.`` family of extension errors, silent zoning commands,
``(yes, y, no, n): [no]`` confirmations, the ``Type <CR> to continue, Q<CR> to stop:`` pager and
``rbash: X: command not found``. Where no capture exists (some "does not exist" wordings, the circuit
detail keys, the peer identity shown on an online VE row) the text is reconstructed in the same style
and marked ``[R]`` next to it.

Grammar: ``switchshow``, ``islshow``, ``version``, ``timeout``, ``exit``/``logout``;
``portcfg ipif|iproute <ge#[.dp#]> create|modify|delete <ip>/<pfx>|<ip> netmask <mask> [mtu ..] [vlan ..]``
(route: ``... <gateway>``); ``portcfg fciptunnel <ve> create|modify|delete [-c|-d|-f|-t|-i|-n|-L ...]``;
``portcfg fcipcircuit <ve> create|modify|delete <cid> [-S|--local-ip -D|--remote-ip -b -B -k -a -x -g]``;
``portshow fciptunnel|fcipcircuit [<ve>|all] [-c]``; ``portshow ipif|iproute``;
``portcfgshow ipif|iproute``; ``portcfgshow fciptunnel [<ve>|all] [-c]`` (detail view);
``zonecreate|zoneadd|zoneremove|zonedelete``, ``alicreate|aliadd|aliremove|alidelete``,
``cfgcreate|cfgadd|cfgremove|cfgdelete|cfgclear|cfgsave|cfgenable|cfgdisable [-force]``,
``cfgshow``/``zoneshow``, ``cfgactvshow``, ``cfgtransshow``, ``cfgtransabort [token]``,
``defzone --show|--allaccess|--noaccess``. Anything else is ``rbash: X: command not found``.
Zoning (state, the one zoning transaction, outputs) lives in routers.sim.fos_zoning.

State layout (``SimState.running``)::

    ipif:    [{"port": "ge2.dp0", "ip": "10.1.1.1", "pfx": 24, "mtu": "AUTO"|int, "vlan": int|None}]
    iproute: [{"port": ..., "ip": "10.2.0.0", "pfx": 24, "gw": "10.1.1.254"}]
    tunnels: {"24": {"description": str, "compression": str, "circuits": {"0": {...}}}}
    zoning:  {"defined": {"cfgs": {}, "zones": {}, "aliases": {}}, "effective": {"cfg": str, "zones": {}} | None,
              "default_access": "No Access" | "All Access"}

Extension configuration is written to flash as it is applied (as on the device), so it is mirrored
into ``saved`` at once; zoning edits are a session's open transaction (in memory) until ``cfgsave``,
``cfgenable`` or ``cfgdisable`` commits them.
"""

from __future__ import annotations

import copy
import ipaddress
import re
import shlex
from typing import Any, ClassVar

from routers.drivers.base import RouterLink
from routers.sim.fos_zoning import FosZoning
from routers.sim.personality import Console, Personality, Session, SimState, TimingProfile

FC_PORTS = range(0, 24)
VE_PORTS = range(24, 44)
GE_PORTS = range(0, 18)
DOMAIN = 1
SWITCH_WWN = "10:00:c4:f5:7c:3a:41:00"

ATTENTION = (
    "--------------------------------------------------------------------------------------------\n"
    "                                       ATTENTION\n"
    "  It is recommended that you change the default passwords for all the switch accounts.\n"
    " Refer to the product release notes and administrators guide if you need further information.\n"
    " --------------------------------------------------------------------------------------------\n"
    "\n"
    "-----------------------------------------------------------------\n"
)

RULE = "-" * 80

TUNNEL_USAGE = """Usage:   portCfg fciptunnel [<slot>/]<port> <option> [<args>]

Option:  create              - Create the specified tunnel
         modify              - Modify the specified tunnel
         delete              - Delete the specified tunnel
         help                - Show this usage message

Optional Arguments:
  -c,--compression none|deflate|aggr-deflate|fast-deflate
                             - Set the tunnel compression mode.
  -d,--description <string>  - Set the tunnel description.
  -f,--fastwrite enable|disable
                             - Set FC fastwrite.
  -t,--tape-pipelining default|read|write|disable
                             - Set tape pipelining.
  -i,--ipsec <policy>|none   - Set the IPsec policy.
  -n,--remote-wwn <wwn>      - Set the WWN of the remote FC entity.
  -L,--load-leveling default|failover|spillover
                             - Set the load-leveling algorithm.

Example: portcfg fciptunnel 24 create --compression none
"""

CIRCUIT_USAGE = """Usage:   portCfg fcipcircuit [<slot>/]<port> <option> <circuit id> [<args>]

Option:  create              - Create the specified circuit
         modify              - Modify the specified circuit
         delete              - Delete the specified circuit
         help                - Show this usage message

Optional Arguments:
  -S,--local-ip <ipaddr>|none        - Set the local IP address.
  -D,--remote-ip <ipaddr>|none       - Set the remote IP address.
  -b,--min-comm-rate <kbps>          - Set the minimum committed rate.
  -B,--max-comm-rate <kbps>          - Set the maximum committed rate.
  -k,--keepalive-timeout <ms>        - Set the keepalive timeout.
  -a,--admin-status enable|disable   - Set the circuit admin status.
  -x,--metric 0|1                    - Set the circuit metric.
  -g,--failover-group 0-9            - Set the failover group.

Example: portcfg fcipcircuit 24 create 0 --local-ip 10.1.1.10 --remote-ip 10.2.1.10 -b 1000000 -B 1000000
"""

IPIF_USAGE = """Usage:   portCfg ipif [<slot>/]<port> create|modify|delete <ipaddr>/<pfx> [mtu <mtu>|auto]
                  [vlan <vlanid>]
         portCfg ipif [<slot>/]<port> create|modify|delete <ipaddr> netmask <mask> [mtu <mtu>|auto]
                  [vlan <vlanid>]
         portCfg iproute [<slot>/]<port> create|modify|delete <ipaddr>/<pfx> <gateway>
         portCfg iproute [<slot>/]<port> create|modify|delete <ipaddr> netmask <mask> <gateway>
"""

PORTCFG_USAGE = """Usage: portCfg <action> [<slot>/]<port> <option> [<args>]

Action:  ipif | iproute | fciptunnel | fcipcircuit | ipsec-policy
"""

TUNNEL_OPTIONS = {
    "-c": "compression", "--compression": "compression",
    "-d": "description", "--description": "description",
    "-f": "fastwrite", "--fastwrite": "fastwrite",
    "-t": "tape_pipelining", "--tape-pipelining": "tape_pipelining",
    "-i": "ipsec", "--ipsec": "ipsec",
    "-n": "remote_wwn", "--remote-wwn": "remote_wwn",
    "-L": "load_leveling", "--load-leveling": "load_leveling",
}
CIRCUIT_OPTIONS = {
    "-S": "local_ip", "--local-ip": "local_ip",
    "-D": "remote_ip", "--remote-ip": "remote_ip",
    "-b": "min_rate", "--min-comm-rate": "min_rate",
    "-B": "max_rate", "--max-comm-rate": "max_rate",
    "-k": "keepalive", "--keepalive-timeout": "keepalive",
    "-a": "admin", "--admin-status": "admin",
    "-x": "metric", "--metric": "metric",
    "-g": "failover_group", "--failover-group": "failover_group",
}
COMPRESSIONS = {"none": "None", "deflate": "Deflate", "aggr-deflate": "Aggr Deflate", "fast-deflate": "Fast Deflate"}


def _ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


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


class FosPersonality(Personality):
    """Brocade FOS 9 on a 7840: extension (ipif/iproute/fciptunnel/fcipcircuit) and zoning."""

    platform: ClassVar[str] = "brocade_fos"
    timing: ClassVar[TimingProfile] = TimingProfile(
        connect_to_login=0.4, after_password=1.2, command=0.15, mutating_command=0.4, jitter=0.25
    )
    transports: ClassVar[tuple[str, ...]] = ("telnet", "ssh")
    default_hostname: ClassVar[str] = "fos-ext1"
    max_sessions: ClassVar[int | None] = 32
    page_lines: ClassVar[int] = 24
    pager_prompt: ClassVar[str] = "Type <CR> to continue, Q<CR> to stop: "

    def __init__(self, state: SimState, hostname: str) -> None:
        super().__init__(state, hostname)
        running = state.running
        running.setdefault("ipif", [])
        running.setdefault("iproute", [])
        running.setdefault("tunnels", {})
        running.setdefault("uptime_base", 0)
        self.fabric_zoning = FosZoning(state, self.zoning_locked)
        self._mirror_extension()

    # --- login and prompt --------------------------------------------------------------------
    def login_banner(self, transport: str) -> str:
        return f"\nFabric OS ({self.hostname})\n\n" if transport == "telnet" else ""

    def username_prompt(self) -> str:
        return f"{self.hostname} login: "

    def motd(self, session: Session) -> str:
        return ATTENTION

    def login_failed_message(self) -> str:
        return "Login incorrect"

    def session_limit_message(self) -> str:
        return "Maximum number of remote sessions for login admin (32) exceeded. Connection closed."

    def prompt(self, session: Session) -> str:
        return f"{self.hostname}:{session.username}> "

    def is_mutating(self, session: Session, line: str) -> bool:
        words = line.split()
        if not words:
            return False
        command = words[0].lower()
        if FosZoning.is_mutating(command, " ".join(words[1:])):
            return True
        return command == "portcfg" and any(w in ("create", "modify", "delete") for w in words[1:])

    # --- state helpers -----------------------------------------------------------------------
    @property
    def tunnels(self) -> dict[str, dict[str, Any]]:
        return self.state.running["tunnels"]

    @property
    def zoning(self) -> dict[str, Any]:
        """The committed zoning (defined, effective, default access); open transactions aside."""
        return self.fabric_zoning.committed

    def _mirror_extension(self) -> None:
        for key in ("ipif", "iproute", "tunnels"):
            self.state.saved[key] = copy.deepcopy(self.state.running[key])

    def save(self) -> None:
        """Write the committed zoning to flash (extension config is always saved)."""
        self._mirror_extension()
        self.fabric_zoning.flash()

    def session_ended(self, session: Session) -> None:
        self.fabric_zoning.session_ended(session)

    def seed_production_zoning(self) -> None:
        self.fabric_zoning.seed_production()
        self.save()

    def links(self) -> list[RouterLink]:
        """flexzone links: each (zone, port) group of ``fz_z<zone>_ve<port>[_<i>_<t>]`` zones, committed
        or in effect, whose VE port has a tunnel with a circuit 0 remote address; up when every zone
        of the group is in effect and the circuit is enabled."""
        result = []
        for (zone, port), (group, in_effect) in self.fabric_zoning.flexzone_groups().items():
            tunnel = self.tunnels.get(str(port))
            circuit = tunnel["circuits"].get("0") if tunnel else None
            if circuit and circuit.get("remote_ip"):
                state = "up" if in_effect and circuit.get("admin") == "enable" else "down"
                result.append(RouterLink(port, zone, circuit["remote_ip"], state,
                                         tuple(sorted(group.initiators)), tuple(sorted(group.targets))))
        return sorted(result, key=lambda link: link.key)

    # --- dispatch ----------------------------------------------------------------------------
    async def execute(self, session: Session, console: Console, line: str) -> bool:
        command, _, rest = line.strip().partition(" ")
        name = command.lower()
        if name in ("exit", "logout", "quit"):
            console.write("logout:Closing the current session\n")
            return False
        handler = self._commands().get(name)
        if handler is None:
            console.write(f"rbash: {command}: command not found\n")
            return True
        await handler(session, console, rest.strip())
        return True

    def _commands(self) -> dict[str, Any]:
        return {
            "switchshow": self._switchshow,
            "portcfg": self._portcfg,
            "portshow": self._portshow,
            "portcfgshow": self._portcfgshow,
            "islshow": self._islshow,
            "timeout": self._timeout,
            "version": self._version,
            **self.fabric_zoning.commands(),
        }

    # --- misc --------------------------------------------------------------------------------
    async def _timeout(self, session: Session, console: Console, rest: str) -> None:
        console.write("Shell Idle Timeout is 60 minutes\nSession Idle Timeout is disabled.\n")

    async def _version(self, session: Session, console: Console, rest: str) -> None:
        console.write(
            "Kernel:     4.14.170\nFabric OS:  v9.1.1b\nMade on:    Tue Jun 13 03:17:32 2023\n"
            "Flash:      Mon Jan 8 10:12:44 2024\nBootProm:   2.0.17\n"
        )

    async def _switchshow(self, session: Session, console: Console, rest: str) -> None:
        effective = self.zoning["effective"]
        zoning = f"ON ({effective['cfg']})" if effective else "OFF"
        lines = [
            f"switchName:{self.hostname}",
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
            state = "Online " if self._ge_in_use(ge) else "No_Light"
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

    def _ge_in_use(self, ge: int) -> bool:
        return any(re.fullmatch(rf"ge{ge}(\.dp[01])?", entry["port"]) for entry in self.state.running["ipif"])

    # --- portcfg -----------------------------------------------------------------------------
    async def _portcfg(self, session: Session, console: Console, rest: str) -> None:
        try:
            words = shlex.split(rest)
        except ValueError:
            words = rest.split()
        if not words:
            console.write(PORTCFG_USAGE)
            return
        action, args = words[0].lower(), words[1:]
        if action in ("ipif", "iproute"):
            await self._portcfg_ip(console, action, args)
        elif action == "fciptunnel":
            await self._portcfg_tunnel(console, args)
        elif action == "fcipcircuit":
            await self._portcfg_circuit(console, args)
        else:
            console.write(f"portcfg: Invalid action '{words[0]}'.\n\n{PORTCFG_USAGE}")

    def _ve(self, console: Console, kind: str, token: str | None, usage: str) -> int | None:
        port = token.split("/")[-1] if token and token.startswith("0/") else token
        if port is None or not port.isdigit() or int(port) not in VE_PORTS:
            console.write(f"\n{kind}: Invalid port parameter '{token or ''}' (rc:-1).\n\n{usage}")
            return None
        return int(port)

    def _parse_options(self, console: Console, kind: str, words: list[str], table: dict[str, str],
                       usage: str) -> dict[str, str] | None:
        options: dict[str, str] = {}
        index = 0
        while index < len(words):
            word = words[index]
            if "=" in word and word.startswith("--"):
                word, value = word.split("=", 1)
                words = [*words[: index + 1], value, *words[index + 1 :]]
            if word not in table:
                console.write(f"{kind}: Unknown option '{word}'.\n\n{usage}")
                return None
            if index + 1 >= len(words):
                console.write(f"{kind}: Option '{word}' requires an argument.\n\n{usage}")
                return None
            options[table[word]] = words[index + 1]
            index += 2
        return options

    async def _portcfg_tunnel(self, console: Console, args: list[str]) -> None:
        ve = self._ve(console, "fciptunnel", args[0] if args else None, TUNNEL_USAGE)
        if ve is None:
            return
        operation = args[1].lower() if len(args) > 1 else ""
        if operation not in ("create", "modify", "delete"):
            console.write(f"\nfciptunnel: Invalid operation '{operation}' (rc:-1).\n\n{TUNNEL_USAGE}")
            return
        options = self._parse_options(console, "fciptunnel", args[2:], TUNNEL_OPTIONS, TUNNEL_USAGE)
        if options is None:
            return
        if "compression" in options and options["compression"] not in COMPRESSIONS:
            console.write(f"fciptunnel: Invalid compression value '{options['compression']}'.\n\n{TUNNEL_USAGE}")
            return
        key = str(ve)
        tunnel = self.tunnels.get(key)
        if operation == "create":
            if tunnel is not None:
                console.write(f"fciptunnel operation failed.\nObject exists.\nTunnel ID {ve} already exists.\n")
                return
            self.tunnels[key] = {"compression": "none", "description": "", **options, "circuits": {},
                                 "created": self.state.running["uptime_base"]}
        elif operation == "delete":
            if tunnel is None:
                # [R] wording follows the verified "Circuit modify failed: Object does not exist." form.
                console.write(f"Tunnel delete failed: Object does not exist.\nUnable to locate tunnel {ve}.\n")
                return
            del self.tunnels[key]
        else:
            if tunnel is None:
                console.write(f"Tunnel modify failed: Object does not exist.\nUnable to locate tunnel {ve}.\n")
                return
            if all(tunnel.get(name) == value for name, value in options.items()):
                console.write("fciptunnel operation failed.\nNothing to modify.\n")
                return
            if not await self._confirm_modify(console):
                return
            tunnel.update(options)
        self._mirror_extension()
        await console.applied()
        console.write("Operation Succeeded.\n")

    async def _confirm_modify(self, console: Console) -> bool:
        console.write(
            "\n!!!! WARNING !!!!\nModify operation can disrupt the traffic on any tunnel using this IP address."
            " This operation may bring the existing tunnel down (if tunnel is up) before applying new"
            " configuration.\n\nNote: This operation can take a long time depending on the size or complexity"
            " of the configuration. It may take up to 3 minutes in some cases.\n\n"
        )
        while True:
            answer = (await console.ask("Continue with Modification (Y,y,N,n): [ n]")).lower()
            if answer in ("y",):
                return True
            if answer in ("n", ""):
                return False
            console.write("Input not acceptable, please re-enter\n")

    async def _portcfg_circuit(self, console: Console, args: list[str]) -> None:
        ve = self._ve(console, "fcipcircuit", args[0] if args else None, CIRCUIT_USAGE)
        if ve is None:
            return
        operation = args[1].lower() if len(args) > 1 else ""
        if operation not in ("create", "modify", "delete"):
            console.write(f"\nfcipcircuit: Invalid operation '{operation}' (rc:-1).\n\n{CIRCUIT_USAGE}")
            return
        cid = args[2] if len(args) > 2 else ""
        if not cid.isdigit() or int(cid) > 9:
            console.write(f"\nfcipcircuit: Invalid circuit ID '{cid}' (rc:-1).\n\n{CIRCUIT_USAGE}")
            return
        options = self._parse_options(console, "fcipcircuit", args[3:], CIRCUIT_OPTIONS, CIRCUIT_USAGE)
        if options is None:
            return
        for name in ("local_ip", "remote_ip"):
            if name in options and options[name] != "none":
                address = _ip(options[name])
                if address is None:
                    console.write(f"fcipcircuit: Invalid IP address '{options[name]}'.\n\n{CIRCUIT_USAGE}")
                    return
                options[name] = address
        tunnel = self.tunnels.get(str(ve))
        if tunnel is None:
            console.write(f"Circuit {operation} failed: Object does not exist.\nUnable to locate tunnel {ve}.\n")
            return
        circuits = tunnel["circuits"]
        circuit = circuits.get(str(int(cid)))
        if operation == "create":
            if circuit is not None:
                console.write(f"Object exists.\nCircuit {ve}.{int(cid)} already exists.\n")
                return
            if not options.get("local_ip") or not options.get("remote_ip"):
                console.write(f"Circuit create failed: Invalid parameter.\n"
                              f"Local and remote IP addresses are required for circuit {ve}.{int(cid)}.\n")
                return
            clash = self._local_remote_in_use(options["local_ip"], options["remote_ip"])
            if clash:
                console.write(f"Circuit create failed: Object exists.\n{clash}\n")
                return
            circuits[str(int(cid))] = {"min_rate": "1000000", "max_rate": "1000000", "keepalive": "6000",
                                       "admin": "enable", "metric": "0", **options}
        elif circuit is None:
            console.write(f"Circuit {operation} failed: Object does not exist.\n"
                          f"Unable to locate circuit {ve}.{int(cid)}.\n")
            return
        elif operation == "delete":
            del circuits[str(int(cid))]
        else:
            if all(circuit.get(name) == value for name, value in options.items()):
                console.write("fcipcircuit operation failed.\nNothing to modify.\n")
                return
            circuit.update(options)
        self._mirror_extension()
        await console.applied()
        console.write("Operation Succeeded.\n")

    def _local_remote_in_use(self, local_ip: str, remote_ip: str) -> str:
        for ve, tunnel in self.tunnels.items():
            for cid, circuit in tunnel["circuits"].items():
                if circuit.get("local_ip") == local_ip and circuit.get("remote_ip") == remote_ip:
                    return f"Local IP {local_ip} and remote IP {remote_ip} are already used by circuit {ve}.{cid}."
        return ""

    async def _portcfg_ip(self, console: Console, action: str, args: list[str]) -> None:
        if len(args) < 3 or args[1].lower() not in ("create", "modify", "delete"):
            console.write(f"\n{action}: Invalid port parameter '{args[0] if args else ''}' (rc:-1).\n\n{IPIF_USAGE}")
            return
        port, operation, words = args[0].lower(), args[1].lower(), args[2:]
        if not re.fullmatch(r"ge(\d{1,2})(\.dp[01])?", port) or int(re.findall(r"\d+", port)[0]) not in GE_PORTS:
            console.write(f"\n{action}: Invalid port parameter '{args[0]}' (rc:-1).\n\n{IPIF_USAGE}")
            return
        network = self._parse_prefix(words)
        if network is None:
            console.write(f"{action}: Invalid IP address.\n\n{IPIF_USAGE}")
            return
        address, pfx, words = network
        if action == "ipif":
            await self._ipif(console, port, operation, address, pfx, words)
        else:
            await self._iproute(console, port, operation, address, pfx, words)

    @staticmethod
    def _parse_prefix(words: list[str]) -> tuple[str, int, list[str]] | None:
        try:
            if "/" in words[0]:
                interface = ipaddress.ip_interface(words[0])
                return str(interface.ip), interface.network.prefixlen, words[1:]
            if len(words) >= 3 and words[1].lower() == "netmask":
                interface = ipaddress.ip_interface(f"{words[0]}/{words[2]}")
                return str(interface.ip), interface.network.prefixlen, words[3:]
        except ValueError:
            return None
        return None

    async def _ipif(self, console: Console, port: str, operation: str, address: str, pfx: int,
                    words: list[str]) -> None:
        table: list[dict[str, Any]] = self.state.running["ipif"]
        existing = next((entry for entry in table if entry["ip"] == address), None)
        mtu: str | int = "AUTO"
        vlan: int | None = None
        pairs = dict(zip(words[::2], words[1::2], strict=False))
        if "mtu" in pairs:
            mtu = "AUTO" if pairs["mtu"].lower() == "auto" else int(pairs["mtu"]) if pairs["mtu"].isdigit() else 0
        if "vlan" in pairs and pairs["vlan"].isdigit():
            vlan = int(pairs["vlan"])
        if mtu == 0 or (mtu != "AUTO" and not 1280 <= int(mtu) <= 9216):
            console.write("Invalid MTU value. MTU must be between 1280-9216 or auto.\n")
            return
        if operation == "create":
            if existing is not None:
                console.write(f"IP Address already configured.\nIP Address {address} already configured on port"
                              f" {existing['port']}.\n")
                return
            table.append({"port": port, "ip": address, "pfx": pfx, "mtu": mtu, "vlan": vlan})
        elif existing is None or existing["port"] != port:
            console.write(f"IP Address does not exist.\nIP Address {address} is not configured on port {port}.\n")
            return
        elif operation == "delete":
            if any(circuit.get("local_ip") == address for tunnel in self.tunnels.values()
                   for circuit in tunnel["circuits"].values()):
                console.write(f"IP Address in use.\nIP Address {address} is in use by a circuit.\n")
                return
            table.remove(existing)
        else:
            if not await self._confirm_modify(console):
                return
            existing.update({"pfx": pfx, "mtu": mtu, "vlan": vlan})
        self._mirror_extension()
        await console.applied()
        console.write("Operation Succeeded.\n")

    async def _iproute(self, console: Console, port: str, operation: str, address: str, pfx: int,
                       words: list[str]) -> None:
        table: list[dict[str, Any]] = self.state.running["iproute"]
        network = str(ipaddress.ip_network(f"{address}/{pfx}", strict=False).network_address)
        existing = next((r for r in table if r["port"] == port and r["ip"] == network and r["pfx"] == pfx), None)
        if operation == "delete":
            if existing is None:
                console.write(f"IProute does not exist.\nIP route {network}/{pfx} is not configured on {port}.\n")
                return
            table.remove(existing)
        else:
            gateway = _ip(words[0]) if words else None
            if gateway is None:
                console.write(f"iproute: Invalid gateway address.\n\n{IPIF_USAGE}")
                return
            on_subnet = any(
                entry["port"] == port
                and ipaddress.ip_address(gateway) in ipaddress.ip_network(f"{entry['ip']}/{entry['pfx']}", False)
                for entry in self.state.running["ipif"]
            )
            if not on_subnet:
                console.write("Route gateway unreachable.\n")
                return
            if operation == "create":
                if existing is not None:
                    console.write(f"IProute already exists.\nIP route {network}/{pfx} already configured on {port}.\n")
                    return
                table.append({"port": port, "ip": network, "pfx": pfx, "gw": gateway})
            elif existing is None:
                console.write(f"IProute does not exist.\nIP route {network}/{pfx} is not configured on {port}.\n")
                return
            else:
                existing["gw"] = gateway
        self._mirror_extension()
        await console.applied()
        console.write("Operation Succeeded.\n")

    # --- show commands -----------------------------------------------------------------------
    async def _portcfgshow(self, session: Session, console: Console, rest: str) -> None:
        words = rest.split()
        what = words[0].lower() if words else ""
        if what == "ipif":
            lines = ["", " Port         IP Address                     / Pfx  MTU   VLAN  Flags", RULE]
            for entry in self.state.running["ipif"]:
                in_use = any(c.get("local_ip") == entry["ip"] for t in self.tunnels.values()
                             for c in t["circuits"].values())
                vlan = "" if entry["vlan"] is None else str(entry["vlan"])
                lines.append(f" {entry['port']:<12s} {entry['ip']:<30s} / {entry['pfx']:<4d} {entry['mtu']!s:<5s} "
                             f"{vlan:<5s} {'I' if in_use else ''}".rstrip())
            lines += [RULE, "Flags: I=InUse X=Crossport", ""]
            console.write("\n".join(lines) + "\n")
        elif what == "iproute":
            lines = ["", " Port         IP Address                / Pfx  Gateway                Flags", RULE]
            for entry in self.state.running["iproute"]:
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
                lines.append(f" {ve:<6s}-         Enabled {self._tunnel_flags(self.tunnels[ve])}")
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
        blocks = [self._tunnel_detail(ve, circuits) for ve in ves]
        await console.page("".join(blocks))

    @staticmethod
    def _tunnel_flags(tunnel: dict[str, Any]) -> str:
        flags = ["-"] * 9
        if tunnel.get("ipsec", "none") != "none":
            flags[2] = "i"
        if tunnel.get("fastwrite") == "enable":
            flags[3] = "f"
        compression = tunnel.get("compression", "none")
        flags[7] = {"fast-deflate": "a", "deflate": "d", "aggr-deflate": "D"}.get(compression, "-")
        return "".join(flags)

    def _tunnel_detail(self, ve: str, with_circuits: bool) -> str:
        tunnel = self.tunnels[ve]
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
                text += self._circuit_detail(ve, cid, tunnel["circuits"][cid])
        return text

    @staticmethod
    def _circuit_detail(ve: str, cid: str, circuit: dict[str, Any]) -> str:
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

    async def _portshow(self, session: Session, console: Console, rest: str) -> None:
        words = rest.split()
        what = words[0].lower() if words else ""
        if what in ("ipif", "iproute"):
            await self._portcfgshow(session, console, rest)
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
            tunnel = self.tunnels[ve]
            up = [c for c in tunnel["circuits"].values() if c.get("remote_ip") and c.get("admin") == "enable"]
            status = "Up" if up else "Empty" if not tunnel["circuits"] else "Down"
            uptime = format_uptime(30) if up else "0s"
            if what == "fciptunnel":
                lines.append(f" {ve:<6s}-         {status:<7s} {self._tunnel_flags(tunnel)} {uptime:>8s}"
                             f"    0.00    0.00   1      -       -")
            if circuits:
                for cid in sorted(tunnel["circuits"], key=int):
                    circuit = tunnel["circuits"][cid]
                    cstatus = "Up" if circuit in up else "Down"
                    ge = self._circuit_ge(circuit)
                    rate = f"{int(circuit['min_rate']) // 1000}/{int(circuit['max_rate']) // 1000}"
                    lines.append(f" {ve:<6s}{cid:<2s}{ge:<7s}{cstatus:<8s}---va---4 {uptime:>8s}"
                                 f"    0.00    0.00   1  {rate}  {circuit.get('metric', '0')}/-")
        lines += [RULE, *TUNNEL_FLAG_LEGEND]
        if circuits:
            lines += CIRCUIT_FLAG_LEGEND
        await console.page("\n".join(lines) + "\n")

    def _circuit_ge(self, circuit: dict[str, Any]) -> str:
        entry = next((e for e in self.state.running["ipif"] if e["ip"] == circuit.get("local_ip")), None)
        return entry["port"].split(".")[0] if entry else "-"

    async def _islshow(self, session: Session, console: Console, rest: str) -> None:
        rows = []
        for ve in sorted(self.tunnels, key=int):
            circuit = self.tunnels[ve]["circuits"].get("0")
            if circuit and circuit.get("remote_ip") and circuit.get("admin") == "enable":
                wwn, name = peer_identity(circuit["remote_ip"])
                rows.append(f"  {len(rows) + 1}:{int(ve):3d}->{int(ve):3d} {wwn} {DOMAIN + 1:3d} {name:<30s}"
                            f" sp:-------- bw: 10.000G")
        console.write("\n".join(rows) + "\n" if rows else "No ISL found\n")


TUNNEL_FLAG_LEGEND = [
    " Flags (tunnel): l=Legacy QOS Mode",
    "                 i=IPSec f=Fastwrite T=TapePipelining F=FICON r=ReservedBW",
    "                 a=FastDeflate d=Deflate D=AggrDeflate P=Protocol",
    "                 I=IP-Ext",
]
CIRCUIT_FLAG_LEGEND = [
    " Flags (circuit): h=HA-Configured v=VLAN-Tagged p=PMTU i=IPSec 4=IPv4 6=IPv6",
    "                  ARL a=Auto r=Reset s=StepDown t=TimedStepDown  S=SLA",
]

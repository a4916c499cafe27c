"""``portcfg``: the command that changes a Brocade FOS switch's extension configuration.

``portcfg ipif|iproute <ge#[.dp#]> create|modify|delete <ip>/<pfx>|<ip> netmask <mask> [mtu ..] [vlan ..]``
(route: ``... <gateway>``), ``portcfg fciptunnel <ve> create|modify|delete [-c|-d|-f|-t|-i|-n|-L ...]``,
``portcfg fcipcircuit <ve> create|modify|delete <cid> [-S|--local-ip -D|--remote-ip -b -B -k -a -x -g]``.
Success is ``Operation Succeeded.``; errors follow the ``Object exists.`` family of the FOS 8/9 session
logs, and wordings no capture shows are marked ``[R]``.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from typing import Any

from simulators.brocade_fos.extension import GE_PORTS, VE_PORTS, ExtensionConfig
from simulators.brocade_fos.texts import CIRCUIT_USAGE, IPIF_USAGE, PORTCFG_USAGE, TUNNEL_USAGE
from simulators.personality import Console, Session

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
OPERATIONS = ("create", "modify", "delete")
SUCCEEDED = "Operation Succeeded.\n"


def parse_ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def parse_prefix(words: list[str]) -> tuple[str, int, list[str]] | None:
    """``<ip>/<pfx>`` or ``<ip> netmask <mask>`` -> (ip, prefix length, the words after it)."""
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


def parse_options(console: Console, kind: str, words: list[str], table: dict[str, str],
                  usage: str) -> dict[str, str] | None:
    """``-x value`` / ``--long value`` / ``--long=value`` pairs by their names in `table`; None after an error."""
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


async def confirm_modify(console: Console) -> bool:
    """The warning and question FOS asks before a modify that may take a tunnel down."""
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


class PortCfg:
    """The ``portcfg`` command over one switch's extension configuration."""

    def __init__(self, extension: ExtensionConfig) -> None:
        self.extension = extension

    async def __call__(self, session: Session, console: Console, rest: str) -> None:
        try:
            words = shlex.split(rest)
        except ValueError:
            words = rest.split()
        if not words:
            console.write(PORTCFG_USAGE)
            return
        action, args = words[0].lower(), words[1:]
        if action in ("ipif", "iproute"):
            await self._ip(console, action, args)
        elif action == "fciptunnel":
            await self._tunnel(console, args)
        elif action == "fcipcircuit":
            await self._circuit(console, args)
        else:
            console.write(f"portcfg: Invalid action '{words[0]}'.\n\n{PORTCFG_USAGE}")

    async def _done(self, console: Console) -> None:
        self.extension.mirror()
        await console.applied()
        console.write(SUCCEEDED)

    @staticmethod
    def _ve(console: Console, kind: str, args: list[str], usage: str) -> tuple[int, str] | None:
        """The VE port and the operation that follow ``portcfg fciptunnel|fcipcircuit``; None after an error."""
        token = args[0] if args else None
        port = token.split("/")[-1] if token and token.startswith("0/") else token
        if port is None or not port.isdigit() or int(port) not in VE_PORTS:
            console.write(f"\n{kind}: Invalid port parameter '{token or ''}' (rc:-1).\n\n{usage}")
            return None
        operation = args[1].lower() if len(args) > 1 else ""
        if operation not in OPERATIONS:
            console.write(f"\n{kind}: Invalid operation '{operation}' (rc:-1).\n\n{usage}")
            return None
        return int(port), operation

    # --- fciptunnel ----------------------------------------------------------------------------
    async def _tunnel(self, console: Console, args: list[str]) -> None:
        parsed = self._ve(console, "fciptunnel", args, TUNNEL_USAGE)
        if parsed is None:
            return
        ve, operation = parsed
        options = parse_options(console, "fciptunnel", args[2:], TUNNEL_OPTIONS, TUNNEL_USAGE)
        if options is None:
            return
        if "compression" in options and options["compression"] not in COMPRESSIONS:
            console.write(f"fciptunnel: Invalid compression value '{options['compression']}'.\n\n{TUNNEL_USAGE}")
            return
        tunnels = self.extension.tunnels
        key = str(ve)
        tunnel = tunnels.get(key)
        if operation == "create":
            if tunnel is not None:
                console.write(f"fciptunnel operation failed.\nObject exists.\nTunnel ID {ve} already exists.\n")
                return
            tunnels[key] = {"compression": "none", "description": "", **options, "circuits": {},
                            "created": self.extension.state.running["uptime_base"]}
        elif tunnel is None:
            # [R] wording follows the verified "Circuit modify failed: Object does not exist." form.
            console.write(f"Tunnel {operation} failed: Object does not exist.\nUnable to locate tunnel {ve}.\n")
            return
        elif operation == "delete":
            del tunnels[key]
        else:
            if all(tunnel.get(name) == value for name, value in options.items()):
                console.write("fciptunnel operation failed.\nNothing to modify.\n")
                return
            if not await confirm_modify(console):
                return
            tunnel.update(options)
        await self._done(console)

    # --- fcipcircuit ---------------------------------------------------------------------------
    async def _circuit(self, console: Console, args: list[str]) -> None:
        parsed = self._ve(console, "fcipcircuit", args, CIRCUIT_USAGE)
        if parsed is None:
            return
        ve, operation = parsed
        cid = args[2] if len(args) > 2 else ""
        if not cid.isdigit() or int(cid) > 9:
            console.write(f"\nfcipcircuit: Invalid circuit ID '{cid}' (rc:-1).\n\n{CIRCUIT_USAGE}")
            return
        options = parse_options(console, "fcipcircuit", args[3:], CIRCUIT_OPTIONS, CIRCUIT_USAGE)
        if options is None:
            return
        for name in ("local_ip", "remote_ip"):
            if name in options and options[name] != "none":
                address = parse_ip(options[name])
                if address is None:
                    console.write(f"fcipcircuit: Invalid IP address '{options[name]}'.\n\n{CIRCUIT_USAGE}")
                    return
                options[name] = address
        tunnel = self.extension.tunnels.get(str(ve))
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
            clash = self.extension.pair_in_use(options["local_ip"], options["remote_ip"])
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
        await self._done(console)

    # --- ipif and iproute ----------------------------------------------------------------------
    async def _ip(self, console: Console, action: str, args: list[str]) -> None:
        if len(args) < 3 or args[1].lower() not in OPERATIONS:
            console.write(f"\n{action}: Invalid port parameter '{args[0] if args else ''}' (rc:-1).\n\n{IPIF_USAGE}")
            return
        port, operation, words = args[0].lower(), args[1].lower(), args[2:]
        if not re.fullmatch(r"ge(\d{1,2})(\.dp[01])?", port) or int(re.findall(r"\d+", port)[0]) not in GE_PORTS:
            console.write(f"\n{action}: Invalid port parameter '{args[0]}' (rc:-1).\n\n{IPIF_USAGE}")
            return
        network = parse_prefix(words)
        if network is None:
            console.write(f"{action}: Invalid IP address.\n\n{IPIF_USAGE}")
            return
        address, pfx, words = network
        if action == "ipif":
            await self._ipif(console, port, operation, address, pfx, words)
        else:
            await self._iproute(console, port, operation, address, pfx, words)

    async def _ipif(self, console: Console, port: str, operation: str, address: str, pfx: int,
                    words: list[str]) -> None:
        table = self.extension.ipif
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
            if self.extension.address_in_use(address):
                console.write(f"IP Address in use.\nIP Address {address} is in use by a circuit.\n")
                return
            table.remove(existing)
        else:
            if not await confirm_modify(console):
                return
            existing.update({"pfx": pfx, "mtu": mtu, "vlan": vlan})
        await self._done(console)

    async def _iproute(self, console: Console, port: str, operation: str, address: str, pfx: int,
                       words: list[str]) -> None:
        table: list[dict[str, Any]] = self.extension.iproute
        network = str(ipaddress.ip_network(f"{address}/{pfx}", strict=False).network_address)
        existing = next((r for r in table if r["port"] == port and r["ip"] == network and r["pfx"] == pfx), None)
        absent = f"IProute does not exist.\nIP route {network}/{pfx} is not configured on {port}.\n"
        if operation == "delete":
            if existing is None:
                console.write(absent)
                return
            table.remove(existing)
        else:
            gateway = parse_ip(words[0]) if words else None
            if gateway is None:
                console.write(f"iproute: Invalid gateway address.\n\n{IPIF_USAGE}")
                return
            on_subnet = any(
                entry["port"] == port
                and ipaddress.ip_address(gateway) in ipaddress.ip_network(f"{entry['ip']}/{entry['pfx']}", False)
                for entry in self.extension.ipif
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
                console.write(absent)
                return
            else:
                existing["gw"] = gateway
        await self._done(console)

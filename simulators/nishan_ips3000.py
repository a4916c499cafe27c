"""Nishan Systems IPS 3000 (SoIP) personality. THE GRAMMAR IS SYNTHETIC.

No public IPS 3000 CLI transcript exists; this keyword=value grammar was designed from RFC 4172
concepts (see simulators/README.md) and deliberately differs from the Eclipse one. The IPS writes
every change to flash as it is made, so there is no separate saved configuration and no save command.

    ips3000-a> ifcp list
    ips3000-a> ifcp create fcport=3 zone=17 remote=10.0.8.50
    ips3000-a> ifcp delete fcport=3 zone=17 remote=10.0.8.50
"""

from __future__ import annotations

from typing import ClassVar

from routers.drivers.base import RouterLink
from simulators import ifcp
from simulators.personality import Console, Personality, Session, TimingProfile

FC_PORTS = (1, 64)  # the IPS numbers its FC ports from 1
FIRMWARE = "SoIP 3.2.1"
PARAMETERS = ("fcport", "zone", "remote")
HELP = """\
SYNTHETIC SoIP CLI (flexzone simulator). Commands:
  ifcp list [fcport=<1-64>]
  ifcp create fcport=<1-64> zone=<1-4094> remote=<ip>
  ifcp delete fcport=<1-64> zone=<1-4094> remote=<ip>
  show gateway
  show version
  logout
"""


class NishanPersonality(Personality):
    """SYNTHETIC SoIP CLI: `ifcp list`, `ifcp create|delete fcport=P zone=Z remote=IP`."""

    platform = "nishan_ips3000"
    synthetic = True
    transports = ("telnet",)
    default_hostname = "ips3000-a"
    max_sessions = 8
    timing: ClassVar[TimingProfile] = TimingProfile(
        connect_to_login=0.6, after_password=1.4, command=0.25, mutating_command=0.9, jitter=0.1
    )

    def login_banner(self, transport: str) -> str:
        return f"Nishan Systems IPS 3000 Storage Switch ({self.hostname})\nFirmware {FIRMWARE}\n\n"

    def motd(self, session: Session) -> str:
        return f"Logged in as {session.username}. Configuration changes are written to flash immediately.\n"

    def login_failed_message(self) -> str:
        return "Login incorrect"

    def session_limit_message(self) -> str:
        return "Error: E_BUSY too many CLI sessions, connection closed"

    def prompt(self, session: Session) -> str:
        return f"{self.hostname}> "

    def is_mutating(self, session: Session, line: str) -> bool:
        words = line.split()
        return words[:2] in (["ifcp", "create"], ["ifcp", "delete"])

    def links(self) -> list[RouterLink]:
        return ifcp.links(self.state.running)

    def save(self) -> None:
        """Nothing to do: the IPS has no separate saved configuration."""

    async def execute(self, session: Session, console: Console, line: str) -> bool:
        words = line.split()
        if words[0] in ("logout", "exit", "quit"):
            console.write("Bye.\n")
            return False
        if words[0] in ("help", "?"):
            console.write(HELP)
        elif words == ["show", "version"]:
            console.write(f"Nishan Systems IPS 3000\nFirmware: {FIRMWARE}\nName: {self.hostname}\n")
        elif words == ["show", "gateway"]:
            console.write(
                f"gateway.instance=1\ngateway.mode=address-translation\ngateway.port={ifcp.IFCP_TCP_PORT}\n"
                f"gateway.connections={len(ifcp.connections(self.state.running))}\n"
            )
        elif words[:2] == ["ifcp", "list"]:
            self._list(console, words[2:])
        elif words[:2] == ["ifcp", "create"]:
            await self._create(console, words[2:])
        elif words[:2] == ["ifcp", "delete"]:
            await self._delete(console, words[2:])
        else:
            console.write(f"Error: E_SYNTAX unknown command '{line}' (type help)\n")
        return True

    def _list(self, console: Console, args: list[str]) -> None:
        port_filter = None
        if args:
            key, _, value = args[0].partition("=")
            port_filter = ifcp.parse_int(value, *FC_PORTS) if key == "fcport" and len(args) == 1 else None
            if port_filter is None:
                console.write(f"Error: E_INVAL bad filter '{' '.join(args)}' (expected fcport=<1-64>)\n")
                return
        rows = [link for link in self.links() if port_filter is None or link.port == port_filter]
        console.write("FCPORT  ZONE  REMOTE                                   STATUS\n")
        for link in rows:
            status = "ACTIVE" if link.state == "up" else "DOWN"
            console.write(f"{link.port:<6}  {link.zone:<4}  {link.remote_ip:<39}  {status}\n")
        console.write(f"({len(rows)} connection{'' if len(rows) == 1 else 's'})\n")

    def _parse(self, console: Console, args: list[str]) -> tuple[int, int, str] | None:
        values: dict[str, str] = {}
        for arg in args:
            key, sep, value = arg.partition("=")
            if not sep or key not in PARAMETERS or key in values:
                console.write(f"Error: E_SYNTAX bad parameter '{arg}' (expected fcport= zone= remote=)\n")
                return None
            values[key] = value
        missing = [name for name in PARAMETERS if name not in values]
        if missing:
            console.write(f"Error: E_SYNTAX missing parameter {missing[0]}=\n")
            return None
        port = ifcp.parse_int(values["fcport"], *FC_PORTS)
        if port is None:
            console.write(f"Error: E_INVAL fcport={values['fcport']} out of range {FC_PORTS[0]}..{FC_PORTS[1]}\n")
            return None
        zone = ifcp.parse_int(values["zone"], 1, 4094)
        if zone is None:
            console.write(f"Error: E_INVAL zone={values['zone']} out of range 1..4094\n")
            return None
        remote = ifcp.parse_ip(values["remote"])
        if remote is None:
            console.write(f"Error: E_INVAL remote={values['remote']} is not a unicast IP address\n")
            return None
        return port, zone, remote

    async def _create(self, console: Console, args: list[str]) -> None:
        parsed = self._parse(console, args)
        if parsed is None:
            return
        port, zone, remote = parsed
        if ifcp.find(self.state.running, port, zone, remote) is not None:
            console.write(f"Error: E_EXISTS connection fcport={port} zone={zone} remote={remote} already exists\n")
            return
        ifcp.connections(self.state.running).append({"port": port, "zone": zone, "remote": remote, "state": "up"})
        await console.applied()
        console.write("OK\n")

    async def _delete(self, console: Console, args: list[str]) -> None:
        parsed = self._parse(console, args)
        if parsed is None:
            return
        port, zone, remote = parsed
        item = ifcp.find(self.state.running, port, zone, remote)
        if item is None:
            console.write(f"Error: E_NOTFOUND no connection fcport={port} zone={zone} remote={remote}\n")
            return
        ifcp.connections(self.state.running).remove(item)
        await console.applied()
        console.write("OK\n")

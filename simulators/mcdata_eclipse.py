"""McData Eclipse 2640 SAN router (E/OSi) personality. THE GRAMMAR IS SYNTHETIC.

No public Eclipse CLI transcript exists; this grammar was designed from RFC 4172/4369 concepts so
that flexzone has something realistic in shape to drive (see simulators/README.md). What is real
is the seed's timing: ~12 s from TCP connect to a usable prompt, a cold add under 20 s, a remove a
little longer. The Eclipse keeps a saved configuration (``config save``) apart from the running one.

    ECL2640-A:eosi# show ifcp session
    ECL2640-A:eosi# ifcp session add fc-port 3 zone 17 remote-gateway 10.0.8.50
    ECL2640-A:eosi# ifcp session remove fc-port 3 zone 17 remote-gateway 10.0.8.50
    Remove iFCP session and release its N_Port sessions? (y/n) [n]: y
    ECL2640-A:eosi# config save
"""

from __future__ import annotations

from typing import ClassVar

from routers.drivers.base import RouterLink
from simulators import ifcp
from simulators.personality import Console, Personality, Session, TimingProfile

FC_PORTS = (0, 63)
VERSION = "E/OSi 4.7.2 (build 0419)"
HELP = """\
Commands (SYNTHETIC E/OSi grammar, flexzone simulator):
  show version
  show ifcp gateway
  show ifcp remote-gateway
  show ifcp session [fc-port <0-63>]
  show config [running|saved]
  ifcp session add fc-port <0-63> zone <1-4094> remote-gateway <A.B.C.D|X:X::X>
  ifcp session remove fc-port <0-63> zone <1-4094> remote-gateway <A.B.C.D|X:X::X>
  config save
  cli pager enable|disable
  exit
"""


class EclipsePersonality(Personality):
    """SYNTHETIC E/OSi CLI: `show ifcp session`, `ifcp session add|remove ...`, `config save`."""

    platform = "mcdata_eclipse"
    synthetic = True
    transports = ("telnet",)
    default_hostname = "ECL2640-A"
    max_sessions = 4
    # Seed: connect -> prompt ~12 s; add (2.7 s) + save (2.7 s) after login makes a cold add ~18 s;
    # remove adds the confirmation and the UNBIND wait (REMOVE_SETTLE), so it is a little slower.
    timing: ClassVar[TimingProfile] = TimingProfile(
        connect_to_login=4.0, after_password=7.5, command=0.8, mutating_command=2.7, jitter=0.05
    )
    REMOVE_SETTLE: ClassVar[float] = 1.2
    pager_prompt = "--More-- (q to quit) "

    def login_banner(self, transport: str) -> str:
        return f"\nMcDATA Eclipse 2640 SAN Router - {self.hostname}\n{VERSION}\n\n"

    def username_prompt(self) -> str:
        return "Username: "

    def password_prompt(self) -> str:
        return "Password: "

    def motd(self, session: Session) -> str:
        return "\nLast configuration save: see 'show config saved'. Unsaved changes are lost at reboot.\n\n"

    def login_failed_message(self) -> str:
        return "% Authentication failed."

    def session_limit_message(self) -> str:
        return f"% All {self.max_sessions} management sessions are in use. Try again later."

    def prompt(self, session: Session) -> str:
        return f"{self.hostname}:eosi# "

    def is_mutating(self, session: Session, line: str) -> bool:
        words = line.split()
        return words[:3] in (["ifcp", "session", "add"], ["ifcp", "session", "remove"]) or words[:2] == [
            "config",
            "save",
        ]

    def links(self) -> list[RouterLink]:
        return ifcp.links(self.state.running)

    async def execute(self, session: Session, console: Console, line: str) -> bool:
        words = line.split()
        if words[0] in ("exit", "logout", "quit"):
            console.write("Goodbye.\n")
            return False
        if words[0] in ("help", "?"):
            console.write(HELP)
        elif words[:2] == ["show", "version"]:
            console.write(f"McDATA Eclipse 2640\n{VERSION}\nHostname: {self.hostname}\n")
        elif words[:3] == ["show", "ifcp", "gateway"]:
            self._show_gateway(console)
        elif words[:3] == ["show", "ifcp", "remote-gateway"]:
            self._show_remote_gateways(console)
        elif words[:3] == ["show", "ifcp", "session"]:
            await self._show_sessions(console, words[3:])
        elif words[:2] == ["show", "config"]:
            await self._show_config(console, words[2:])
        elif words[:3] == ["ifcp", "session", "add"]:
            await self._add(console, words[3:])
        elif words[:3] == ["ifcp", "session", "remove"]:
            await self._remove(console, words[3:])
        elif words[:2] == ["cli", "pager"] and words[2:] in (["enable"], ["disable"]):
            session.paging = words[2] == "enable"
        elif words[:2] == ["config", "save"] and len(words) == 2:
            self.save()
            await console.applied()
            console.write("Saving configuration to flash... done.\n")
        elif words[0] in ("show", "ifcp", "config", "cli"):
            console.write("% Incomplete or invalid command. Type 'help' for a list of commands.\n")
        else:
            console.write(f"% Unknown command: '{words[0]}'. Type 'help' for a list of commands.\n")
        return True

    # --- commands ------------------------------------------------------------------------------
    def _show_gateway(self, console: Console) -> None:
        running = self.state.running
        console.write(
            "iFCP gateway instance 1\n"
            f"  Address translation mode : enabled\n"
            f"  Portal TCP port          : {ifcp.IFCP_TCP_PORT}\n"
            f"  Default IP TOV           : 90 s\n"
            f"  LTEST interval           : 10 s\n"
            f"  Active connections       : {len(ifcp.connections(running))}\n"
        )

    def _show_remote_gateways(self, console: Console) -> None:
        gateways = ifcp.remote_gateways(self.state.running)
        if not gateways:
            console.write("No remote iFCP gateways.\n")
            return
        console.write("Remote Gateway                           TCP   Connections\n")
        console.write("---------------------------------------  ----  -----------\n")
        for address, count in gateways:
            console.write(f"{address:<39}  {ifcp.IFCP_TCP_PORT:<4}  {count}\n")

    async def _show_sessions(self, console: Console, args: list[str]) -> None:
        port_filter = None
        if args:
            if len(args) != 2 or args[0] != "fc-port":
                console.write("% Invalid arguments. Usage: show ifcp session [fc-port <0-63>]\n")
                return
            port_filter = ifcp.parse_int(args[1], *FC_PORTS)
            if port_filter is None:
                console.write(f"% Error: fc-port '{args[1]}' out of range ({FC_PORTS[0]}-{FC_PORTS[1]}).\n")
                return
        rows = [link for link in self.links() if port_filter is None or link.port == port_filter]
        if not rows:
            console.write("No iFCP sessions configured.\n")
            return
        text = "iFCP sessions (gateway instance 1, address translation mode)\n"
        text += "FC-Port  Zone  Remote Gateway                           TCP   State\n"
        text += "-------  ----  ---------------------------------------  ----  -----\n"
        for link in rows:
            state = "Bound" if link.state == "up" else "Unbound"
            text += f"{link.port:>7}  {link.zone:>4}  {link.remote_ip:<39}  {ifcp.IFCP_TCP_PORT:<4}  {state}\n"
        text += f"Total: {len(rows)}\n"
        await console.page(text)

    async def _show_config(self, console: Console, args: list[str]) -> None:
        which = args[0] if args else "running"
        if which not in ("running", "saved") or len(args) > 1:
            console.write("% Invalid arguments. Usage: show config [running|saved]\n")
            return
        config = self.state.running if which == "running" else self.state.saved
        text = f"! {which} configuration\nhostname {self.hostname}\n"
        for item in sorted(ifcp.connections(config), key=lambda c: (c["port"], c["zone"], c["remote"])):
            text += f"ifcp session add fc-port {item['port']} zone {item['zone']} remote-gateway {item['remote']}\n"
        await console.page(text)

    def _parse_link(self, console: Console, args: list[str], verb: str) -> tuple[int, int, str] | None:
        usage = f"% Usage: ifcp session {verb} fc-port <0-63> zone <1-4094> remote-gateway <address>\n"
        if len(args) != 6 or args[0::2] != ["fc-port", "zone", "remote-gateway"]:
            console.write("% Incomplete command.\n" if len(args) < 6 else "% Invalid arguments.\n")
            console.write(usage)
            return None
        port = ifcp.parse_int(args[1], *FC_PORTS)
        if port is None:
            console.write(f"% Error: fc-port '{args[1]}' out of range ({FC_PORTS[0]}-{FC_PORTS[1]}).\n")
            return None
        zone = ifcp.parse_int(args[3], 1, 4094)
        if zone is None:
            console.write(f"% Error: zone '{args[3]}' out of range (1-4094).\n")
            return None
        remote = ifcp.parse_ip(args[5])
        if remote is None:
            console.write(f"% Error: invalid remote-gateway address '{args[5]}'.\n")
            return None
        return port, zone, remote

    async def _add(self, console: Console, args: list[str]) -> None:
        parsed = self._parse_link(console, args, "add")
        if parsed is None:
            return
        port, zone, remote = parsed
        if ifcp.find(self.state.running, port, zone, remote) is not None:
            console.write(f"% Error: iFCP session exists (fc-port {port}, zone {zone}, remote-gateway {remote}).\n")
            return
        ifcp.connections(self.state.running).append({"port": port, "zone": zone, "remote": remote, "state": "up"})
        await console.applied()
        console.write(f"iFCP session added: fc-port {port} zone {zone} remote-gateway {remote} (CBIND sent).\n")

    async def _remove(self, console: Console, args: list[str]) -> None:
        parsed = self._parse_link(console, args, "remove")
        if parsed is None:
            return
        port, zone, remote = parsed
        item = ifcp.find(self.state.running, port, zone, remote)
        if item is None:
            console.write(
                f"% Error: no such iFCP session (fc-port {port}, zone {zone}, remote-gateway {remote}).\n"
            )
            return
        answer = await console.ask("Remove iFCP session and release its N_Port sessions? (y/n) [n]: ")
        if answer.lower() not in ("y", "yes"):
            console.write("Cancelled.\n")
            return
        await console.delay(self.REMOVE_SETTLE)  # UNBIND of every N_Port session of the zone
        ifcp.connections(self.state.running).remove(item)
        await console.applied()
        console.write(f"iFCP session removed: fc-port {port} zone {zone} remote-gateway {remote} (UNBIND done).\n")

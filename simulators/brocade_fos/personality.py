"""The Brocade FOS personality: login, prompt and dispatch of a 7840 extension switch's CLI.

The ``NAME:USER>`` prompt, the ATTENTION notice after login, ``logout:Closing the current session``
and ``rbash: X: command not found`` for anything else follow real FOS 8/9 session logs. The commands
themselves are the extension configuration's (portcfg.py), the shows' (show.py) and zoning's
(zoning_commands.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

from routers.drivers.base import RouterLink
from routers.platforms import Platform
from simulators.brocade_fos import zoning_commands
from simulators.brocade_fos.extension import ExtensionConfig
from simulators.brocade_fos.portcfg import PortCfg
from simulators.brocade_fos.show import FosShows
from simulators.brocade_fos.texts import ATTENTION
from simulators.brocade_fos.zoning import FabricZoning
from simulators.personality import Console, Personality, Session, SimState, TimingProfile


class FosPersonality(Personality):
    """Brocade FOS 9 on a 7840: extension (ipif/iproute/fciptunnel/fcipcircuit) and zoning."""

    platform: ClassVar[str] = Platform.BROCADE_FOS.value
    timing: ClassVar[TimingProfile] = TimingProfile(
        connect_to_login=0.4, after_password=1.2, command=0.15, mutating_command=0.4, jitter=0.25
    )
    transports: ClassVar[tuple[str, ...]] = ("telnet", "ssh")
    default_hostname: ClassVar[str] = "fos-ext1"
    max_sessions: ClassVar[int | None] = 32
    page_lines: ClassVar[int] = 24
    pager_prompt: ClassVar[str] = "Type <CR> to continue, Q<CR> to stop: "
    # FOS 9 SSH session logs show cfgshow of 70 lines unpaged; the pager is the older telnet CLI's
    # (Net::Telnet::Brcd answers it), so a telnet session here pages and an SSH session does not.
    paged_transports: ClassVar[tuple[str, ...]] = ("telnet",)
    # netmiko's brocade_fos session_preparation only reads the prompt (an empty line): FOS has no terminal
    # settings to send, and flexzone's driver sends none. The base class's empty line is all.

    def __init__(self, state: SimState, hostname: str) -> None:
        super().__init__(state, hostname)
        self.extension = ExtensionConfig(state)
        self.fabric_zoning = FabricZoning(state, self.zoning_locked)
        self._commands: dict[str, Any] = {
            "portcfg": PortCfg(self.extension),
            **FosShows(self.extension, self.fabric_zoning, lambda: self.hostname).commands(),
            **zoning_commands.ZoningCommands(self.fabric_zoning).commands(),
        }

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
        if zoning_commands.is_mutating(command, " ".join(words[1:])):
            return True
        return command == "portcfg" and any(w in ("create", "modify", "delete") for w in words[1:])

    # --- state -------------------------------------------------------------------------------
    @property
    def tunnels(self) -> dict[str, dict[str, Any]]:
        return self.extension.tunnels

    @property
    def zoning(self) -> dict[str, Any]:
        """The committed zoning (defined, effective, default access); open transactions aside."""
        return self.fabric_zoning.committed

    def save(self) -> None:
        """Write the committed zoning to flash (extension config is always saved)."""
        self.extension.mirror()
        self.fabric_zoning.flash()

    def session_ended(self, session: Session) -> None:
        self.fabric_zoning.session_ended(session)

    def seed_production_zoning(self) -> None:
        self.fabric_zoning.seed_production()
        self.save()

    def seed_fabric(self, size: int) -> None:
        self.fabric_zoning.seed_fabric(size)
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
                                         tuple(sorted(group.initiators)), tuple(sorted(group.targets)),
                                         pairs=tuple(sorted(group.pairs))))
        return sorted(result, key=lambda link: link.key)

    # --- dispatch ----------------------------------------------------------------------------
    async def execute(self, session: Session, console: Console, line: str) -> bool:
        command, _, rest = line.strip().partition(" ")
        name = command.lower()
        if name in ("exit", "logout", "quit"):
            console.write("logout:Closing the current session\n")
            return False
        handler = self._commands.get(name)
        if handler is None:
            console.write(f"rbash: {command}: command not found\n")
            return True
        await handler(session, console, rest.strip())
        return True

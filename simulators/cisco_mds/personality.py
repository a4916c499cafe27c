"""The Cisco MDS personality: login, prompts, exec mode and the dispatch of each line to its mode.

Exec: ``configure [terminal]``, ``terminal length|width|dont-ask|session-timeout``, ``clear zone lock
vsan N``, ``clear zone database vsan N``, ``zone copy active-zoneset full-zoneset vsan N``, ``copy
running-config startup-config``, ``show ...`` (show.py), ``exit``; in configuration
mode also ``do <exec>``, ``show ...``, ``exit`` and ``end``; the rest of configuration mode is
config.py's. Every line's output goes through its pipes, then the pager unless ``terminal length 0``
or ``| no-more``.
"""

from __future__ import annotations

import copy
import time
from typing import Any, ClassVar

from routers.drivers.base import RouterLink
from routers.platforms import Platform
from simulators.cisco_mds.config import ConfigMode, vsan_number
from simulators.cisco_mds.device_alias import DeviceAliases
from simulators.cisco_mds.fabric import seed_fabric, seed_production
from simulators.cisco_mds.parser import CliError, Sink, Words, apply_pipes, split_pipes
from simulators.cisco_mds.show import BANNER, MdsShows
from simulators.cisco_mds.zoning import MdsZoning
from simulators.personality import Console, Personality, Session, SimState, TimingProfile


class MdsPersonality(Personality):
    """Cisco MDS 9000 (NX-OS 9.x) with an IP storage module: FCIP and VSAN zoning."""

    platform: ClassVar[str] = Platform.CISCO_MDS.value
    timing: ClassVar[TimingProfile] = TimingProfile(
        connect_to_login=0.3, after_password=1.0, command=0.1, mutating_command=0.3, jitter=0.25
    )
    transports: ClassVar[tuple[str, ...]] = ("ssh", "telnet")
    default_hostname: ClassVar[str] = "mds-dir1"
    max_sessions: ClassVar[int | None] = 32
    page_lines: ClassVar[int] = 24
    pager_prompt: ClassVar[str] = " --More-- "
    # netmiko's cisco_nxos session_preparation sets the width and the length; flexzone's driver then
    # answers every question in advance (routers/drivers/cisco_mds.py, connect).
    session_preparation: ClassVar[frozenset[str]] = frozenset(
        {"", "terminal width 511", "terminal length 0", "terminal dont-ask"})

    def __init__(self, state: SimState, hostname: str) -> None:
        super().__init__(state, hostname)
        running = state.running
        running.setdefault("features", [])
        running.setdefault("profiles", {})
        running.setdefault("interfaces", {})
        running.setdefault("vsans", {"1": {"name": "VSAN0001"}})
        running.setdefault("logged_in", [])
        self.zoning = MdsZoning(state, self.zoning_locked)
        self.device_aliases = DeviceAliases(state)
        # What the configuration headers print: the last change and the last save (in memory, as the
        # switch's own clock would say after a reload: "since start").
        self.changed_at = self.saved_at = time.time()
        self.config = ConfigMode(self)
        self.show = MdsShows(self)

    # --- login and prompt --------------------------------------------------------------------
    def login_banner(self, transport: str) -> str:
        return "\nUser Access Verification\n" if transport == "telnet" else ""

    def username_prompt(self) -> str:
        return "login: "

    def motd(self, session: Session) -> str:
        return BANNER

    def login_failed_message(self) -> str:
        return "Login incorrect"

    def session_limit_message(self) -> str:
        return "CLI session limit 32 reached. Exiting."

    def prompt(self, session: Session) -> str:
        if not session.modes:
            return f"{self.hostname}# "
        mode = session.modes[-1].split(":")[0]
        return f"{self.hostname}({mode})# "

    def is_mutating(self, session: Session, line: str) -> bool:
        text = line.strip().lower()
        if text.startswith(("copy", "clear", "zone ")):
            return True
        if not session.modes or text.startswith(("do ", "show", "end", "exit")):
            return False
        return True

    # --- state -------------------------------------------------------------------------------
    @property
    def running(self) -> dict[str, Any]:
        return self.state.running

    def links(self) -> list[RouterLink]:
        """flexzone links: per VSAN, each (zone, port) group of ``fz_z<zone>_fcip<port>[_<i>_<t>]`` zones
        (full database or active) whose fcip interface has a peer address; up when every zone of the
        group is in the VSAN's active zoneset and the interface is not shut."""
        result = []
        for _vsan, zone, port, group, active in self.zoning.flexzone_groups():
            interface = self.running["interfaces"].get(str(port))
            if interface and interface.get("peer"):
                state = "up" if active and not interface["shutdown"] else "down"
                result.append(RouterLink(port, zone, interface["peer"], state,
                                         tuple(sorted(group.initiators)), tuple(sorted(group.targets)),
                                         pairs=tuple(sorted(group.pairs))))
        return sorted(result, key=lambda link: link.key)

    def save(self) -> None:
        self.state.saved = copy.deepcopy(self.state.running)
        self.saved_at = time.time()

    def seed_production_zoning(self) -> None:
        seed_production(self.zoning)
        self.save()

    def seed_fabric(self, size: int) -> None:
        """A realistic fabric of `size` other hosts' zones in VSAN 1 (fabric.seed_fabric), saved."""
        seed_fabric(self.zoning, size)
        self.save()

    # --- dispatch ----------------------------------------------------------------------------
    async def execute(self, session: Session, console: Console, line: str) -> bool:
        prompt = self.prompt(session)
        command, pipes = split_pipes(line)
        sink = Sink(console)
        words = Words(command)
        try:
            keep = await self._dispatch(session, sink, words)
        except CliError as error:
            # The caret sits under the offending word; the echoed command follows the prompt.
            sink.write(" " * (len(prompt) + error.position) + "^\n")
            sink.write(f"% {error.kind} at '^' marker.\n")
            keep = True
        text = apply_pipes(sink.text, pipes)
        if text:
            if session.paging and not any(p.startswith("no-more") for p in pipes):
                await console.page(text)
            else:
                console.write(text)
        if sink.changed:
            self.changed_at = time.time()
            await console.applied()
        return keep

    async def _dispatch(self, session: Session, out: Sink, words: Words) -> bool:
        if not session.modes:
            return await self._exec(session, out, words)
        first = (words.peek() or "").lower()
        if first == "end":
            words.keyword("end")
            session.modes.clear()
            return True
        if "exit".startswith(first) and len(first) >= 2:
            words.keyword("exit")
            session.modes.pop()
            return True
        if first == "do":
            words.keyword("do")
            return await self._exec(session, out, words)
        if len(first) >= 2 and "show".startswith(first):
            return await self._exec(session, out, words)
        await self.config(session, out, words)
        return True

    async def _exec(self, session: Session, out: Sink, words: Words) -> bool:
        command = words.keyword("configure", "show", "terminal", "copy", "clear", "zone", "exit", "end", "ping", "dir")
        if command == "exit":
            words.end()
            if session.modes:
                session.modes.pop()
                return True
            return False
        if command == "end":
            session.modes.clear()
            return True
        if command == "configure":
            words.keyword("terminal", optional=True)
            words.end()
            session.modes[:] = ["config"]
            out.write("Enter configuration commands, one per line. End with CNTL/Z.\n")
        elif command == "terminal":
            self._terminal(session, words)
        elif command == "copy":
            words.keyword("running-config")
            words.keyword("startup-config")
            words.end()
            out.write("[########################################] 100%\nCopy complete.\n")
            self.save()
            out.changed = True
        elif command == "show":
            await self.show(session, out, words)
        elif command == "clear":
            words.keyword("zone")
            what = words.keyword("lock", "database")
            words.keyword("vsan")
            vsan = vsan_number(words)
            words.end()
            if what == "lock":
                await self.zoning.clear_lock(session, out, vsan)
            else:
                self.zoning.clear_database(session, out, vsan)
        elif command == "zone":
            for keyword in ("copy", "active-zoneset", "full-zoneset", "vsan"):
                words.keyword(keyword)
            vsan = vsan_number(words)
            words.end()
            self.zoning.copy_active_to_full(session, out, vsan)
        else:
            raise CliError("Invalid command", words.items[0][1])
        return True

    @staticmethod
    def _terminal(session: Session, words: Words) -> None:
        """``terminal length N`` (0: no paging), ``width N``, ``session-timeout N``, ``dont-ask``."""
        setting = words.keyword("length", "width", "dont-ask", "session-timeout")
        if setting == "length":
            session.paging = words.number(range(0, 512)) != 0
        elif setting == "width":
            words.number(range(24, 512))
        elif setting == "session-timeout":
            words.number(range(0, 526000))
        words.end()
        if setting == "dont-ask":
            session.scratch["dont_ask"] = True

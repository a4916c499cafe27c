"""Cisco MDS 9000 NX-OS personality: FCIP (profiles and fcip interfaces) and VSAN zoning over SSH.

Formats follow public NX-OS captures: ``HOST#`` and the config-mode prompts, ``terminal length 0``/
``terminal width 511``, ``% Invalid command at '^' marker.`` with its caret line, the real ``show
interface brief`` FC header, ``show zoneset [active] vsan N`` layout and the ``interface fcipN``
running-config block. The fcip section of ``show interface brief``, ``show fcip profile`` and ``show
interface fcip N`` are documented but uncaptured formats ([R]).

Keywords may be abbreviated to any unambiguous prefix, as on the device (``conf t``, ``sh int br``).

Grammar. Exec: ``configure [terminal]``, ``terminal length|width|dont-ask|session-timeout``,
``clear zone lock vsan N``, ``copy running-config startup-config``, ``show interface brief | interface
fcip N | fcip profile [N|all] | fcip summary | zoneset [active] [vsan N] | zone [status] [vsan N] |
running-config | startup-config | version | vsan | feature | terminal``, ``exit``; pipes ``| no-more``,
``| include X``, ``| exclude X``. Config: ``[no] feature fcip``, ``[no] fcip profile N`` (``ip address
A``), ``[no] interface fcip N`` (``use-profile N``, ``peer-info ipaddr A [port P]``, ``[no] shutdown``,
``[no] switchport description T``, ``switchport mode|trunk ...``, ``tcp-connections N``),
``[no] zone name Z vsan N`` (``[no] member pwwn W | device-alias A``), ``[no] zoneset name S vsan N``
(``[no] member Z``), ``[no] zoneset activate name S vsan N``, ``[no] zone mode enhanced vsan N``,
``[no] zone default-zone permit vsan N``, ``[no] zone commit vsan N``,
``vsan database`` (``[no] vsan N [name X]``), ``hostname H``, ``do <exec>``, ``show ...``, ``exit``, ``end``.
Zoning (modes, the enhanced-mode lock, the zoning shows) lives in routers.sim.mds_zoning; with
``terminal dont-ask`` the session's confirmation questions are not asked.

State layout (``SimState.running``)::

    features: ["fcip"]
    profiles: {"5": {"ip": "10.1.1.1" | None}}
    interfaces: {"5": {"profile": "5"|None, "peer": ip|None, "shutdown": bool, "description": str}}
    vsans: {"1": {"name": "VSAN0001"}}
    zones: {"1": {"fz_z7_fcip5": ["10:00:...", "device-alias hostA"]}}   # per VSAN, the full zone database
    zonesets: {"1": {"fz_zoneset": ["fz_z7_fcip5"]}}   # per VSAN
    active: {"1": {"name": "fz_zoneset", "zones": {"fz_z7_fcip5": ["10:00:..."]}}}
    zone_modes: {"1": "enhanced"}                      # absent: basic
    default_zones: {"1": "permit"}                     # absent: deny

``copy running-config startup-config`` copies running to ``saved`` (the startup configuration).
"""

from __future__ import annotations

import copy
import ipaddress
import re
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from routers.drivers.base import RouterLink
from routers.sim.mds_zoning import MdsZoning, render_zoning
from routers.sim.personality import Console, Personality, Session, SimState, TimingProfile

FCIP_IDS = range(1, 256)
VSAN_IDS = range(1, 4095)
RESERVED_VSANS = (4079, 4094)
FC_PORTS = 8
WWN_RE = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){7}$")
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_$^-]{0,63}$")
SWITCH_WWN_PREFIX = "20:00:00:3a:9c:51:7e"

BANNER = (
    "Cisco Nexus Operating System (NX-OS) Software\n"
    "TAC support: http://www.cisco.com/tac\n"
    "Copyright (c) 2002-2024, Cisco Systems, Inc. All rights reserved.\n"
    "The copyrights to certain works contained in this software are\n"
    "owned by other third parties and used and distributed under their own\n"
    "licenses, such as open source.  This software is provided \"as is,\" and unless\n"
    "otherwise stated, there is no warranty, express or implied, including but not\n"
    "limited to warranties of merchantability and fitness for a particular purpose.\n"
)

BRIEF_FC_HEADER = """
-----------------------------------------------------------------------------------------
Interface  Vsan   Admin  Admin   Status       SFP    Oper  Oper   Port     Logical
                  Mode   Trunk                       Mode  Speed  Channel   Type
                         Mode                              (Gbps)
-----------------------------------------------------------------------------------------
"""
BRIEF_FCIP_HEADER = """
-------------------------------------------------------------------------------
Interface          Vsan   Admin  Admin   Status      Oper  Profile  Port-channel
                          Mode   Trunk               Mode
                                 Mode
-------------------------------------------------------------------------------
"""


class CliError(Exception):
    """A parse error: `kind` is Invalid/Incomplete/Invalid number, `position` indexes the command line."""

    def __init__(self, kind: str, position: int) -> None:
        super().__init__(kind)
        self.kind = kind
        self.position = position


class Words:
    """The tokens of one command line with their column positions (for the '^' marker)."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.items = [(m.group(), m.start()) for m in re.finditer(r"\S+", line)]
        self.index = 0

    def more(self) -> bool:
        return self.index < len(self.items)

    def peek(self) -> str | None:
        return self.items[self.index][0] if self.more() else None

    def position(self) -> int:
        return self.items[self.index][1] if self.more() else len(self.line.rstrip()) + 1

    def keyword(self, *choices: str, optional: bool = False) -> str | None:
        """Consume one keyword, accepting any unambiguous prefix (NX-OS parser behaviour)."""
        if not self.more():
            if optional:
                return None
            raise CliError("Incomplete command", self.position())
        word = self.items[self.index][0].lower()
        matches = [c for c in choices if c == word] or [c for c in choices if c.startswith(word)]
        if len(matches) != 1:
            if optional:
                return None
            raise CliError("Invalid command" if not matches else "Ambiguous command", self.position())
        self.index += 1
        return matches[0]

    def value(self) -> str:
        if not self.more():
            raise CliError("Incomplete command", self.position())
        word = self.items[self.index][0]
        self.index += 1
        return word

    def number(self, valid: range) -> int:
        position = self.position()
        word = self.value()
        if not word.isdigit() or int(word) not in valid:
            raise CliError("Invalid number" if word.isdigit() else "Invalid command", position)
        return int(word)

    def address(self) -> str:
        position = self.position()
        word = self.value()
        try:
            return str(ipaddress.IPv4Address(word))
        except ValueError:
            raise CliError("Invalid ip address", position) from None

    def name(self) -> str:
        position = self.position()
        word = self.value()
        if not NAME_RE.match(word):
            raise CliError("Invalid command", position)
        return word

    def rest(self) -> str:
        if not self.more():
            raise CliError("Incomplete command", self.position())
        start = self.items[self.index][1]
        self.index = len(self.items)
        return self.line[start:].strip()

    def end(self) -> None:
        if self.more():
            raise CliError("Invalid command", self.position())


Handler = Callable[[Session, Console, Words, bool], Awaitable[None]]


class MdsPersonality(Personality):
    """Cisco MDS 9000 (NX-OS 9.x) with an IP storage module: FCIP and VSAN zoning."""

    platform: ClassVar[str] = "cisco_mds"
    timing: ClassVar[TimingProfile] = TimingProfile(
        connect_to_login=0.3, after_password=1.0, command=0.1, mutating_command=0.3, jitter=0.25
    )
    transports: ClassVar[tuple[str, ...]] = ("ssh", "telnet")
    default_hostname: ClassVar[str] = "mds-dir1"
    max_sessions: ClassVar[int | None] = 32
    page_lines: ClassVar[int] = 24
    pager_prompt: ClassVar[str] = " --More-- "

    def __init__(self, state: SimState, hostname: str) -> None:
        super().__init__(state, hostname)
        running = state.running
        running.setdefault("features", [])
        running.setdefault("profiles", {})
        running.setdefault("interfaces", {})
        running.setdefault("vsans", {"1": {"name": "VSAN0001"}})
        self.zoning = MdsZoning(state, self.zoning_locked)

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
        if text.startswith(("copy", "clear")):
            return True
        if not session.modes or text.startswith(("do ", "show", "end", "exit")):
            return False
        return True

    # --- state helpers -----------------------------------------------------------------------
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
                                         tuple(sorted(group.initiators)), tuple(sorted(group.targets))))
        return sorted(result, key=lambda link: link.key)

    def save(self) -> None:
        self.state.saved = copy.deepcopy(self.state.running)

    def seed_production_zoning(self) -> None:
        self.zoning.seed_production()
        self.save()

    # --- dispatch ----------------------------------------------------------------------------
    async def execute(self, session: Session, console: Console, line: str) -> bool:
        prompt = self.prompt(session)
        command, pipes = _split_pipes(line)
        sink = _Sink(console)
        words = Words(command)
        try:
            keep = await self._dispatch(session, sink, words)
        except CliError as error:
            # The caret sits under the offending word; the echoed command follows the prompt.
            sink.write(" " * (len(prompt) + error.position) + "^\n")
            sink.write(f"% {error.kind} at '^' marker.\n")
            keep = True
        text = _apply_pipes(sink.text, pipes)
        if text:
            if session.paging and not any(p.startswith("no-more") for p in pipes):
                await console.page(text)
            else:
                console.write(text)
        if sink.changed:
            await console.applied()
        return keep

    async def _dispatch(self, session: Session, out: _Sink, words: Words) -> bool:
        if not session.modes:
            return await self._exec(session, out, words)
        first = words.peek()
        if first is not None and first.lower() in ("end",):
            words.keyword("end")
            session.modes.clear()
            return True
        if first is not None and "exit".startswith(first.lower()) and len(first) >= 2:
            words.keyword("exit")
            session.modes.pop()
            return True
        if first is not None and first.lower() == "do":
            words.keyword("do")
            return await self._exec(session, out, words)
        if first is not None and len(first) >= 2 and "show".startswith(first.lower()):
            return await self._exec(session, out, words)
        mode = session.modes[-1]
        if mode != "config":
            handled = await self._submode(session, out, words, mode)
            if handled:
                return True
            words.index = 0
        await self._config(session, out, words)
        return True

    # --- exec mode ---------------------------------------------------------------------------
    async def _exec(self, session: Session, out: _Sink, words: Words) -> bool:
        command = words.keyword("configure", "show", "terminal", "copy", "clear", "exit", "end", "ping", "dir")
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
        elif command == "copy":
            words.keyword("running-config")
            words.keyword("startup-config")
            words.end()
            out.write("[########################################] 100%\nCopy complete.\n")
            self.save()
            out.changed = True
        elif command == "show":
            await self._show(session, out, words)
        elif command == "clear":
            words.keyword("zone")
            words.keyword("lock")
            words.keyword("vsan")
            vsan = self._vsan(words)
            words.end()
            await self.zoning.clear_lock(session, out, vsan)
        else:
            raise CliError("Invalid command", words.items[0][1])
        return True

    async def _show(self, session: Session, out: _Sink, words: Words) -> None:
        what = words.keyword("interface", "fcip", "zoneset", "zone", "running-config", "startup-config",
                             "version", "vsan", "feature", "terminal")
        if what == "interface":
            if words.keyword("brief", optional=True):
                words.end()
                out.write(self._interface_brief())
                return
            words.keyword("fcip")
            number = words.number(FCIP_IDS)
            words.end()
            if str(number) not in self.running["interfaces"]:
                raise CliError("Invalid interface format", words.items[-1][1])
            out.write(self._interface_fcip(number))
        elif what == "fcip":
            if words.keyword("profile", "summary") == "summary":
                words.end()
                out.write(self._fcip_summary())
                return
            target = words.peek()
            if target is None or words.keyword("all", optional=True):
                words.end()
                out.write(self._profile_table())
            else:
                number = words.number(FCIP_IDS)
                words.end()
                out.write(self._profile_detail(number))
        elif what == "zone" and words.keyword("status", optional=True):
            words.keyword("vsan")
            vsan = words.number(VSAN_IDS)
            words.end()
            out.write(self.zoning.zone_status(vsan))
        elif what in ("zoneset", "zone"):
            active = words.keyword("active", optional=True) is not None if what == "zoneset" else False
            vsan = None
            if words.keyword("vsan", optional=True):
                vsan = words.number(VSAN_IDS)
            words.end()
            out.write(self.zoning.show_zoneset(active, vsan) if what == "zoneset" else self.zoning.show_zone(vsan))
        elif what in ("running-config", "startup-config"):
            words.end()
            config = self.running if what == "running-config" else self.state.saved
            if what == "startup-config" and not config:
                out.write("No startup configuration.\n")
            else:
                out.write(render_config(config, self.hostname, what))
        elif what == "version":
            words.end()
            out.write(self._version())
        elif what == "vsan":
            words.end()
            for vsan, info in sorted(self.running["vsans"].items(), key=lambda item: int(item[0])):
                out.write(f"vsan {vsan} information\n         name:{info['name']}  state:active\n"
                          "         interoperability mode:default\n"
                          "         loadbalancing:src-id/dst-id/oxid\n         operational state:up\n\n")
        elif what == "feature":
            words.end()
            out.write("Feature Name          Instance  State\n-------------------- -------- --------\n")
            for feature in ("fcip", "fcsp", "ivr", "npiv", "port-security", "telnet"):
                state = "enabled" if feature in self.running["features"] else "disabled"
                out.write(f"{feature:<20s}  1        {state}\n")
        else:
            words.end()
            out.write(f"TTY: /dev/pts/0 Type: \"xterm\"\nLength: {24 if session.paging else 0} lines, "
                      "Width: 511 columns\nSession Timeout: 30 minutes\n")

    # --- config mode -------------------------------------------------------------------------
    async def _config(self, session: Session, out: _Sink, words: Words) -> None:
        negate = words.keyword("no", optional=True) is not None
        position = words.position()
        command = words.keyword("feature", "fcip", "interface", "zone", "zoneset", "vsan", "hostname")
        if command == "feature":
            words.keyword("fcip")
            words.end()
            features = self.running["features"]
            if negate and "fcip" in features:
                features.remove("fcip")
                self.running["profiles"].clear()
                self.running["interfaces"].clear()
            elif not negate and "fcip" not in features:
                features.append("fcip")
            out.changed = True
        elif command == "fcip":
            self._require_fcip(position)
            words.keyword("profile")
            number = words.number(FCIP_IDS)
            words.end()
            if negate:
                users = [n for n, i in self.running["interfaces"].items() if i.get("profile") == str(number)]
                if users:
                    out.write(f"fcip profile {number} is in use by interface fcip{users[0]}\n")
                    return
                self.running["profiles"].pop(str(number), None)
            else:
                self.running["profiles"].setdefault(str(number), {"ip": None})
                session.modes[1:] = [f"config-profile:{number}"]
            out.changed = True
        elif command == "interface":
            number = self._fcip_interface(words)
            words.end()
            if negate:
                if self.running["interfaces"].pop(str(number), None) is None:
                    out.write(f"Interface fcip{number} does not exist\n")  # [R]
                    return
            else:
                self.running["interfaces"].setdefault(
                    str(number), {"profile": None, "peer": None, "shutdown": True, "description": ""})
                session.modes[1:] = [f"config-if:{number}"]
            out.changed = True
        elif command == "zone":
            await self._zone_command(session, out, words, negate)
        elif command == "zoneset":
            await self._zoneset_command(session, out, words, negate)
        elif command == "vsan":
            words.keyword("database")
            words.end()
            session.modes[1:] = ["config-vsan-db"]
        else:
            name = words.name()
            words.end()
            self.hostname = name
            out.changed = True

    def _require_fcip(self, position: int) -> None:
        # Commands of a disabled feature do not exist in the parser at all.
        if "fcip" not in self.running["features"]:
            raise CliError("Invalid command", position)

    def _fcip_interface(self, words: Words) -> int:
        position = words.position()
        word = words.value().lower()
        if "fcip" not in self.running["features"] or not "fcip".startswith(re.sub(r"\d+$", "", word) or "x"):
            raise CliError("Invalid interface format" if "fcip" in self.running["features"] else "Invalid command",
                           position)
        digits = re.sub(r"^[a-z]+", "", word)
        if not digits:
            return words.number(FCIP_IDS)
        if not digits.isdigit() or int(digits) not in FCIP_IDS:
            raise CliError("Invalid interface format", position)
        return int(digits)

    def _vsan(self, words: Words) -> int:
        position = words.position()
        vsan = words.number(VSAN_IDS)
        if vsan in RESERVED_VSANS:
            raise CliError("Invalid number", position)
        return vsan

    async def _zone_command(self, session: Session, out: _Sink, words: Words, negate: bool) -> None:
        action = words.keyword("name", "mode", "commit", "default-zone")
        if action == "name":
            name = words.name()
            words.keyword("vsan")
            vsan = self._vsan(words)
            words.end()
            if self.zoning.zone_name(session, out, name, vsan, negate):
                session.modes[1:] = [f"config-zone:{vsan}:{name}"]
            return
        if action == "mode":
            words.keyword("enhanced")
        elif action == "default-zone":
            words.keyword("permit")
        words.keyword("vsan")
        vsan = self._vsan(words)
        words.end()
        if action == "default-zone":
            self.zoning.set_default_zone(session, out, vsan, permit=not negate)
        elif action == "mode":
            await self.zoning.set_mode(session, out, vsan, enhanced=not negate)
        elif negate:
            self.zoning.discard(session, out, vsan)
        else:
            self.zoning.commit(session, out, vsan)

    async def _zoneset_command(self, session: Session, out: _Sink, words: Words, negate: bool) -> None:
        action = words.keyword("name", "activate")
        if action == "activate":
            words.keyword("name")
        name = words.name()
        words.keyword("vsan")
        vsan = self._vsan(words)
        words.end()
        if action == "activate":
            await self.zoning.activate(session, out, name, vsan, negate)
        elif self.zoning.zoneset_name(session, out, name, vsan, negate):
            session.modes[1:] = [f"config-zoneset:{vsan}:{name}"]

    async def _submode(self, session: Session, out: _Sink, words: Words, mode: str) -> bool:
        """Sub-mode commands; False lets the line fall through to the global config parser."""
        kind, *ids = mode.split(":")
        first = (words.peek() or "").lower()
        negate = first == "no"
        if negate:
            words.keyword("no")
        word = (words.peek() or "").lower()
        if kind == "config-profile" and word and "ip".startswith(word) and len(word) >= 2:
            words.keyword("ip")
            words.keyword("address")
            profile = self.running["profiles"][ids[0]]
            if negate:
                profile["ip"] = None
            else:
                profile["ip"] = words.address()
            words.end()
            out.changed = True
            return True
        if kind == "config-if" and word:
            interface = self.running["interfaces"][ids[0]]
            choices = ("use-profile", "peer-info", "shutdown", "switchport", "description", "tcp-connections")
            command = words.keyword(*choices, optional=True)
            if command is None:
                return False
            if command == "use-profile":
                if negate:
                    interface["profile"] = None
                else:
                    interface["profile"] = str(words.number(FCIP_IDS))
            elif command == "peer-info":
                words.keyword("ipaddr")
                address = words.address()
                if words.keyword("port", optional=True):
                    words.number(range(1, 65536))
                interface["peer"] = None if negate else address
            elif command == "shutdown":
                interface["shutdown"] = not negate
            elif command == "description" or (command == "switchport" and words.keyword(
                    "description", "mode", "trunk")[0] == "d"):
                interface["description"] = "" if negate else words.rest()
            elif command == "switchport":
                words.rest()
            else:
                words.number(range(1, 6))
            words.end()
            out.changed = True
            return True
        if kind == "config-zone" and word and "member".startswith(word):
            words.keyword("member")
            kind = words.keyword("pwwn", "device-alias")
            position = words.position()
            if kind == "device-alias":
                member = f"device-alias {words.name()}"  # the device-alias database itself is not modelled
            else:
                member = words.value().lower()
                if not WWN_RE.match(member):
                    raise CliError("Invalid command", position)
            words.end()
            self.zoning.zone_member(session, out, int(ids[0]), ids[1], member, negate)
            return True
        if kind == "config-zoneset" and word and "member".startswith(word):
            words.keyword("member")
            name = words.name()
            words.end()
            self.zoning.zoneset_member(session, out, int(ids[0]), ids[1], name, negate)
            return True
        if kind == "config-vsan-db" and word and "vsan".startswith(word):
            words.keyword("vsan")
            vsan = self._vsan(words)
            name = f"VSAN{vsan:04d}"
            if words.keyword("name", optional=True):
                name = words.name()
            words.end()
            if negate:
                self.running["vsans"].pop(str(vsan), None)
            else:
                self.running["vsans"][str(vsan)] = {"name": name}
            out.changed = True
            return True
        words.index = 0
        return False

    # --- outputs -----------------------------------------------------------------------------
    def _interface_status(self, interface: dict[str, Any]) -> str:
        if interface["shutdown"]:
            return "down"
        profile = self.running["profiles"].get(interface.get("profile") or "")
        return "trunking" if profile and profile.get("ip") and interface.get("peer") else "down"

    def _interface_brief(self) -> str:
        text = BRIEF_FC_HEADER
        for port in range(1, FC_PORTS + 1):
            text += f"fc1/{port:<7d} 1      auto   off     sfpAbsent    --     --           --       --\n"
        if self.running["interfaces"]:
            text += BRIEF_FCIP_HEADER
            for number, interface in sorted(self.running["interfaces"].items(), key=lambda item: int(item[0])):
                status = self._interface_status(interface)
                mode = "TE" if status == "trunking" else "--"
                profile = interface.get("profile") or "--"
                text += (f"fcip{number:<14s} 1      auto   on      {status:<11s} {mode:<5s} {profile:<8s} --\n")
        text += ("\n-------------------------------------------------------------------------------\n"
                 "Interface                    Status     IP Address        Speed        MTU\n"
                 "-------------------------------------------------------------------------------\n"
                 "mgmt0                        up         --                1 Gbps       1500\n")
        return text

    def _interface_fcip(self, number: int) -> str:
        interface = self.running["interfaces"][str(number)]
        status = self._interface_status(interface)
        headline = "down (Administratively down)" if interface["shutdown"] else status
        profile = interface.get("profile")
        lines = [
            f"fcip{number} is {headline}",
            "    Hardware is IPStorage",
            f"    Port WWN is 20:{0x40 + number:02x}:00:3a:9c:51:7e:00",
        ]
        if interface.get("description"):
            lines.append(f"    Port description is {interface['description']}")
        if status == "trunking":
            lines.append("    Peer port WWN is 20:40:00:3a:9c:77:12:00")
        lines += [
            "    Admin port mode is auto, trunk mode is on",
            "    snmp link state traps are enabled",
            f"    Port mode is {'TE' if status == 'trunking' else 'auto'}",
            "    Port vsan is 1",
            "    Speed is 10 Gbps",
            "    Trunk vsans (admin allowed and active) (1)",
        ]
        if profile:
            lines.append(f"    Using Profile id {profile}  (interface IPStorage1/1)")
        if interface.get("peer"):
            lines += ["    Peer Information", f"      Peer Internet address is {interface['peer']} and port is 3225"]
        lines += [
            "    Write acceleration mode is configured off",
            "    Tape acceleration mode is configured off",
            "    Tape Accelerator flow control buffer size is automatic",
            "    IP Compression is disabled",
            "    Maximum number of TCP connections is 2",
            "    QOS control code point is 0",
            "    QOS data code point is 0",
        ]
        return "\n".join(lines) + "\n"

    def _profile_table(self) -> str:
        text = "\nProfileId       Ipaddr          TcpPort\n"
        for number, profile in sorted(self.running["profiles"].items(), key=lambda item: int(item[0])):
            text += f"{number:<16s}{profile.get('ip') or '0.0.0.0':<16s}3225\n"
        return text

    def _profile_detail(self, number: int) -> str:
        profile = self.running["profiles"].get(str(number))
        if profile is None:
            return f"FCIP Profile {number} does not exist\n"  # [R]
        return (f"FCIP Profile {number}\n"
                f"    Internet Address is {profile.get('ip') or '0.0.0.0'} (interface IPStorage1/1)\n"
                "    Listen Port is 3225\n"
                "    TCP parameters\n"
                "        SACK is enabled\n"
                "        PMTU discover is enabled, reset timeout is 3600 sec\n"
                "        Keep alive is 60 sec\n"
                "        Minimum retransmission timeout is 200 ms\n"
                "        Maximum number of re-transmissions is 4\n"
                "        Send buffer size is 0 KB\n"
                "        Maximum allowed bandwidth is 1000000 kbps\n"
                "        Minimum available bandwidth is 500000 kbps\n"
                "        Estimated round trip time is 1000 usec\n"
                "        Congestion window monitoring is enabled, burst size is 50 KB\n")

    def _fcip_summary(self) -> str:
        # [R] layout from the SAN-OS/NX-OS configuration guides; no capture available.
        rule = "-" * 79
        text = (f"\n{rule}\nTun prof  Eth-if            peer-ip          Status T W T Enc Comp Bandwidth   rtt\n"
                f"                                                    E A A           max/min     (us)\n{rule}\n")
        for number, interface in sorted(self.running["interfaces"].items(), key=lambda item: int(item[0])):
            status = {"trunking": "TRNK", "down": "DOWN"}[self._interface_status(interface)]
            text += (f"{number:<4s}{interface.get('profile') or '--':<6s}{'IPS1/1':<18s}"
                     f"{interface.get('peer') or '--':<17s}{status:<7s}N N N N   N    1000M/500M  1000\n")
        return text

    def _version(self) -> str:
        return (BANNER + "\nSoftware\n  BIOS:      version 2.1.18\n  system:    version 9.4(2a)\n\n"
                "Hardware\n  cisco MDS 9250i 40 FC 2 IPS 8 FCoE (2 RU) Chassis (\"40FC+8FCoE+2IPS Supervisor\")\n"
                f"  Device name: {self.hostname}\n")


class _Sink:
    """Collects a command's output so pipes (`| include`, `| no-more`) can filter it before paging."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.parts: list[str] = []
        self.changed = False

    def write(self, text: str) -> None:
        self.parts.append(text)

    async def ask(self, question: str) -> str:
        """A confirmation question: what the command said so far must reach the screen before it."""
        self.console.write(self.text)
        self.parts.clear()
        return await self.console.ask(question)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _split_pipes(line: str) -> tuple[str, list[str]]:
    command, *pipes = line.split("|")
    return command, [pipe.strip().lower() if pipe.strip().lower().startswith("no") else pipe.strip()
                     for pipe in pipes]


def _apply_pipes(text: str, pipes: list[str]) -> str:
    for pipe in pipes:
        word, _, argument = pipe.partition(" ")
        if "include".startswith(word.lower()) or word.lower() == "grep":
            text = "".join(line for line in text.splitlines(keepends=True) if argument.strip() in line)
        elif "exclude".startswith(word.lower()):
            text = "".join(line for line in text.splitlines(keepends=True) if argument.strip() not in line)
    return text


def render_config(config: dict[str, Any], hostname: str, which: str) -> str:
    """NX-OS running-config text for the parts the simulator models."""
    lines = ["", f"!Command: show {which}", "", "version 9.4(2a)"]
    lines += [f"feature {feature}" for feature in config.get("features", [])]
    lines += ["", f"hostname {hostname}"]
    extra_vsans = sorted((v for v in config.get("vsans", {}) if v != "1"), key=int)
    if extra_vsans:
        lines += ["", "vsan database"]
        lines += [f"  vsan {v} name {config['vsans'][v]['name']}" for v in extra_vsans]
    for number, profile in sorted(config.get("profiles", {}).items(), key=lambda item: int(item[0])):
        lines += ["", f"fcip profile {number}"]
        if profile.get("ip"):
            lines.append(f"  ip address {profile['ip']}")
    lines += render_zoning(config)
    for number, interface in sorted(config.get("interfaces", {}).items(), key=lambda item: int(item[0])):
        lines += ["", f"interface fcip{number}"]
        if interface.get("description"):
            lines.append(f"  switchport description {interface['description']}")
        if interface.get("profile"):
            lines.append(f"  use-profile {interface['profile']}")
        if interface.get("peer"):
            lines.append(f"  peer-info ipaddr {interface['peer']}")
        lines.append("  shutdown" if interface.get("shutdown") else "  no shutdown")
    lines += ["", "interface mgmt0", "  ip address 192.0.2.10/24", ""]
    return "\n".join(lines) + "\n"

"""Cisco MDS configuration mode (``configure terminal``) and its sub-modes.

Config: ``[no] feature fcip``, ``[no] fcip profile N``, ``[no] interface fcip N``, ``[no] zone name Z vsan
N``, ``[no] fcalias name A vsan N``, ``[no] zoneset name S vsan N``, ``[no] zoneset activate name S vsan
N``, ``[no] zoneset distribute full vsan N``, ``[no] zone mode enhanced vsan N``, ``[no] zone
default-zone permit vsan N``, ``[no] zone commit vsan N``, ``device-alias database``, ``device-alias
commit|abort``, ``vsan database``, ``hostname|switchname H``. Sub-modes, each entered by its config
command: ``config-profile`` (``[no] ip address A``), ``config-if`` (``use-profile N``, ``peer-info ipaddr
A [port P]``, ``[no] shutdown``, ``[no] switchport description T``, ``switchport mode|trunk ...``,
``tcp-connections N``), ``config-zone`` (``[no] member pwwn W | device-alias A | fcalias A``),
``config-fcalias`` (``[no] member pwwn W | device-alias A``), ``config-zoneset`` (``[no] member Z``),
``config-device-alias-db`` (``device-alias name X pwwn W``, ``no device-alias name X``) and
``config-vsan-db`` (``[no] vsan N [name X]``, ``vsan N interface fc1/P``). A line a sub-mode does not
know is read as a config command and, once accepted, leaves the sub-mode, as NX-OS does.

A session's modes are ``Session.modes``: ``["config"]`` then the sub-mode, written ``KIND:ID[:NAME]``
(``config-zone:1:fz_z7_fcip5``); the prompt shows ``KIND``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from routers.platforms import WWN_ANY_CASE_RE
from simulators.cisco_mds.parser import (
    FCIP_IDS,
    NAME_RE,
    RESERVED_VSANS,
    VSAN_IDS,
    CliError,
    Sink,
    Words,
    fcip_interface,
)
from simulators.cisco_mds.switch import Switch
from simulators.cisco_mds.zoning import MdsZoning
from simulators.personality import Session

# A sub-mode line: (session, output, words after any "no", the first of them in lower case, the
# mode's ids, negated) -> whether the sub-mode knew it.
SubmodeLine = Callable[[Session, Sink, Words, str, list[str], bool], bool]
INTERFACE_COMMANDS = ("use-profile", "peer-info", "shutdown", "switchport", "description", "tcp-connections")
FC_PORT_RE = re.compile(r"fc1/([1-9]|[1-3]\d|4[0-8])")


def wwn(words: Words) -> str:
    position = words.position()
    value = words.value().lower()
    if not WWN_ANY_CASE_RE.match(value):
        raise CliError("Invalid command", position)
    return value


def vsan_number(words: Words) -> int:
    position = words.position()
    vsan = words.number(VSAN_IDS)
    if vsan in RESERVED_VSANS:
        raise CliError("Invalid number", position)
    return vsan


class ConfigMode:
    """The configuration-mode commands of one switch."""

    def __init__(self, personality: Switch) -> None:
        self.personality = personality
        self.submodes: dict[str, SubmodeLine] = {
            "config-profile": self._profile_line, "config-if": self._interface_line,
            "config-zone": self._zone_line, "config-zoneset": self._zoneset_line,
            "config-fcalias": self._fcalias_line, "config-device-alias-db": self._device_alias_line,
            "config-vsan-db": self._vsan_db_line,
        }

    @property
    def running(self) -> dict[str, Any]:
        return self.personality.running

    @property
    def zoning(self) -> MdsZoning:
        return self.personality.zoning

    async def __call__(self, session: Session, out: Sink, words: Words) -> None:
        """One line in configuration mode or a sub-mode."""
        mode = session.modes[-1]
        if mode == "config":
            await self.config(session, out, words)
            return
        if self.submode(session, out, words, mode):
            return
        words.index = 0
        modes = list(session.modes)
        session.modes[1:] = []
        try:
            await self.config(session, out, words)
        except CliError:
            session.modes[:] = modes  # a line neither mode knows leaves the session where it was
            raise

    # --- config ------------------------------------------------------------------------------
    async def config(self, session: Session, out: Sink, words: Words) -> None:
        negate = words.keyword("no", optional=True) is not None
        position = words.position()
        command = words.keyword("feature", "fcip", "fcalias", "interface", "zone", "zoneset", "device-alias", "vsan",
                                "hostname", "switchname")
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
            number = fcip_interface(words, "fcip" in self.running["features"])
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
            await self._zone(session, out, words, negate)
        elif command == "zoneset":
            await self._zoneset(session, out, words, negate)
        elif command == "fcalias":
            self._fcalias(session, out, words, negate)
        elif command == "device-alias":
            self._device_alias(session, out, words, position, negate)
        elif command == "vsan":
            words.keyword("database")
            words.end()
            session.modes[1:] = ["config-vsan-db"]
        else:
            name = words.name()
            words.end()
            self.personality.hostname = name
            out.changed = True

    def _require_fcip(self, position: int) -> None:
        # Commands of a disabled feature do not exist in the parser at all.
        if "fcip" not in self.running["features"]:
            raise CliError("Invalid command", position)

    async def _zone(self, session: Session, out: Sink, words: Words, negate: bool) -> None:
        action = words.keyword("name", "mode", "commit", "default-zone")
        if action == "name":
            name = words.name()
            words.keyword("vsan")
            vsan = vsan_number(words)
            words.end()
            if self.zoning.zone_name(session, out, name, vsan, negate):
                session.modes[1:] = [f"config-zone:{vsan}:{name}"]
            return
        if action == "mode":
            words.keyword("enhanced")
        elif action == "default-zone":
            words.keyword("permit")
        words.keyword("vsan")
        vsan = vsan_number(words)
        words.end()
        if action == "default-zone":
            self.zoning.set_default_zone(session, out, vsan, permit=not negate)
        elif action == "mode":
            await self.zoning.set_mode(session, out, vsan, enhanced=not negate)
        elif negate:
            self.zoning.discard(session, out, vsan)
        else:
            self.zoning.commit(session, out, vsan)

    def _fcalias(self, session: Session, out: Sink, words: Words, negate: bool) -> None:
        words.keyword("name")
        name = words.name()
        words.keyword("vsan")
        vsan = vsan_number(words)
        words.end()
        if self.zoning.fcalias_name(session, out, name, vsan, negate):
            session.modes[1:] = [f"config-fcalias:{vsan}:{name}"]

    def _device_alias(self, session: Session, out: Sink, words: Words, position: int, negate: bool) -> None:
        action = words.keyword("database", "commit", "abort")
        words.end()
        if negate:
            raise CliError("Invalid command", position)
        aliases = self.personality.device_aliases
        if action == "database":
            session.modes[1:] = ["config-device-alias-db"]
        elif action == "commit":
            aliases.commit(out)
        else:
            aliases.abort(out)

    async def _zoneset(self, session: Session, out: Sink, words: Words, negate: bool) -> None:
        action = words.keyword("name", "activate", "distribute")
        if action == "distribute":
            words.keyword("full")
            words.keyword("vsan")
            vsan = vsan_number(words)
            words.end()
            self.zoning.set_distribute(out, vsan, full=not negate)
            return
        if action == "activate":
            words.keyword("name")
        name = words.name()
        words.keyword("vsan")
        vsan = vsan_number(words)
        words.end()
        if action == "activate":
            await self.zoning.activate(session, out, name, vsan, negate)
        elif self.zoning.zoneset_name(session, out, name, vsan, negate):
            session.modes[1:] = [f"config-zoneset:{vsan}:{name}"]

    # --- sub-modes ---------------------------------------------------------------------------
    def submode(self, session: Session, out: Sink, words: Words, mode: str) -> bool:
        """A sub-mode's own command; False lets the line fall through to the config parser."""
        kind, *ids = mode.split(":")
        negate = (words.peek() or "").lower() == "no"
        if negate:
            words.keyword("no")
        word = (words.peek() or "").lower()
        handler = self.submodes.get(kind)
        return bool(word) and handler is not None and handler(session, out, words, word, ids, negate)

    def _profile_line(self, session: Session, out: Sink, words: Words, word: str, ids: list[str],
                      negate: bool) -> bool:
        if not ("ip".startswith(word) and len(word) >= 2):
            return False
        words.keyword("ip")
        words.keyword("address")
        profile = self.running["profiles"][ids[0]]
        profile["ip"] = None if negate else words.address()
        words.end()
        out.changed = True
        return True

    def _interface_line(self, session: Session, out: Sink, words: Words, word: str, ids: list[str],
                        negate: bool) -> bool:
        command = words.keyword(*INTERFACE_COMMANDS, optional=True)
        if command is None:
            return False
        interface = self.running["interfaces"][ids[0]]
        if command == "use-profile":
            interface["profile"] = None if negate else str(words.number(FCIP_IDS))
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

    def _zone_line(self, session: Session, out: Sink, words: Words, word: str, ids: list[str],
                   negate: bool) -> bool:
        if not "member".startswith(word):
            return False
        self.zoning.zone_member(session, out, int(ids[0]), ids[1], self._member(words, "fcalias"), negate)
        return True

    def _fcalias_line(self, session: Session, out: Sink, words: Words, word: str, ids: list[str],
                      negate: bool) -> bool:
        if not "member".startswith(word):
            return False
        self.zoning.fcalias_member(session, out, int(ids[0]), ids[1], self._member(words), negate)
        return True

    @staticmethod
    def _member(words: Words, *kinds: str) -> str:
        """``member pwwn W | device-alias X [| fcalias A]`` as stored: the WWN alone, or kind and name."""
        words.keyword("member")
        kind = words.keyword("pwwn", "device-alias", *kinds)
        member = wwn(words) if kind == "pwwn" else f"{kind} {words.name()}"
        words.end()
        return member

    def _device_alias_line(self, session: Session, out: Sink, words: Words, word: str, ids: list[str],
                           negate: bool) -> bool:
        if not ("device-alias".startswith(word) and len(word) >= 2 and len(words.items) > words.index + 1
                and "name".startswith(words.items[words.index + 1][0].lower())):
            return False
        words.keyword("device-alias")
        words.keyword("name")
        name = words.name()
        if negate:
            words.end()
            self.personality.device_aliases.remove(out, name)
            return True
        words.keyword("pwwn")
        address = wwn(words)
        words.end()
        self.personality.device_aliases.add(out, name, address)
        return True

    def _zoneset_line(self, session: Session, out: Sink, words: Words, word: str, ids: list[str],
                      negate: bool) -> bool:
        if not "member".startswith(word):
            return False
        words.keyword("member")
        name = words.name()
        words.end()
        self.zoning.zoneset_member(session, out, int(ids[0]), ids[1], name, negate)
        return True

    def _vsan_db_line(self, session: Session, out: Sink, words: Words, word: str, ids: list[str],
                      negate: bool) -> bool:
        if not "vsan".startswith(word):
            return False
        words.keyword("vsan")
        vsan = vsan_number(words)
        vsans = self.running["vsans"]
        if words.keyword("interface", optional=True):
            self._vsan_port(words, vsans, vsan, negate)
        else:
            name = f"VSAN{vsan:04d}"
            if words.keyword("name", optional=True):
                name = self._vsan_name(words)
            words.end()
            if negate:
                vsans.pop(str(vsan), None)
            else:
                vsans.setdefault(str(vsan), {})["name"] = name
        out.changed = True
        return True

    @staticmethod
    def _vsan_name(words: Words) -> str:
        # The running-config writes the name in double quotes; either form is accepted.
        position = words.position()
        name = words.value().strip('"')
        if not NAME_RE.match(name):
            raise CliError("Invalid command", position)
        return name

    @staticmethod
    def _vsan_port(words: Words, vsans: dict[str, Any], vsan: int, negate: bool) -> None:
        """``vsan N interface fc1/P``: the port leaves its VSAN for N (``no``: back to VSAN 1)."""
        position = words.position()
        port = words.value().lower()
        words.end()
        if not FC_PORT_RE.fullmatch(port) or str(vsan) not in vsans:
            raise CliError("Invalid command", position)
        for info in vsans.values():
            if port in info.get("interfaces", []):
                info["interfaces"].remove(port)
        if not negate and vsan != 1:
            vsans[str(vsan)].setdefault("interfaces", []).append(port)

"""Round trips as a simulated router sees them, and the least each operation's commands need.

What is counted: a *turn* is input from the client that arrives after the router has answered (written
anything but the echo) since the client's previous input. Over a WAN each turn costs a full round trip:
the client had to see the answer before it could send. Input sent ahead of an answer (several lines in
one send, typeahead) is the same turn; a lone NUL (netmiko's SSH keepalive) waits for nothing and is no
turn.

Each turn is booked as the session's ``login`` or as ``commands``. The login is what a session pays
once, before its first command, however many operations it then serves: over telnet the dialogue before
the first command prompt (username, password); over SSH, which authenticates before the shell starts,
the session's *set-up* (``SetUp``): the turns after the first prompt and before the first real command in
which the client sent nothing but the platform's preparation lines (``Personality.session_preparation``:
the empty line netmiko sends to read the prompt, and the terminal settings netmiko or the driver send,
such as NX-OS ``terminal length 0``). A turn with any other line in it is a command turn, and so is
every turn after it, an empty line or ``terminal length 0`` included. Set-up is booked as login because,
like telnet's login, it is paid per session, not per operation: a session per operation pays it on every
operation, a pooled session once. For the same reason the turn that ends the session (the logout
command, sent alone: telnet's and SSH's alike) is booked as login too; a turn that sends it after other
commands stays a command turn. The SSH handshake's own round trips (TCP, key exchange,
authentication, channel) are not seen here at all, nor telnet's option negotiation or TCP's handshake.

``RoundTripBook`` keeps the counts of one simulator (per session and in total) and, with a state
directory, in ``roundtrips.json`` there after every turn, so that a parent process (the lab) reads them
with ``read_round_trips`` before and after an operation; ``turns_between`` is the difference.

``LEAST`` is the floor: for each platform and operation (the engine's add, remove and list on a logged-in,
pooled session, verification included) the turns its commands truly need, by this rule: one turn per
command whose answer must be read before the next can be decided or sent, one per question the router
asks, and none for commands that could go in the same send as the one before (the router reads its
input in order, so a save may follow the change it saves, and a configuration block is one send).
Verification is one listing read after the change, unless the change's own reply reports the new state.
``save`` is the configuration save the engine sends after a change when it saves each operation
(FLEXZONE_OPS_SAVE_CONFIG=each): zero where the platform keeps a change as it is made or the save can
follow the change in its send.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROUND_TRIPS_FILE = "roundtrips.json"
OPERATIONS = ("add", "remove", "list", "save")


@dataclass(frozen=True)
class Least:
    """The least turns of one platform's operation, and why (the commands that each need one)."""

    turns: int
    why: str


# The engine's operations on a pooled, logged-in session (operations/steps.py: the change, then the read
# that verifies it), for one new link of one initiator-target pair; FOS and MDS with other hosts' zoning
# in force (basic zoning mode on MDS), as a real fabric has.
LEAST: dict[str, dict[str, Least]] = {
    "mcdata_eclipse": {
        "add": Least(2, "ifcp session add; show ifcp session to verify (config save, when it is sent, can follow "
                        "the add in the same send)"),
        "remove": Least(3, "ifcp session remove; the answer to its (y/n) question; show ifcp session to verify"),
        "list": Least(1, "show ifcp session"),
        "save": Least(0, "config save, sent after the change in the same send"),
    },
    "nishan_ips3000": {
        "add": Least(2, "ifcp create (written to flash as made); ifcp list to verify"),
        "remove": Least(2, "ifcp delete; ifcp list to verify"),
        "list": Least(1, "ifcp list"),
        "save": Least(0, "none: each change is written to flash as it is made"),
    },
    "brocade_fos": {
        # A zoning edit is silent on success and must not be followed by the next one if it failed: one turn
        # each; a read may follow an edit in the same send (cfgtransshow for the token, cfgshow before
        # enabling). The tunnel is made only once the zones are in force, the circuit only on the new tunnel.
        "add": Least(8, "cfgtransshow, cfgshow, portshow fciptunnel all -c (one send); zonecreate (+ cfgtransshow); "
                        "cfgadd (+ cfgshow); cfgenable; its question; portcfg fciptunnel create; portcfg "
                        "fcipcircuit create; the listing to verify (one send)"),
        "remove": Least(7, "the reads (one send); portcfg fciptunnel delete; cfgremove (+ cfgtransshow); zonedelete "
                           "(+ cfgshow); cfgenable; its question; the reads to verify (one send)"),
        "list": Least(1, "cfgshow, portshow fciptunnel all -c, portcfgshow fcipcircuit all (one send)"),
        "save": Least(0, "none: cfgenable saves the zoning it enables, and portcfg changes persist"),
    },
    "cisco_mds": {
        # NX-OS runs pasted lines on after one fails, in whatever (sub)mode it is left in, so every
        # configuration line whose failure must stop the next is a turn of its own; `end` may follow the last.
        # `configure terminal` only enters configuration mode (Cisco MDS 9000 Series NX-OS Command Reference,
        # "configure terminal"): it asks nothing and changes nothing, so it goes in the send before it, after
        # the reads, whose answers and its prompt are all read before the first configuration line is sent.
        "add": Least(17, "show zone status, show running-config fcip, show zone, show zoneset brief, show zoneset "
                         "active and configure terminal (one send); 13 lines (feature fcip, the profile, the "
                         "interface, the zone and its members, the zoneset member; end with the last); the zoning "
                         "read again before activating and configure terminal (one send); zoneset activate and end; "
                         "the listing to verify"),
        "remove": Least(9, "the reads and configure terminal (one send); zoneset name, no member, no zone name (and "
                           "end); the read before activating and configure terminal (one send); zoneset activate, no "
                           "interface fcip, no fcip profile (and end); the reads to verify (one send)"),
        "list": Least(1, "show running-config fcip, show zone, show zoneset active (one send)"),
        "save": Least(1, "copy running-config startup-config, whose reply (Copy complete) proves it"),
    },
}


def least(platform: str, operation: str) -> int:
    return LEAST[platform][operation].turns


class SetUp:
    """An SSH session's set-up: over once the client has sent a line that is not in `preparation`.

    Fed what the client sends once the first prompt is shown, with each turn's start marked; a line counts
    once its end has arrived (it may come in pieces), compared without its surrounding blanks.
    """

    def __init__(self, preparation: frozenset[str]) -> None:
        self.preparation = preparation
        self.over = False
        self._turn = ""  # what the client sent in the current turn so far

    def hear(self, data: str, new_turn: bool) -> None:
        if self.over:
            return
        self._turn = data if new_turn else self._turn + data
        *lines, _unfinished = re.split(r"\r\n?|\n", self._turn.replace("\0", ""))
        self.over = any(line.strip() not in self.preparation for line in lines)


class RoundTripBook:
    """One simulator's turns, per session and in total, kept in `directory` (if any) after every turn."""

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / ROUND_TRIPS_FILE if directory is not None else None
        self.sessions: dict[int, dict[str, int]] = {}
        self.login = 0
        self.commands = 0

    def count(self, session_id: int, login: bool) -> None:
        kind = "login" if login else "commands"
        session = self.sessions.setdefault(session_id, {"login": 0, "commands": 0})
        session[kind] += 1
        if login:
            self.login += 1
        else:
            self.commands += 1
        self._keep()

    def move_to_commands(self, session_id: int) -> None:
        """The session's current turn, booked as its set-up, carried a real command after all."""
        self._move(session_id, "login", "commands")

    def move_to_login(self, session_id: int) -> None:
        """The session's current turn, booked as a command, was its logout alone."""
        self._move(session_id, "commands", "login")

    def _move(self, session_id: int, source: str, target: str) -> None:
        session = self.sessions[session_id]
        session[source] -= 1
        session[target] += 1
        setattr(self, source, getattr(self, source) - 1)
        setattr(self, target, getattr(self, target) + 1)
        self._keep()

    def snapshot(self) -> dict[str, Any]:
        return {"login": self.login, "commands": self.commands, "sessions": len(self.sessions),
                "per_session": {str(sid): dict(counts) for sid, counts in self.sessions.items()}}

    def _keep(self) -> None:
        if self.path is not None:
            # No fsync: these are measurements read by a process on the same host, not configuration.
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            tmp.write_text(json.dumps(self.snapshot()))
            os.replace(tmp, self.path)


def read_round_trips(state_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The counts a simulator running with `--state state_dir` has kept so far (zeros before its first turn)."""
    path = Path(state_dir) / ROUND_TRIPS_FILE
    if not path.exists():
        return {"login": 0, "commands": 0, "sessions": 0, "per_session": {}}
    return dict(json.loads(path.read_text()))


def turns_between(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """The turns taken between two snapshots: the operation's own (commands) and those of the sessions it
    opened to run them (login: telnet's login dialogue, an SSH session's set-up)."""
    return {"commands": int(after["commands"]) - int(before["commands"]),
            "login": int(after["login"]) - int(before["login"]),
            "sessions": int(after["sessions"]) - int(before["sessions"])}

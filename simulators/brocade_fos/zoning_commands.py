"""The Brocade FOS commands that change zoning: ``zonecreate|zoneadd|zoneremove|zonedelete``,
``alicreate|aliadd|aliremove|alidelete``, ``cfgcreate|cfgadd|cfgremove|cfgdelete|cfgclear``,
``cfgsave``, ``cfgenable``, ``cfgdisable [-force]``, ``cfgtransabort [token]`` and
``defzone --show|--allaccess|--noaccess``.

Verified formats (public FOS session logs and OpenStack Cinder's fixtures): silent success of the
edits, ``duplicate name``/``not found`` errors, the ``(yes, y, no, n): [no]`` confirmations,
``Nothing changed: nothing to save, returning ...``. Texts marked ``[R]`` are reconstructed in the
same style. The state they change, and the transaction rules, are simulators.brocade_fos.zoning's.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable
from typing import Any

from routers.platforms import WWN_ANY_CASE_RE
from simulators.brocade_fos.show import NO_TRANSACTION
from simulators.brocade_fos.zoning import ALL_ACCESS, NO_ACCESS, FabricZoning, empty_defined
from simulators.personality import Console, Session

YES_NO = "(yes, y, no, n): [no] "
YES, NO = ("yes", "y"), ("no", "n", "")
BUSY = "Another zoning transaction is in progress (token 0x{token:x}); try again later.\n"  # [R]
NOT_YOURS = "The transaction belongs to another session; give its token to abort it.\n"  # [R]
EDIT_COMMANDS = (
    "zonecreate", "zoneadd", "zoneremove", "zonedelete", "alicreate", "aliadd", "aliremove", "alidelete",
    "cfgcreate", "cfgadd", "cfgremove", "cfgdelete", "cfgclear",
)
ZONING_COMMANDS = frozenset({*EDIT_COMMANDS, "cfgsave", "cfgenable", "cfgdisable", "cfgtransabort"})
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_$^-]{0,63}$")
PORT_MEMBER_RE = re.compile(r"^\d{1,3},\d{1,4}$")
KINDS = {"zone": "zones", "ali": "aliases", "cfg": "cfgs"}

Handler = Callable[[Session, Console, str], Awaitable[None]]
Edit = Callable[[Console, dict[str, Any], str, str, str], bool]


def is_mutating(command: str, rest: str) -> bool:
    return command in ZONING_COMMANDS or (command == "defzone" and rest.strip().lower() != "--show")


def split_zoning_args(text: str) -> list[str]:
    """FOS zoning arguments: comma-separated, each optionally double-quoted (`"z1", "a; b"`)."""
    args: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            args.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    args.append("".join(current).strip())
    return [arg for arg in args if arg] if any(args) else []


def split_members(text: str) -> list[str]:
    return [member.strip() for member in text.split(";") if member.strip()]


def normalise_member(member: str) -> str:
    # FOS stores WWNs in lower case whatever the input case (seen in cfgshow after alicreate).
    return member.lower() if WWN_ANY_CASE_RE.match(member) else member


def parse_token(text: str) -> int | None:
    """A transaction token as an administrator types it: ``0x3109`` or ``12553``."""
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        return None


async def ask_yes_no(console: Console, question: str) -> bool:
    """FOS confirmations: yes/y or no/n/empty (the default); anything else is asked again."""
    while True:
        answer = (await console.ask(question)).lower()
        if answer in YES:
            return True
        if answer in NO:
            return False
        console.write("Input not acceptable, please re-enter\n")


def check_args(console: Console, rest: str, count: int, usage: str) -> list[str] | None:
    args = split_zoning_args(rest)
    if len(args) != count:
        console.write(f"Error: Invalid number of arguments\n\nUsage: {usage}\n")
        return None
    return args


def check_name(console: Console, name: str) -> bool:
    if len(name) > 64:
        console.write(f'"{name}" name too long\n')
        return False
    if not NAME_RE.match(name):
        console.write(f'"{name}" invalid name\n')
        return False
    return True


def check_members(console: Console, defined: dict[str, Any], kind: str, text: str) -> list[str] | None:
    """A cfg's members must be defined zones; a zone's or alias's WWNs, d,p ports or alias names."""
    members = split_members(text)
    if kind == "cfgs":
        missing = [zone for zone in members if zone not in defined["zones"]]
        if missing:
            console.write(f'"{missing[0]}" not found\n')
            return None
        return members
    for member in members:
        if not (WWN_ANY_CASE_RE.match(member) or PORT_MEMBER_RE.match(member) or NAME_RE.match(member)):
            console.write(f'"{member}" invalid member\n')
            return None
    return [normalise_member(member) for member in members]


# --- edits of the defined configuration: True when `defined` was changed ---------------------------
def create(console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
    args = check_args(console, rest, 2, f'{command} "arg1", "arg2"')
    if args is None or not check_name(console, args[0]):
        return False
    if any(args[0] in defined[table] for table in ("cfgs", "zones", "aliases")):
        console.write(f'duplicate name "{args[0]}"\n')
        return False
    members = check_members(console, defined, kind, args[1])
    if members is None:
        return False
    if not members:
        console.write(f'Error: Invalid number of arguments\n\nUsage: {command} "arg1", "arg2"\n')
        return False
    defined[kind][args[0]] = list(dict.fromkeys(members))
    return True


def add(console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
    args = check_args(console, rest, 2, f'{command} "arg1", "arg2"')
    if args is None:
        return False
    table = defined[kind]
    if args[0] not in table:
        console.write(f'"{args[0]}" not found\n')
        return False
    members = check_members(console, defined, kind, args[1])
    if members is None:
        return False
    present = [member for member in members if member in table[args[0]]]
    if present:
        console.write(f'"{args[0]}" already contains "{present[0]}"\n')
        return False
    table[args[0]].extend(members)
    return True


def remove(console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
    args = check_args(console, rest, 2, f'{command} "arg1", "arg2"')
    if args is None:
        return False
    table = defined[kind]
    if args[0] not in table:
        console.write(f'"{args[0]}" not found\n')
        return False
    members = [normalise_member(member) for member in split_members(args[1])]
    absent = [member for member in members if member not in table[args[0]]]
    if absent:
        console.write(f'"{absent[0]}" is not in "{args[0]}"\n')
        return False
    table[args[0]] = [member for member in table[args[0]] if member not in members]
    if not table[args[0]]:
        # FOS deletes a zone, alias or cfg whose last member is removed.
        del table[args[0]]
    return True


def delete(console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
    args = split_zoning_args(rest)
    if len(args) != 1:
        console.write(f"error: Usage: {command} Name\n")
        return False
    table = defined[kind]
    if args[0] not in table:
        console.write(f'"{args[0]}" not found\n')
        return False
    if kind == "zones":
        users = [cfg for cfg, zones in defined["cfgs"].items() if args[0] in zones]
        if users:
            console.write(f'"{args[0]}" should not be deleted: it is a member of "{users[0]}"\n')
            return False
    del table[args[0]]
    return True


class ZoningCommands:
    """The zoning-changing commands of one switch, each a handler ``(session, console, rest)``."""

    def __init__(self, zoning: FabricZoning) -> None:
        self.zoning = zoning

    def commands(self) -> dict[str, Handler]:
        table: dict[str, Handler] = {
            "cfgclear": self.cfgclear, "cfgsave": self.cfgsave, "cfgenable": self.cfgenable,
            "cfgdisable": self.cfgdisable, "cfgtransabort": self.cfgtransabort, "defzone": self.defzone,
        }
        for prefix, kind in KINDS.items():
            for verb, edit in (("create", create), ("add", add), ("remove", remove), ("delete", delete)):
                table[f"{prefix}{verb}"] = self._editor(edit, kind, f"{prefix}{verb}")
        return table

    def _refused(self, session: Session, console: Console) -> bool:
        token = self.zoning.blocking_token(session)
        if token is not None:
            console.write(BUSY.format(token=token))
        return token is not None

    def _editor(self, edit: Edit, kind: str, command: str) -> Handler:
        async def handler(session: Session, console: Console, rest: str) -> None:
            if self._refused(session, console):
                return
            defined = copy.deepcopy(self.zoning.defined_for(session))
            if edit(console, defined, rest, kind, command):
                self.zoning.keep(session, defined)
                await console.applied()

        return handler

    async def cfgclear(self, session: Session, console: Console, rest: str) -> None:
        if self._refused(session, console):
            return
        console.write("The Clear All action will clear all Aliases, Zones, FA Zones\n"
                      "and configurations in the Defined configuration.\n"
                      "Run cfgSave to commit the transaction or cfgTransAbort to\n"
                      "cancel the transaction.\n")
        if await ask_yes_no(console, f"Do you really want to clear all configurations?  {YES_NO}"):
            self.zoning.keep(session, empty_defined())
            await console.applied()

    async def cfgsave(self, session: Session, console: Console, rest: str) -> None:
        if self._refused(session, console):
            return
        zoning = self.zoning
        own = zoning.owned_by(session)
        edited = own is not None and own.defined != zoning.committed["defined"]
        if not edited and zoning.committed == zoning.flashed:
            if own is not None:
                zoning.transaction = None  # an unchanged transaction is simply closed
            console.write("Nothing changed: nothing to save, returning ...\n")
            return
        console.write("You are about to save the Defined zoning configuration. This\n"
                      "action will only save the changes on Defined configuration.\n"
                      "If the update includes changes to one or more traffic isolation\n"
                      "zones, you must issue the 'cfgenable' command for the changes\n"
                      "to take effect.\n")
        if not await ask_yes_no(console, f"Do you want to save the Defined zoning configuration only?  {YES_NO}"):
            return
        console.write("Updating flash ...\n")
        zoning.commit(session)
        zoning.flash()
        await console.applied()

    async def cfgenable(self, session: Session, console: Console, rest: str) -> None:
        args = split_zoning_args(rest)
        if len(args) != 1:
            console.write("error: Usage: cfgEnable Name\n")
            return
        if self._refused(session, console):
            return
        name = args[0]
        if name not in self.zoning.defined_for(session)["cfgs"]:
            console.write(f'"{name}" not found\n')
            return
        console.write("You are about to enable a new zoning configuration.\n"
                      "This action will replace the old zoning configuration with the\n"
                      "current configuration selected. If the update includes changes\n"
                      "to one or more traffic isolation zones, the update may result in\n"
                      "localized disruption to traffic on ports associated with\n"
                      "the traffic isolation zone changes\n")
        if not await ask_yes_no(console, f"Do you want to enable '{name}' configuration  {YES_NO}"):
            return
        self.zoning.enable(session, name)
        await console.applied()
        console.write(f'zone config "{name}" is in effect\nUpdating flash ...\n')

    async def cfgdisable(self, session: Session, console: Console, rest: str) -> None:
        if rest.strip() not in ("", "-force", "-f"):
            console.write("error: Usage: cfgDisable [-force | -f]\n")
            return
        if self._refused(session, console):
            return
        if self.zoning.committed["effective"] is None:
            console.write("no configuration in effect\n")
            return
        console.write("You are about to disable zoning configuration. This\n"
                      "action will disable any previous zoning configuration enabled.\n")
        if rest.strip() or await ask_yes_no(console, f"Do you want to disable zoning configuration? {YES_NO}"):
            self.zoning.enable(session, None)
            await console.applied()
            console.write("Updating flash ...\n")

    async def defzone(self, session: Session, console: Console, rest: str) -> None:
        option = rest.strip().lower()
        if option == "--show":
            console.write(f"Default Zone Access Mode: {self.zoning.committed['default_access']}\n")  # [R]
            return
        modes = {"--allaccess": ALL_ACCESS, "--noaccess": NO_ACCESS}
        if option not in modes:
            console.write("Usage: defzone [--noaccess | --allaccess | --show]\n")  # [R]
            return
        if self._refused(session, console):
            return
        mode = modes[option]
        if not await ask_yes_no(console, f"Do you want to set the Default Zone Access Mode to {mode} ? {YES_NO}"):
            return
        self.zoning.set_default_access(mode)
        await console.applied()
        console.write("Updating flash ...\n")

    async def cfgtransabort(self, session: Session, console: Console, rest: str) -> None:
        transaction = self.zoning.transaction
        text = rest.strip()
        if transaction is None and not self.zoning.locked_elsewhere():
            console.write(NO_TRANSACTION)
            return
        if text:
            token = parse_token(text)
            if token is None:
                console.write("error: Usage: cfgTransAbort [token]\n")  # [R]
                return
            # An administrator who knows another session's token may abort it (an override).
            mine = transaction is not None and token == transaction.token
        else:
            mine = transaction is not None and transaction.session == session.id
        if not mine:
            console.write(NOT_YOURS)
            return
        self.zoning.transaction = None
        await console.applied()

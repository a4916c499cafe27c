"""Brocade FOS zoning: the fabric's defined and effective configurations, the one zoning transaction a
switch allows at a time, and what the zoning commands say.

Committed state (``SimState.running["zoning"]``, persisted; ``saved["zoning"]`` is the flash copy)::

    {"defined": {"cfgs": {}, "zones": {}, "aliases": {}},         # fabric-wide defined configuration
     "effective": {"cfg": NAME, "zones": {zone: [members resolved]}} | None,
     "default_access": "No Access" | "All Access"}                # what applies with no effective cfg

Transactions (in memory only, as on the switch): the first zoning edit of a session opens the
transaction, owned by that session, with a token and a working copy of the committed defined
configuration; its later edits change the copy. The owner sees the copy in ``cfgshow``, everybody
else the committed configuration. ``cfgsave``, ``cfgenable`` and ``cfgdisable`` commit it,
``cfgtransabort`` drops it, and so does the end of its session [R]. While another session's
transaction is open, or the ``zoning_locked`` fault is armed (a transaction of an administrator
elsewhere, token 0x5eed), every zoning change is refused and nothing changes.

Verified formats (public FOS session logs and OpenStack Cinder's fixtures): silent success of the
edits, ``duplicate name``/``not found`` errors, the ``(yes, y, no, n): [no]`` confirmations, the
tab-separated ``cfgshow`` and ``cfgactvshow`` layouts, ``Nothing changed: nothing to save, returning
...``, ``There is no outstanding zoning transaction``, ``Current transaction token is 0x..`` / ``It is
abortable``. Texts marked ``[R]`` are reconstructed in the same style.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from routers.sim.flexzones import ZoneGroup, flexzone_groups
from routers.sim.personality import Console, Session, SimState

YES_NO = "(yes, y, no, n): [no] "
YES, NO = ("yes", "y"), ("no", "n", "")
NO_ACCESS, ALL_ACCESS = "No Access", "All Access"
FIRST_TOKEN = 0x3109
PHANTOM_TOKEN = 0x5EED  # the transaction of the administrator the zoning_locked fault stands for
BUSY = "Another zoning transaction is in progress (token 0x{token:x}); try again later.\n"  # [R]
NOT_YOURS = "The transaction belongs to another session; give its token to abort it.\n"  # [R]
NO_TRANSACTION = "There is no outstanding zoning transaction\n"
EDIT_COMMANDS = (
    "zonecreate", "zoneadd", "zoneremove", "zonedelete", "alicreate", "aliadd", "aliremove", "alidelete",
    "cfgcreate", "cfgadd", "cfgremove", "cfgdelete", "cfgclear",
)
ZONING_COMMANDS = frozenset({*EDIT_COMMANDS, "cfgsave", "cfgenable", "cfgdisable", "cfgtransabort"})
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_$^-]{0,63}$")
WWN_INPUT_RE = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){7}$")
PORT_MEMBER_RE = re.compile(r"^\d{1,3},\d{1,4}$")
KINDS = {"zone": "zones", "ali": "aliases", "cfg": "cfgs"}

PROD_ZONES = {
    "prod_oradb1_vmax": ["10:00:00:90:fa:c7:43:10", "50:00:09:73:f0:2c:51:04"],
    "prod_backup1_tape": ["10:00:00:90:fa:c7:43:22", "50:01:04:f0:00:a1:b2:c3"],
}

Handler = Callable[[Session, Console, str], Awaitable[None]]


def empty_defined() -> dict[str, Any]:
    return {"cfgs": {}, "zones": {}, "aliases": {}}


def empty_zoning() -> dict[str, Any]:
    return {"defined": empty_defined(), "effective": None, "default_access": NO_ACCESS}


def split_zoning_args(text: str) -> list[str]:
    """FOS zoning arguments: comma-separated, each optionally double-quoted (`"z1", "a; b"`)."""
    args, current, quoted = [], [], False
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
    return member.lower() if WWN_INPUT_RE.match(member) else member


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


@dataclass
class Transaction:
    """The switch's open zoning transaction: its owner, its token, its working defined configuration."""

    session: int
    token: int
    defined: dict[str, Any]


class FosZoning:
    """The zoning half of the FOS personality: committed state, the transaction and the commands."""

    def __init__(self, state: SimState, locked_elsewhere: Callable[[], bool]) -> None:
        self.state = state
        self.locked_elsewhere = locked_elsewhere
        zoning = state.running.setdefault("zoning", empty_zoning())
        zoning.setdefault("default_access", NO_ACCESS)  # state files written before it existed
        if "zoning" not in state.saved:
            state.saved["zoning"] = copy.deepcopy(zoning)
        state.saved["zoning"].setdefault("default_access", NO_ACCESS)
        self.transaction: Transaction | None = None
        self._opened = 0

    @property
    def committed(self) -> dict[str, Any]:
        return self.state.running["zoning"]

    def commands(self) -> dict[str, Handler]:
        table: dict[str, Handler] = {
            "cfgclear": self._cfgclear, "cfgsave": self._cfgsave, "cfgenable": self._cfgenable,
            "cfgdisable": self._cfgdisable, "cfgshow": self._cfgshow, "zoneshow": self._cfgshow,
            "cfgactvshow": self._cfgactvshow, "cfgtransshow": self._cfgtransshow,
            "cfgtransabort": self._cfgtransabort, "defzone": self._defzone,
        }
        for prefix, kind in KINDS.items():
            table[f"{prefix}create"] = self._editor(self._create, kind, f"{prefix}create")
            table[f"{prefix}add"] = self._editor(self._add, kind, f"{prefix}add")
            table[f"{prefix}remove"] = self._editor(self._remove, kind, f"{prefix}remove")
            table[f"{prefix}delete"] = self._editor(self._delete, kind, f"{prefix}delete")
        return table

    @staticmethod
    def is_mutating(command: str, rest: str) -> bool:
        return command in ZONING_COMMANDS or (command == "defzone" and rest.strip().lower() != "--show")

    # --- the transaction ---------------------------------------------------------------------
    def owned_by(self, session: Session) -> Transaction | None:
        transaction = self.transaction
        return transaction if transaction is not None and transaction.session == session.id else None

    def defined_for(self, session: Session) -> dict[str, Any]:
        """What `session` sees as the Defined configuration: its working copy, or the committed one."""
        own = self.owned_by(session)
        return own.defined if own is not None else self.committed["defined"]

    def blocking_token(self, session: Session) -> int | None:
        """The token of the transaction that keeps `session` from changing zoning; None: nothing does."""
        if self.locked_elsewhere():
            return PHANTOM_TOKEN
        if self.transaction is not None and self.transaction.session != session.id:
            return self.transaction.token
        return None

    def _refused(self, session: Session, console: Console) -> bool:
        token = self.blocking_token(session)
        if token is not None:
            console.write(BUSY.format(token=token))
        return token is not None

    def _keep(self, session: Session, defined: dict[str, Any]) -> None:
        """Make `defined` the session's working copy, opening its transaction if it had none."""
        own = self.owned_by(session)
        if own is not None:
            own.defined = defined
            return
        self.transaction = Transaction(session.id, FIRST_TOKEN + self._opened, defined)
        self._opened += 1

    def _commit(self, session: Session) -> None:
        """The session's working copy (if any) becomes the fabric's defined configuration."""
        own = self.owned_by(session)
        if own is not None:
            self.committed["defined"] = own.defined
            self.transaction = None

    def flash(self) -> None:
        """Write the committed zoning to flash (the saved configuration)."""
        self.state.saved["zoning"] = copy.deepcopy(self.committed)

    def session_ended(self, session: Session) -> None:
        """A session that logs out (or is cut off) leaves no transaction behind: it is aborted [R]."""
        if self.owned_by(session) is not None:
            self.transaction = None

    # --- edits -------------------------------------------------------------------------------
    def _editor(self, edit: Callable[[Console, dict[str, Any], str, str, str], bool], kind: str,
                command: str) -> Handler:
        async def handler(session: Session, console: Console, rest: str) -> None:
            if self._refused(session, console):
                return
            defined = copy.deepcopy(self.defined_for(session))
            if edit(console, defined, rest, kind, command):
                self._keep(session, defined)
                await console.applied()

        return handler

    @staticmethod
    def _args(console: Console, rest: str, count: int, usage: str) -> list[str] | None:
        args = split_zoning_args(rest)
        if len(args) != count:
            console.write(f"Error: Invalid number of arguments\n\nUsage: {usage}\n")
            return None
        return args

    @staticmethod
    def _check_name(console: Console, name: str) -> bool:
        if len(name) > 64:
            console.write(f'"{name}" name too long\n')
            return False
        if not NAME_RE.match(name):
            console.write(f'"{name}" invalid name\n')
            return False
        return True

    @staticmethod
    def _members(console: Console, defined: dict[str, Any], kind: str, text: str) -> list[str] | None:
        """A cfg's members must be defined zones; a zone's or alias's WWNs, d,p ports or alias names."""
        members = split_members(text)
        if kind == "cfgs":
            missing = [zone for zone in members if zone not in defined["zones"]]
            if missing:
                console.write(f'"{missing[0]}" not found\n')
                return None
            return members
        for member in members:
            if not (WWN_INPUT_RE.match(member) or PORT_MEMBER_RE.match(member) or NAME_RE.match(member)):
                console.write(f'"{member}" invalid member\n')
                return None
        return [normalise_member(member) for member in members]

    def _create(self, console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
        args = self._args(console, rest, 2, f'{command} "arg1", "arg2"')
        if args is None or not self._check_name(console, args[0]):
            return False
        if any(args[0] in defined[table] for table in ("cfgs", "zones", "aliases")):
            console.write(f'duplicate name "{args[0]}"\n')
            return False
        members = self._members(console, defined, kind, args[1])
        if members is None:
            return False
        if not members:
            console.write(f'Error: Invalid number of arguments\n\nUsage: {command} "arg1", "arg2"\n')
            return False
        defined[kind][args[0]] = list(dict.fromkeys(members))
        return True

    def _add(self, console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
        args = self._args(console, rest, 2, f'{command} "arg1", "arg2"')
        if args is None:
            return False
        table = defined[kind]
        if args[0] not in table:
            console.write(f'"{args[0]}" not found\n')
            return False
        members = self._members(console, defined, kind, args[1])
        if members is None:
            return False
        present = [member for member in members if member in table[args[0]]]
        if present:
            console.write(f'"{args[0]}" already contains "{present[0]}"\n')
            return False
        table[args[0]].extend(members)
        return True

    def _remove(self, console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
        args = self._args(console, rest, 2, f'{command} "arg1", "arg2"')
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

    def _delete(self, console: Console, defined: dict[str, Any], rest: str, kind: str, command: str) -> bool:
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

    async def _cfgclear(self, session: Session, console: Console, rest: str) -> None:
        if self._refused(session, console):
            return
        console.write("The Clear All action will clear all Aliases, Zones, FA Zones\n"
                      "and configurations in the Defined configuration.\n"
                      "Run cfgSave to commit the transaction or cfgTransAbort to\n"
                      "cancel the transaction.\n")
        if await ask_yes_no(console, f"Do you really want to clear all configurations?  {YES_NO}"):
            self._keep(session, empty_defined())
            await console.applied()

    # --- commit, enable, disable -------------------------------------------------------------
    async def _cfgsave(self, session: Session, console: Console, rest: str) -> None:
        if self._refused(session, console):
            return
        own = self.owned_by(session)
        edited = own is not None and own.defined != self.committed["defined"]
        if not edited and self.committed == self.state.saved.get("zoning"):
            if own is not None:
                self.transaction = None  # an unchanged transaction is simply closed
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
        self._commit(session)
        self.flash()
        await console.applied()

    async def _cfgenable(self, session: Session, console: Console, rest: str) -> None:
        args = split_zoning_args(rest)
        if len(args) != 1:
            console.write("error: Usage: cfgEnable Name\n")
            return
        if self._refused(session, console):
            return
        name = args[0]
        if name not in self.defined_for(session)["cfgs"]:
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
        self._commit(session)
        self.committed["effective"] = {"cfg": name, "zones": resolve(self.committed["defined"], name)}
        self.flash()
        await console.applied()
        console.write(f'zone config "{name}" is in effect\nUpdating flash ...\n')

    async def _cfgdisable(self, session: Session, console: Console, rest: str) -> None:
        if rest.strip() not in ("", "-force", "-f"):
            console.write("error: Usage: cfgDisable [-force | -f]\n")
            return
        if self._refused(session, console):
            return
        if self.committed["effective"] is None:
            console.write("no configuration in effect\n")
            return
        console.write("You are about to disable zoning configuration. This\n"
                      "action will disable any previous zoning configuration enabled.\n")
        if rest.strip() or await ask_yes_no(console, f"Do you want to disable zoning configuration? {YES_NO}"):
            self._commit(session)
            self.committed["effective"] = None
            self.flash()
            await console.applied()
            console.write("Updating flash ...\n")

    async def _defzone(self, session: Session, console: Console, rest: str) -> None:
        option = rest.strip().lower()
        if option == "--show":
            console.write(f"Default Zone Access Mode: {self.committed['default_access']}\n")  # [R]
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
        # Committed and written to flash at once; an open working copy of the defined configuration
        # is not part of it.
        self.committed["default_access"] = mode
        self.state.saved["zoning"]["default_access"] = mode
        await console.applied()
        console.write("Updating flash ...\n")

    # --- transaction commands ------------------------------------------------------------------
    async def _cfgtransshow(self, session: Session, console: Console, rest: str) -> None:
        transaction = self.transaction
        if transaction is not None:
            token, abortable = transaction.token, transaction.session == session.id
        elif self.locked_elsewhere():
            token, abortable = PHANTOM_TOKEN, False
        else:
            console.write(NO_TRANSACTION)
            return
        console.write(f"Current transaction token is 0x{token:x}\n"
                      f"It is {'abortable' if abortable else 'not abortable'}\n")  # [R] the "not" form

    async def _cfgtransabort(self, session: Session, console: Console, rest: str) -> None:
        transaction = self.transaction
        text = rest.strip()
        if transaction is None and not self.locked_elsewhere():
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
        self.transaction = None
        await console.applied()

    # --- shows -------------------------------------------------------------------------------
    async def _cfgshow(self, session: Session, console: Console, rest: str) -> None:
        await console.page(render_defined(self.defined_for(session)) + "\n" + self.render_effective())

    async def _cfgactvshow(self, session: Session, console: Console, rest: str) -> None:
        await console.page(self.render_effective())

    def render_effective(self) -> str:
        effective = self.committed["effective"]
        if effective is None:
            return f"No Effective configuration: ({self.committed['default_access']})\n"
        text = f"Effective configuration:\n cfg:\t{effective['cfg']}\t\n"
        for zone, members in effective["zones"].items():
            text += f" zone:\t{zone}\t\n" + "".join(f"\t\t{member}\n" for member in members)
        return text

    # --- for the personality -----------------------------------------------------------------
    def flexzone_groups(self) -> dict[tuple[int, int], tuple[ZoneGroup, bool]]:
        """flexzone's zones, committed or in effect, by (zone, port), each with whether all are in effect."""
        defined = self.committed["defined"]["zones"]
        effective = (self.committed["effective"] or {"zones": {}})["zones"]

        def members_of(name: str) -> list[str]:
            return effective.get(name) or defined.get(name) or []

        groups = flexzone_groups([*defined, *effective], "ve", members_of)
        return {key: (group, all(name in effective for name in group.names)) for key, group in groups.items()}

    def seed_production(self) -> None:
        """Other hosts' zoning, in effect: two production zones in cfg PROD, written to flash."""
        defined = {"cfgs": {"PROD": list(PROD_ZONES)}, "zones": copy.deepcopy(PROD_ZONES), "aliases": {}}
        self.committed["defined"] = defined
        self.committed["effective"] = {"cfg": "PROD", "zones": resolve(defined, "PROD")}
        self.transaction = None
        self.flash()


def resolve(defined: dict[str, Any], cfg: str) -> dict[str, list[str]]:
    """The cfg's zones with their members as the fabric enforces them (aliases replaced by their WWNs)."""
    zones = {}
    for zone in defined["cfgs"][cfg]:
        members: list[str] = []
        for member in defined["zones"].get(zone, []):
            members.extend(defined["aliases"].get(member, [member]))
        zones[zone] = members
    return zones


def render_defined(defined: dict[str, Any]) -> str:
    if not any(defined.values()):
        return "Defined configuration:\n no configuration defined\n"
    text = "Defined configuration:\n"
    for name, zones in defined["cfgs"].items():
        text += f" cfg:\t{name}\t" + _wrap(zones) + "\n"
    for kind, label in (("zones", "zone"), ("aliases", "alias")):
        for name, members in defined[kind].items():
            text += f" {label}:\t{name}\t" + _wrap(members) + "\n"
    return text


def _wrap(members: list[str], per_line: int = 3) -> str:
    """cfgshow member lists: `; `-separated, continued on tab-indented lines."""
    chunks = [members[i : i + per_line] for i in range(0, len(members), per_line)] or [[]]
    return ";\n\t\t".join("; ".join(chunk) for chunk in chunks)

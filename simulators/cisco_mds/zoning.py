"""Cisco MDS zoning per VSAN: the full zone database (zones, zonesets, fcaliases), the active zoneset,
basic and enhanced zoning modes, the enhanced-mode zone session lock, and what the zoning commands do
and say (the shows are zoning_show.py's, the seeded fabrics fabric.py's).

Committed state (``SimState.running``, persisted)::

    zones:      {"1": {"prod_oradb1_vmax": ["10:00:...", "device-alias hostA", "fcalias arrayA"]}}
    zonesets:   {"1": {"PROD": ["prod_oradb1_vmax"]}}
    fcaliases:  {"1": {"arrayA": ["50:00:...", "device-alias hostB"]}}
    active:     {"1": {"name": "PROD", "zones": {"prod_oradb1_vmax": ["10:00:...", "50:00:..."]}}}
    zone_modes: {"1": "enhanced"}                                # absent: basic
    default_zones: {"1": "permit"}                               # absent: deny
    zoneset_distribute: {"1": "full"}                            # absent: active only (basic mode)

A member is a pwwn (stored as the WWN alone), ``device-alias NAME`` or, in zones, ``fcalias NAME``
(stored as written). fcaliases belong to the VSAN's full zone database like zones and zonesets.
Activation copies the zoneset with each fcalias member replaced by the alias's members, as NX-OS
does: the active zoneset never names an fcalias.

Basic mode: edits change the full database at once and ``zoneset activate`` activates at once.
Enhanced mode: the first zoning edit of a session in a VSAN takes the VSAN's zone session lock (in
memory only, lost on restart) and a pending copy of its full database; later edits change the copy,
``zoneset activate`` and ``zone default-zone permit`` only stage, and ``zone commit vsan N`` makes the
copy the full database and performs the staged activation and default-zone change. ``no zone commit
vsan N`` drops the copy (the lock is the user's: any session of the same user may), ``clear zone lock
vsan N`` drops anybody's. A session that ends keeps its lock, as NX-OS does. While someone else holds
the lock, or the ``zoning_locked`` fault is armed (user ``san-admin`` holds every enhanced-mode VSAN),
edits print ``Lock is currently busy`` and change nothing. ``zone copy active-zoneset full-zoneset
vsan N`` and ``clear zone database vsan N`` are edits of the full database like the others.

Verified texts (public NX-OS captures, Cisco's mdssdk and cisco.nxos fixtures, netmiko #154):
``Enhanced zone session has been created. Please 'commit' the changes when done.``, ``Commit
operation initiated. Check zone status``, ``Zoneset activation initiated. check zone status``, the
"significantly bigger" activation warning, the ``clear zone lock`` question. Texts marked ``[R]``
are reconstructed in the same style.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from simulators.flexzones import ZoneGroup, flexzone_groups
from simulators.personality import Session, SimState

PHANTOM_USER = "san-admin"  # who holds the lock while the zoning_locked fault is armed
BUSY = "Lock is currently busy\n"  # [R] the prefix EMC CoprHD's MDS driver matches
SESSION_CREATED = "Enhanced zone session has been created. Please 'commit' the changes when done.\n"
NOT_LOCKED = "Zone database not locked\n"
YES_NO = "(y/n) [n] "
ZONE_DB_LIMIT = 2097152
STATE_KEYS = ("zones", "zonesets", "fcaliases", "active", "zone_modes", "default_zones", "zoneset_distribute")

Members = dict[str, list[str]]


class Output(Protocol):
    """Where a zoning command writes (the personality's output buffer) and how it asks questions."""

    changed: bool

    def write(self, text: str) -> None: ...

    async def ask(self, question: str) -> str: ...


@dataclass
class ZoneDb:
    """One VSAN's full zone database, committed or a session's pending copy (the dicts themselves,
    so that changing them changes the database)."""

    zones: Members
    zonesets: Members
    fcaliases: Members

    def tables(self) -> dict[str, Members]:
        return {"zone": self.zones, "zoneset": self.zonesets, "fcalias": self.fcaliases}


@dataclass
class ZoneLock:
    """A VSAN's enhanced-mode zone session: who holds it, their pending full database (zones,
    zonesets, fcaliases), staged activation (``("activate" | "deactivate", zoneset)``) and
    default-zone policy."""

    session: int
    user: str
    zones: Members
    zonesets: Members
    fcaliases: Members = field(default_factory=dict)
    staged: tuple[str, str] | None = None
    default_zone: str | None = None

    @property
    def db(self) -> ZoneDb:
        return ZoneDb(self.zones, self.zonesets, self.fcaliases)


def stamp() -> str:
    """``10:19:02 UTC Jul  5 2019``: the day of the month padded with a space, as NX-OS prints it."""
    now = time.gmtime()
    return time.strftime(f"%H:%M:%S UTC %b {now.tm_mday:2d} %Y", now)


def dont_ask(session: Session) -> bool:
    return bool(session.scratch.get("dont_ask"))


def expand(members: list[str], fcaliases: Members) -> list[str]:
    """A zone's members as activation copies them: each fcalias replaced by its own members, once each."""
    result: list[str] = []
    for member in members:
        kind, _, name = member.partition(" ")
        for item in fcaliases.get(name, []) if kind == "fcalias" else [member]:
            if item not in result:
                result.append(item)
    return result


def active_copy(db: ZoneDb, zoneset: str) -> dict[str, Any]:
    """The active zoneset `zoneset` of `db` would make: its zones with their members expanded."""
    return {"name": zoneset, "zones": {z: expand(db.zones.get(z, []), db.fcaliases) for z in db.zonesets[zoneset]}}


class MdsZoning:
    """The zoning half of the MDS personality: state, locks and the zoning commands' effects (the shows are
    zoning_show.py's)."""

    def __init__(self, state: SimState, locked_elsewhere: Callable[[], bool]) -> None:
        self.state = state
        self.locked_elsewhere = locked_elsewhere
        for key in STATE_KEYS:
            state.running.setdefault(key, {})
        self.locks: dict[str, ZoneLock] = {}
        self.status: dict[str, str] = {}  # last zoning action per VSAN, for show zone status
        self.started = stamp()

    @property
    def running(self) -> dict[str, Any]:
        return self.state.running

    # --- who may edit ----------------------------------------------------------------------------
    def enhanced(self, vsan: int) -> bool:
        return self.running["zone_modes"].get(str(vsan)) == "enhanced"

    def default_zone(self, vsan: int) -> str:
        return self.running["default_zones"].get(str(vsan), "deny")

    def distribute(self, vsan: int) -> str:
        """``full`` (enhanced mode, or ``zoneset distribute full vsan N``) or ``active only``."""
        full = self.enhanced(vsan) or self.running["zoneset_distribute"].get(str(vsan)) == "full"
        return "full" if full else "active only"

    def phantom_holds(self, vsan: int) -> bool:
        return self.enhanced(vsan) and self.locked_elsewhere()

    def holder(self, vsan: int) -> str | None:
        """The user holding the VSAN's zone session lock, None if nobody does."""
        lock = self.locks.get(str(vsan))
        if lock is not None:
            return lock.user
        return PHANTOM_USER if self.phantom_holds(vsan) else None

    def _own_lock(self, session: Session, vsan: int) -> ZoneLock | None:
        lock = self.locks.get(str(vsan))
        return lock if lock is not None and lock.session == session.id else None

    def _busy(self, session: Session, vsan: int, out: Output) -> bool:
        """Enhanced mode only: someone else (or the phantom) holds the lock; says so."""
        if not self.enhanced(vsan):
            return False
        lock = self.locks.get(str(vsan))
        busy = self.phantom_holds(vsan) or (lock is not None and lock.session != session.id)
        if busy:
            out.write(BUSY)
        return busy

    def committed(self, vsan: int | str) -> ZoneDb:
        """The VSAN's committed full database (empty tables for a VSAN with none; not stored)."""
        key = str(vsan)
        return ZoneDb(self.running["zones"].get(key, {}), self.running["zonesets"].get(key, {}),
                      self.running["fcaliases"].get(key, {}))

    def view(self, session: Session, vsan: int) -> ZoneDb:
        """The database `session` edits: its pending copy if it holds the lock, else the full one."""
        lock = self._own_lock(session, vsan)
        return lock.db if lock is not None else self.committed(vsan)

    def _edit_db(self, session: Session, vsan: int, out: Output) -> ZoneDb:
        """The database to change; in enhanced mode the first edit takes the lock (call _busy first)."""
        key = str(vsan)
        if not self.enhanced(vsan):
            return ZoneDb(*(self.running[table].setdefault(key, {}) for table in ("zones", "zonesets", "fcaliases")))
        lock = self._own_lock(session, vsan)
        if lock is None:
            committed = copy.deepcopy(self.committed(vsan))
            lock = ZoneLock(session.id, session.username, committed.zones, committed.zonesets, committed.fcaliases)
            self.locks[key] = lock
            out.write(SESSION_CREATED)
        return lock.db

    # --- config commands -------------------------------------------------------------------------
    def zone_name(self, session: Session, out: Output, name: str, vsan: int, negate: bool) -> bool:
        """``[no] zone name Z vsan N``; True when the zone submode is entered."""
        if not self._define(session, out, "zone", name, vsan, negate):
            return False
        if negate:
            for members in self.view(session, vsan).zonesets.values():
                if name in members:
                    members.remove(name)
        return not negate

    def fcalias_name(self, session: Session, out: Output, name: str, vsan: int, negate: bool) -> bool:
        """``[no] fcalias name A vsan N``; True when the fcalias submode is entered."""
        return self._define(session, out, "fcalias", name, vsan, negate) and not negate

    def zoneset_name(self, session: Session, out: Output, name: str, vsan: int, negate: bool) -> bool:
        """``[no] zoneset name S vsan N``; True when the zoneset submode is entered."""
        return self._define(session, out, "zoneset", name, vsan, negate) and not negate

    def _define(self, session: Session, out: Output, kind: str, name: str, vsan: int, negate: bool) -> bool:
        """Create (or with `negate` delete) a zone, zoneset or fcalias; False when refused."""
        if self._busy(session, vsan, out):
            return False
        if negate and name not in self.view(session, vsan).tables()[kind]:
            out.write(f'{"Alias" if kind == "fcalias" else kind.capitalize()} "{name}" not present\n')  # [R]
            return False
        table = self._edit_db(session, vsan, out).tables()[kind]
        out.changed = True
        if negate:
            del table[name]
        else:
            table.setdefault(name, [])
        return True

    def zone_member(self, session: Session, out: Output, vsan: int, zone: str, member: str, negate: bool) -> None:
        """``[no] member pwwn W | device-alias A | fcalias A`` inside ``zone name Z vsan N`` (`member` as
        stored: W, "device-alias A" or "fcalias A")."""
        if self._busy(session, vsan, out):
            return
        kind, _, alias = member.partition(" ")
        if kind == "fcalias" and not negate and alias not in self.view(session, vsan).fcaliases:
            out.write(f'Alias "{alias}" not present\n')  # [R]
            return
        self._member(session, out, vsan, "zone", zone, member, negate)

    def fcalias_member(self, session: Session, out: Output, vsan: int, alias: str, member: str,
                       negate: bool) -> None:
        """``[no] member pwwn W | device-alias A`` inside ``fcalias name A vsan N``."""
        self._member(session, out, vsan, "fcalias", alias, member, negate)

    def zoneset_member(self, session: Session, out: Output, vsan: int, zoneset: str, zone: str,
                       negate: bool) -> None:
        """``[no] member Z`` inside ``zoneset name S vsan N``."""
        self._member(session, out, vsan, "zoneset", zoneset, zone, negate)

    def _member(self, session: Session, out: Output, vsan: int, kind: str, owner: str, member: str,
                negate: bool) -> None:
        if self._busy(session, vsan, out):
            return
        if negate and member not in self.view(session, vsan).tables()[kind].get(owner, []):
            if kind == "zoneset":
                out.write(f'Zone "{member}" not present in zoneset "{owner}"\n')  # [R]
            else:
                spec = member_spec(member)
                out.write(f'{kind.capitalize()} member "{spec}" not present in {kind} "{owner}"\n')  # [R]
            return
        table = self._edit_db(session, vsan, out).tables()[kind]
        members = table.setdefault(owner, [])  # a lock cleared meanwhile: the owner starts again here
        if negate:
            members.remove(member)
        elif member not in members:
            members.append(member)
        out.changed = True

    async def activate(self, session: Session, out: Output, name: str, vsan: int, negate: bool) -> None:
        """``[no] zoneset activate name S vsan N``: at once in basic mode, staged in enhanced mode."""
        if self._busy(session, vsan, out):
            return
        key = str(vsan)
        db = self.view(session, vsan)
        active = self.running["active"].get(key)
        if negate:
            if not active or active["name"] != name:
                out.write(f'Zoneset "{name}" is not active in vsan {vsan}\n')  # [R]
                return
        elif name not in db.zonesets:
            out.write(f'Zoneset "{name}" not present\n')  # [R]
            return
        elif not await self._bigger_confirmed(session, out, name, len(db.zonesets[name]), active):
            return
        out.changed = True
        if self.enhanced(vsan):
            self._edit_db(session, vsan, out)
            self.locks[key].staged = ("deactivate" if negate else "activate", name)
            return
        if negate:
            del self.running["active"][key]
            self.status[key] = f"Deactivation completed at {stamp()}"
            return
        self.running["active"][key] = active_copy(db, name)
        self.status[key] = f"Activation completed at {stamp()}"
        out.write("Zoneset activation initiated. check zone status\n")

    async def _bigger_confirmed(self, session: Session, out: Output, name: str, size: int,
                                active: dict[str, Any] | None) -> bool:
        # NX-OS asks before activating a zoneset more than twice the size of the active one (netmiko #154).
        if dont_ask(session) or active is None or size <= 2 * len(active["zones"]):
            return True
        answer = await out.ask(f"WARNING: New Zoneset {name} is significantly bigger than current active Zoneset "
                               f"{active['name']}. Do you want to continue? {YES_NO}")
        return answer.strip().lower() == "y"

    def commit(self, session: Session, out: Output, vsan: int) -> None:
        """``zone commit vsan N``: the pending copy becomes the full database, the staged activation happens."""
        key = str(vsan)
        lock = self.locks.get(key)
        if lock is None and not self.phantom_holds(vsan):
            out.write("No pending info found\n")
            return
        if self._busy(session, vsan, out) or lock is None:
            return
        self.running["zones"][key] = lock.zones
        self.running["zonesets"][key] = lock.zonesets
        self.running["fcaliases"][key] = lock.fcaliases
        if lock.staged is not None:
            action, name = lock.staged
            if action == "deactivate":
                self.running["active"].pop(key, None)
            elif name in lock.zonesets:
                self.running["active"][key] = active_copy(lock.db, name)
        if lock.default_zone is not None:
            self._store_default_zone(vsan, lock.default_zone)
        del self.locks[key]
        self.status[key] = f"Commit completed at {stamp()}"
        out.write("Commit operation initiated. Check zone status\n")
        out.changed = True

    def discard(self, session: Session, out: Output, vsan: int) -> None:
        """``no zone commit vsan N``: drop the pending copy; the lock is per user on the switch."""
        lock = self.locks.get(str(vsan))
        if lock is not None and (lock.session == session.id or lock.user == session.username):
            del self.locks[str(vsan)]
            out.changed = True
        elif lock is not None or self.phantom_holds(vsan):
            out.write(BUSY)
        else:
            out.write(NOT_LOCKED)

    def set_default_zone(self, session: Session, out: Output, vsan: int, permit: bool) -> None:
        """``[no] zone default-zone permit vsan N``: at once in basic mode, at commit in enhanced mode."""
        if self._busy(session, vsan, out):
            return
        policy = "permit" if permit else "deny"
        out.changed = True
        if self.enhanced(vsan):
            self._edit_db(session, vsan, out)
            self.locks[str(vsan)].default_zone = policy
            return
        self._store_default_zone(vsan, policy)

    def _store_default_zone(self, vsan: int, policy: str) -> None:
        if policy == "permit":
            self.running["default_zones"][str(vsan)] = "permit"
        else:
            self.running["default_zones"].pop(str(vsan), None)

    def set_distribute(self, out: Output, vsan: int, full: bool) -> None:
        """``[no] zoneset distribute full vsan N``: whether activation sends the full database too (basic
        mode; enhanced mode always distributes it)."""
        if full:
            self.running["zoneset_distribute"][str(vsan)] = "full"
        else:
            self.running["zoneset_distribute"].pop(str(vsan), None)
        out.changed = True

    async def set_mode(self, session: Session, out: Output, vsan: int, enhanced: bool) -> None:
        """``[no] zone mode enhanced vsan N``."""
        if self.holder(vsan) is not None:
            out.write(BUSY)
            return
        if self.enhanced(vsan) == enhanced:
            out.write("Current zoning mode same as specified zoning mode\n")
            return
        if not dont_ask(session):
            answer = await out.ask("WARNING: This command would distribute the zoning database of this switch "
                                   f"throughout the fabric. Do you want to continue? {YES_NO}")  # [R]
            if answer.strip().lower() != "y":
                return
        if enhanced:
            self.running["zone_modes"][str(vsan)] = "enhanced"
        else:
            self.running["zone_modes"].pop(str(vsan), None)
        self.status[str(vsan)] = f"Set zoning mode complete at {stamp()}"
        out.write("Set zoning mode command initiated. Check zone status\n")
        out.changed = True

    # --- exec commands ---------------------------------------------------------------------------
    async def clear_lock(self, session: Session, out: Output, vsan: int) -> None:
        """``clear zone lock vsan N`` (exec): an administrator frees whoever's lock, pending changes lost."""
        if not dont_ask(session):
            answer = await out.ask(f"Command will clear lock from the entire fabric. Do you want to continue? {YES_NO}")
            if answer.strip().lower() != "y":
                return
        if self.locks.pop(str(vsan), None) is not None:
            out.changed = True
        elif self.phantom_holds(vsan):
            out.write(BUSY)  # [R] the lock the zoning_locked fault stands for goes only with the fault
        else:
            out.write(NOT_LOCKED)

    def clear_database(self, session: Session, out: Output, vsan: int) -> None:
        """``clear zone database vsan N`` (exec): empty the full database (zones, zonesets, fcaliases); the
        active zoneset stays. Enhanced mode: an edit of the pending copy, under the lock."""
        if self._busy(session, vsan, out):
            return
        for table in self._edit_db(session, vsan, out).tables().values():
            table.clear()
        out.changed = True

    def copy_active_to_full(self, session: Session, out: Output, vsan: int) -> None:
        """``zone copy active-zoneset full-zoneset vsan N`` (exec): the active zoneset (its name, zones and
        expanded members) replaces the same-named zones and zoneset of the full database. Enhanced mode:
        an edit of the pending copy, under the lock."""
        active = self.running["active"].get(str(vsan))
        if active is None:
            out.write("Zoneset not present\n")  # [R] the show commands' text
            return
        if self._busy(session, vsan, out):
            return
        db = self._edit_db(session, vsan, out)
        for zone, members in active["zones"].items():
            db.zones[zone] = list(members)
        db.zonesets[active["name"]] = list(active["zones"])
        out.changed = True

    # --- for the personality ---------------------------------------------------------------------
    def flexzone_groups(self) -> list[tuple[str, int, int, ZoneGroup, bool]]:
        """(vsan, zone, port, group, all zones active) for flexzone's zones, full or active, per VSAN."""
        result = []
        for vsan in sorted(set(self.running["zones"]) | set(self.running["active"]), key=int):
            defined = self.running["zones"].get(vsan, {})
            active = self.running["active"].get(vsan, {"zones": {}})["zones"]

            def members_of(name: str, defined: Members = defined, active: Members = active) -> list[str]:
                return active.get(name) or defined.get(name) or []

            for (zone, port), group in flexzone_groups([*defined, *active], "fcip", members_of).items():
                result.append((vsan, zone, port, group, all(name in active for name in group.names)))
        return result


def member_spec(member: str) -> str:
    """How a stored member is written after ``member`` (config): ``pwwn W``, ``device-alias A``, ``fcalias A``."""
    return member if " " in member else f"pwwn {member}"

"""Cisco MDS zoning per VSAN: the full zone database, the active zoneset, basic and enhanced zoning
modes, the enhanced-mode zone session lock, and what the zoning commands do and say (the shows are
zoning_show.py's).

Committed state (``SimState.running``, persisted)::

    zones:      {"1": {"prod_oradb1_vmax": ["10:00:..."]}}     # full zone database, per VSAN
    zonesets:   {"1": {"PROD": ["prod_oradb1_vmax"]}}
    active:     {"1": {"name": "PROD", "zones": {"prod_oradb1_vmax": ["10:00:..."]}}}   # one per VSAN
    zone_modes: {"1": "enhanced"}                                # absent: basic
    default_zones: {"1": "permit"}                               # absent: deny

A zone member is a pwwn (stored as the WWN alone) or ``device-alias NAME`` (stored as written; the
device-alias database itself is not modelled).

Basic mode: edits change the full database at once and ``zoneset activate`` activates at once.
Enhanced mode: the first zoning edit of a session in a VSAN takes the VSAN's zone session lock (in
memory only, lost on restart) and a pending copy of its full database; later edits change the copy,
``zoneset activate`` and ``zone default-zone permit`` only stage, and ``zone commit vsan N`` makes the
copy the full database and performs the staged activation and default-zone change. ``no zone commit
vsan N`` drops the copy (the lock is the user's: any session of the same user may), ``clear zone lock
vsan N`` drops anybody's. A session that ends keeps its lock, as NX-OS does. While someone else holds
the lock, or the ``zoning_locked`` fault is armed (user ``san-admin`` holds every enhanced-mode VSAN),
edits print ``Lock is currently busy`` and change nothing.

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
from dataclasses import dataclass
from typing import Any, Protocol

from routers.sim.flexzones import ZoneGroup, flexzone_groups
from routers.sim.personality import Session, SimState

PHANTOM_USER = "san-admin"  # who holds the lock while the zoning_locked fault is armed
BUSY = "Lock is currently busy\n"  # [R] the prefix EMC CoprHD's MDS driver matches
SESSION_CREATED = "Enhanced zone session has been created. Please 'commit' the changes when done.\n"
NOT_LOCKED = "Zone database not locked\n"
YES_NO = "(y/n) [n] "
ZONE_DB_LIMIT = 2097152

PROD_ZONES = {
    "prod_oradb1_vmax": ["10:00:00:90:fa:c7:43:10", "50:00:09:73:f0:2c:51:04"],
    "prod_backup1_tape": ["10:00:00:90:fa:c7:43:22", "50:01:04:f0:00:a1:b2:c3"],
}


class Output(Protocol):
    """Where a zoning command writes (the personality's output buffer) and how it asks questions."""

    changed: bool

    def write(self, text: str) -> None: ...

    async def ask(self, question: str) -> str: ...


@dataclass
class ZoneLock:
    """A VSAN's enhanced-mode zone session: who holds it, their pending full database, staged
    activation (``("activate" | "deactivate", zoneset)``) and default-zone policy."""

    session: int
    user: str
    zones: dict[str, list[str]]
    zonesets: dict[str, list[str]]
    staged: tuple[str, str] | None = None
    default_zone: str | None = None


def stamp() -> str:
    return time.strftime("%H:%M:%S UTC %b %d %Y", time.gmtime())


def dont_ask(session: Session) -> bool:
    return bool(session.scratch.get("dont_ask"))


class MdsZoning:
    """The zoning half of the MDS personality: state, locks and the zoning commands' effects (the shows are
    zoning_show.py's)."""

    def __init__(self, state: SimState, locked_elsewhere: Callable[[], bool]) -> None:
        self.state = state
        self.locked_elsewhere = locked_elsewhere
        for key in ("zones", "zonesets", "active", "zone_modes", "default_zones"):
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

    def view(self, session: Session, vsan: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The database `session` edits: its pending copy if it holds the lock, else the full one."""
        lock = self._own_lock(session, vsan)
        if lock is not None:
            return lock.zones, lock.zonesets
        return self.running["zones"].get(str(vsan), {}), self.running["zonesets"].get(str(vsan), {})

    def _edit_db(self, session: Session, vsan: int,
                 out: Output) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The database to change; in enhanced mode the first edit takes the lock (call _busy first)."""
        key = str(vsan)
        if not self.enhanced(vsan):
            return self.running["zones"].setdefault(key, {}), self.running["zonesets"].setdefault(key, {})
        lock = self._own_lock(session, vsan)
        if lock is None:
            lock = ZoneLock(session.id, session.username, copy.deepcopy(self.running["zones"].get(key, {})),
                            copy.deepcopy(self.running["zonesets"].get(key, {})))
            self.locks[key] = lock
            out.write(SESSION_CREATED)
        return lock.zones, lock.zonesets

    # --- config commands -------------------------------------------------------------------------
    def zone_name(self, session: Session, out: Output, name: str, vsan: int, negate: bool) -> bool:
        """``[no] zone name Z vsan N``; True when the zone submode is entered."""
        if self._busy(session, vsan, out):
            return False
        zones, _ = self.view(session, vsan)
        if negate and name not in zones:
            out.write(f'Zone "{name}" not present\n')  # [R]
            return False
        zones, zonesets = self._edit_db(session, vsan, out)
        out.changed = True
        if not negate:
            zones.setdefault(name, [])
            return True
        del zones[name]
        for members in zonesets.values():
            if name in members:
                members.remove(name)
        return False

    def zone_member(self, session: Session, out: Output, vsan: int, zone: str, member: str, negate: bool) -> None:
        """``[no] member pwwn W | device-alias A`` inside ``zone name Z vsan N`` (`member`: W or "device-alias A")."""
        if self._busy(session, vsan, out):
            return
        zones, _ = self.view(session, vsan)
        if negate and member not in zones.get(zone, []):
            out.write(f'Zone member "{member_spec(member)}" not present in zone "{zone}"\n')  # [R]
            return
        zones, _ = self._edit_db(session, vsan, out)
        members = zones.setdefault(zone, [])  # a lock cleared meanwhile: the zone starts again here
        if negate:
            members.remove(member)
        elif member not in members:
            members.append(member)
        out.changed = True

    def zoneset_name(self, session: Session, out: Output, name: str, vsan: int, negate: bool) -> bool:
        """``[no] zoneset name S vsan N``; True when the zoneset submode is entered."""
        if self._busy(session, vsan, out):
            return False
        _, zonesets = self.view(session, vsan)
        if negate and name not in zonesets:
            out.write(f'Zoneset "{name}" not present\n')  # [R]
            return False
        _, zonesets = self._edit_db(session, vsan, out)
        out.changed = True
        if negate:
            del zonesets[name]
            return False
        zonesets.setdefault(name, [])
        return True

    def zoneset_member(self, session: Session, out: Output, vsan: int, zoneset: str, zone: str,
                       negate: bool) -> None:
        """``[no] member Z`` inside ``zoneset name S vsan N``."""
        if self._busy(session, vsan, out):
            return
        _, zonesets = self.view(session, vsan)
        if negate and zone not in zonesets.get(zoneset, []):
            out.write(f'Zone "{zone}" not present in zoneset "{zoneset}"\n')  # [R]
            return
        _, zonesets = self._edit_db(session, vsan, out)
        members = zonesets.setdefault(zoneset, [])
        if negate:
            members.remove(zone)
        elif zone not in members:
            members.append(zone)
        out.changed = True

    async def activate(self, session: Session, out: Output, name: str, vsan: int, negate: bool) -> None:
        """``[no] zoneset activate name S vsan N``: at once in basic mode, staged in enhanced mode."""
        if self._busy(session, vsan, out):
            return
        key = str(vsan)
        zones, zonesets = self.view(session, vsan)
        active = self.running["active"].get(key)
        if negate:
            if not active or active["name"] != name:
                out.write(f'Zoneset "{name}" is not active in vsan {vsan}\n')  # [R]
                return
        elif name not in zonesets:
            out.write(f'Zoneset "{name}" not present\n')  # [R]
            return
        elif not await self._bigger_confirmed(session, out, name, len(zonesets[name]), active):
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
        self.running["active"][key] = {"name": name, "zones": {z: list(zones.get(z, [])) for z in zonesets[name]}}
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
        if lock.staged is not None:
            action, name = lock.staged
            if action == "deactivate":
                self.running["active"].pop(key, None)
            elif name in lock.zonesets:
                self.running["active"][key] = {
                    "name": name, "zones": {z: list(lock.zones.get(z, [])) for z in lock.zonesets[name]}}
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

    # --- for the personality ---------------------------------------------------------------------
    def flexzone_groups(self) -> list[tuple[str, int, int, ZoneGroup, bool]]:
        """(vsan, zone, port, group, all zones active) for flexzone's zones, full or active, per VSAN."""
        result = []
        for vsan in sorted(set(self.running["zones"]) | set(self.running["active"]), key=int):
            defined = self.running["zones"].get(vsan, {})
            active = self.running["active"].get(vsan, {"zones": {}})["zones"]

            def members_of(name: str, defined: dict[str, list[str]] = defined,
                           active: dict[str, list[str]] = active) -> list[str]:
                return active.get(name) or defined.get(name) or []

            for (zone, port), group in flexzone_groups([*defined, *active], "fcip", members_of).items():
                result.append((vsan, zone, port, group, all(name in active for name in group.names)))
        return result

    def seed_production(self) -> None:
        """Other hosts' zoning, active in VSAN 1 (basic mode): two production zones in zoneset PROD."""
        self.running["zone_modes"].pop("1", None)
        self.running["zones"]["1"] = copy.deepcopy(PROD_ZONES)
        self.running["zonesets"]["1"] = {"PROD": list(PROD_ZONES)}
        self.running["active"]["1"] = {"name": "PROD", "zones": copy.deepcopy(PROD_ZONES)}
        self.locks.pop("1", None)


def member_spec(member: str) -> str:
    """How a stored member is written after ``member`` (config) or alone (shows)."""
    return member if " " in member else f"pwwn {member}"

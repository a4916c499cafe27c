"""The fabric around a simulated Cisco MDS switch: which devices are logged in (with their FCIDs), and
the zoning other hosts already depend on when the switch starts (``--production-zoning``,
``--fabric-size N``).

Persisted state (``SimState.running``)::

    logged_in: ["10:00:00:90:fa:c7:43:10", ...]     # pwwns logged in to VSAN 1, in login order

A logged-in device gets an FCID in the switch's domain (0x1e) whose area and port come from a hash of
its pwwn, the next free one on a clash (in login order, so a device keeps its FCID as others come).
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from simulators.cisco_mds.zoning import MdsZoning, ZoneDb, active_copy

DOMAIN = 0x1E
PROD_ZONES = {
    "prod_oradb1_vmax": ["10:00:00:90:fa:c7:43:10", "50:00:09:73:f0:2c:51:04"],
    "prod_backup1_tape": ["10:00:00:90:fa:c7:43:22", "50:01:04:f0:00:a1:b2:c3"],
}
ZONESET = "PROD"
HOST_KINDS = ("esx", "ora", "sap", "win")
ARRAY_KINDS = ("vmax", "unity", "pure", "ntap")
ZONES_PER_TARGET = 6
PORTS_PER_ARRAY = 4


def fcids(logged_in: list[str]) -> dict[str, str]:
    """pwwn -> FCID (``0x1eAAPP``, lower-case hex) for every logged-in device."""
    taken: set[int] = set()
    result = {}
    for wwn in logged_in:
        slot = int.from_bytes(hashlib.sha256(wwn.encode()).digest()[:2], "big")
        while slot in taken:
            slot = (slot + 1) % 0x10000
        taken.add(slot)
        result[wwn] = f"0x{DOMAIN:02x}{slot:04x}"
    return result


def log_in(running: dict[str, Any], wwns: list[str]) -> None:
    """The devices `wwns` log in to VSAN 1 (those already in stay where they are)."""
    logged_in = running.setdefault("logged_in", [])
    known = set(logged_in)
    for wwn in wwns:
        if wwn not in known:
            logged_in.append(wwn)
            known.add(wwn)


def seed_production(zoning: MdsZoning) -> None:
    """Other hosts' zoning, active in VSAN 1 (basic mode): two production zones in zoneset PROD, their
    devices logged in."""
    running = zoning.running
    running["zone_modes"].pop("1", None)
    running["zones"]["1"] = copy.deepcopy(PROD_ZONES)
    running["zonesets"]["1"] = {ZONESET: list(PROD_ZONES)}
    running["active"]["1"] = {"name": ZONESET, "zones": copy.deepcopy(PROD_ZONES)}
    zoning.locks.pop("1", None)
    log_in(running, [wwn for members in PROD_ZONES.values() for wwn in members])


def initiator_wwn(index: int) -> str:
    return "21:00:00:24:ff:" + ":".join(f"{(index >> shift) & 0xFF:02x}" for shift in (16, 8, 0))


def target_wwn(index: int) -> str:
    return "50:06:01:68:3e:" + ":".join(f"{(index >> shift) & 0xFF:02x}" for shift in (16, 8, 0))


def host_name(index: int) -> str:
    return f"{HOST_KINDS[index % len(HOST_KINDS)]}{index // len(HOST_KINDS) + 1:04d}_hba0"


def array_port_name(index: int) -> str:
    array = index // PORTS_PER_ARRAY
    return f"{ARRAY_KINDS[array % len(ARRAY_KINDS)]}{array // len(ARRAY_KINDS) + 1:02d}_p{index % PORTS_PER_ARRAY}"


def seed_fabric(zoning: MdsZoning, size: int) -> None:
    """A production-sized VSAN 1 (basic mode): `size` zones of other hosts, each one initiator and one
    array port (each array port serves about six zones), in the active zoneset PROD and the full
    database, beside the production zones if they were seeded. A third of the zones name their members
    by pwwn, a third by device-alias (in the device-alias database), a third by fcalias (defined in the
    VSAN); nine devices in ten are logged in."""
    running = zoning.running
    running["zone_modes"].pop("1", None)
    zoning.locks.pop("1", None)
    db = ZoneDb(*(running[table].setdefault("1", {}) for table in ("zones", "zonesets", "fcaliases")))
    aliases = running.setdefault("device_aliases", {})
    zoneset = db.zonesets.setdefault(ZONESET, [])
    targets = max(1, -(-size // ZONES_PER_TARGET))
    online = [target_wwn(index) for index in range(targets)]
    for index in range(size):
        host, target = index, index % targets
        ends = [(host_name(host), initiator_wwn(host)), (array_port_name(target), target_wwn(target))]
        style = index % 3
        if style == 1:
            for name, wwn in ends:
                aliases.setdefault(name, wwn)
        elif style == 2:
            for name, wwn in ends:
                db.fcaliases.setdefault(name, [wwn])
        members = [wwn if style == 0 else f"{'device-alias' if style == 1 else 'fcalias'} {name}"
                   for name, wwn in ends]
        zone = f"z1_{ends[0][0]}_{ends[1][0]}"
        db.zones[zone] = members
        if zone not in zoneset:
            zoneset.append(zone)
        if index % 10 != 9:
            online.append(ends[0][1])
    running["active"]["1"] = active_copy(db, ZONESET)
    log_in(running, online)

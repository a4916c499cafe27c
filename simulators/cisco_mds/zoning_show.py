"""What Cisco MDS shows of zoning: ``show zone [active] [name Z] [vsan N]``, ``show zoneset [name S]
[brief] [active] [vsan N]``, ``show fcalias [name A] [vsan N]`` and ``show zone status [vsan N]``.

Layouts follow public captures (cisco.nxos fixtures, a Nexus 5548, a dCloud MDS session): members
without the word ``member``, indented two spaces
under their zone (four under a zoneset's zone); a pwwn with a device-alias is followed by `` [alias]``;
an fcalias member is printed as ``fcalias name A vsan N`` with the alias's own members two spaces
deeper and a blank line after the block; zones are separated by one blank line. The active zoneset
lists members as activation copied them (fcaliases expanded): a logged-in device as ``* fcid 0x..
[pwwn W] [alias]`` or ``* fcid 0x.. [device-alias X]`` at the zone's indentation, any other member
two spaces deeper. ``show zone status`` sizes are estimates that grow with the database. Texts marked
``[R]`` are reconstructed in the same style.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from simulators.cisco_mds.device_alias import alias_of_wwn
from simulators.cisco_mds.fabric import fcids
from simulators.cisco_mds.zoning import ZONE_DB_LIMIT, MdsZoning, Members

ZONE_ABSENT = "Zone not present\n"
ZONESET_ABSENT = "Zoneset not present\n"
ALIAS_ABSENT = "Alias not present\n"  # [R]


class Labels:
    """How members are printed: a pwwn's device-alias, a device-alias's pwwn, a logged-in pwwn's FCID."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.alias_of = alias_of_wwn(config)
        self.wwn_of: dict[str, str] = config.get("device_aliases", {})
        self.fcid = fcids(config.get("logged_in", []))

    def plain(self, member: str) -> str:
        """``pwwn W [alias]``, ``pwwn W`` or the member as stored (``device-alias X``)."""
        if " " in member:
            return member
        alias = self.alias_of.get(member)
        return f"pwwn {member} [{alias}]" if alias else f"pwwn {member}"

    def active(self, member: str, indent: int) -> str:
        """One member of an active zone: ``* fcid`` at `indent` when logged in, else two spaces deeper."""
        kind, _, name = member.partition(" ")
        wwn = self.wwn_of.get(name) if kind == "device-alias" else member
        fcid = self.fcid.get(wwn or "")
        if fcid is None:
            return " " * (indent + 2) + self.plain(member)
        if kind == "device-alias":
            return " " * indent + f"* fcid {fcid} [{member}]"
        alias = self.alias_of.get(member)
        return " " * indent + f"* fcid {fcid} [pwwn {member}]" + (f" [{alias}]" if alias else "")

    def full(self, members: list[str], fcaliases: Members, vsan: str, indent: int) -> list[str]:
        """A full zone's member lines, each fcalias as a block of its own members and a blank line."""
        pad = " " * indent
        lines = []
        for member in members:
            kind, _, name = member.partition(" ")
            if kind != "fcalias":
                lines.append(pad + self.plain(member))
                continue
            lines.append(f"{pad}fcalias name {name} vsan {vsan}")
            lines += [f"{pad}  {self.plain(item)}" for item in fcaliases.get(name, [])]
            lines.append("")
        return lines


def by_vsan(table: dict[str, Any], vsan: int | None) -> Iterator[tuple[str, Any]]:
    """A per-VSAN table's entries in VSAN order, only `vsan`'s when given."""
    for key, value in sorted(table.items(), key=lambda item: int(item[0])):
        if vsan is None or key == str(vsan):
            yield key, value


def text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def separate(lines: list[str]) -> None:
    """One blank line before the next block (none at the top, none doubled after an fcalias block)."""
    if lines and lines[-1] != "":
        lines.append("")


def show_zone(running: dict[str, Any], vsan: int | None, name: str | None = None) -> str:
    """``show zone [name Z] [vsan N]``: the full database's zones."""
    labels = Labels(running)
    lines: list[str] = []
    for key, zones in by_vsan(running["zones"], vsan):
        for zone, members in zones.items():
            if name is None or zone == name:
                separate(lines)
                lines.append(f"zone name {zone} vsan {key}")
                lines += labels.full(members, running["fcaliases"].get(key, {}), key, 2)
    return text(lines) or ZONE_ABSENT


def show_zone_active(running: dict[str, Any], vsan: int | None, name: str | None = None) -> str:
    """``show zone active [name Z] [vsan N]``: the active zones without their zoneset; a logged-in member
    is `` * fcid`` (one space, as captured), any other two spaces in [R]."""
    labels = Labels(running)
    lines: list[str] = []
    for key, active in by_vsan(running["active"], vsan):
        for zone, members in active["zones"].items():
            if name is None or zone == name:
                separate(lines)
                lines.append(f"zone name {zone} vsan {key}")
                lines += [labels.active(member, 1) for member in members]
    return text(lines) or ZONE_ABSENT


def show_zoneset(running: dict[str, Any], vsan: int | None, name: str | None = None) -> str:
    """``show zoneset [name S] [vsan N]``: the full database's zonesets with their zones and members."""
    labels = Labels(running)
    lines: list[str] = []
    for key, zonesets in by_vsan(running["zonesets"], vsan):
        zones, fcaliases = running["zones"].get(key, {}), running["fcaliases"].get(key, {})
        for zoneset, names in zonesets.items():
            if name is not None and zoneset != name:
                continue
            separate(lines)
            lines.append(f"zoneset name {zoneset} vsan {key}")
            for index, zone in enumerate(names):
                if index:
                    separate(lines)
                lines.append(f"  zone name {zone} vsan {key}")
                lines += labels.full(zones.get(zone, []), fcaliases, key, 4)
    return text(lines) or ZONESET_ABSENT


def show_zoneset_brief(running: dict[str, Any], vsan: int | None, active: bool, name: str | None = None) -> str:
    """``show zoneset [name S] brief [active] [vsan N]``: each zoneset and the names of its zones."""
    lines: list[str] = []
    tables: Iterator[tuple[str, Any]]
    if active:
        tables = ((key, {info["name"]: list(info["zones"])}) for key, info in by_vsan(running["active"], vsan))
    else:
        tables = by_vsan(running["zonesets"], vsan)
    for key, zonesets in tables:
        for zoneset, zones in zonesets.items():
            if name is None or zoneset == name:
                separate(lines)
                lines.append(f"zoneset name {zoneset} vsan {key}")
                lines += [f"  zone {zone}" for zone in zones]
    return text(lines) or ZONESET_ABSENT


def show_zoneset_active(running: dict[str, Any], vsan: int | None, name: str | None = None) -> str:
    """``show zoneset active [vsan N]``: the active zoneset as enforced, a blank line between zones."""
    labels = Labels(running)
    lines: list[str] = []
    for key, active in by_vsan(running["active"], vsan):
        if name is not None and active["name"] != name:
            continue
        separate(lines)
        lines.append(f"zoneset name {active['name']} vsan {key}")
        for index, (zone, members) in enumerate(active["zones"].items()):
            if index:
                separate(lines)
            lines.append(f"  zone name {zone} vsan {key}")
            lines += [labels.active(member, 2) for member in members]
    return text(lines) or ZONESET_ABSENT


def show_fcalias(running: dict[str, Any], vsan: int | None, name: str | None = None) -> str:
    """``show fcalias [name A] [vsan N]``: each fcalias with its members two spaces in, a blank line between."""
    labels = Labels(running)
    lines: list[str] = []
    for key, fcaliases in by_vsan(running["fcaliases"], vsan):
        for alias, members in fcaliases.items():
            if name is None or alias == name:
                separate(lines)
                lines.append(f"fcalias name {alias} vsan {key}")
                lines += [f"  {labels.plain(member)}" for member in members]
    return text(lines) or (ALIAS_ABSENT if name is not None else "")


def zone_status(zoning: MdsZoning, vsan: int) -> str:
    """``show zone status vsan N``, laid out as a real capture (cisco.nxos fixtures); sizes are estimates."""
    key = str(vsan)
    db = zoning.committed(vsan)
    active = zoning.running["active"].get(key)
    lock = zoning.locks.get(key)
    holder = zoning.holder(vsan)
    enhanced = zoning.enhanced(vsan)
    full_size = _db_size(db.zones, db.zonesets, db.fcaliases)
    used = full_size
    counters = f"    Zonesets:{len(db.zonesets):>3} Zones: {len(db.zones)} Aliases: {len(db.fcaliases)}"
    if active:
        active_size = _db_size(active["zones"], {active["name"]: list(active["zones"])}, {})
        used += active_size
        active_lines = (f"    DB Size: {active_size} bytes\n"
                        f"    Name: {active['name']} Zonesets: 1 Zones: {len(active['zones'])}\n")
    else:
        active_lines = "   Database Not Available\n"  # three spaces, as a 2020s MDS prints it
    if enhanced:
        counters += " Attribute-groups: 1"
        pending_full = _db_size(lock.zones, lock.zonesets, lock.fcaliases) if lock else 0
        pending_active = 0
        if lock is not None and lock.staged is not None and lock.staged[0] == "activate":
            staged = lock.zonesets.get(lock.staged[1], [])
            pending_active = _db_size({z: lock.zones.get(z, []) for z in staged}, {lock.staged[1]: staged}, {})
        pending = f"    Full DB Copy size: {pending_full} bytes\n    Active DB Copy size: {pending_active} bytes\n"
        sfc = pending_full + pending_active
    else:
        pending = "    Full DB Copy size: n/a\n    Active DB Copy size: n/a\n"
        sfc = used
    default_status = "Activation completed" if active else "Deactivation completed"
    return (f"VSAN: {vsan} default-zone: {zoning.default_zone(vsan)} distribute: {zoning.distribute(vsan)} "
            "Interop: default\n"
            f"    mode: {'enhanced' if enhanced else 'basic'} merge-control: allow\n"
            f"    session:  {f'cli [{holder}]' if holder else 'none'}\n"  # [R] the holder form
            "    hard-zoning: enabled broadcast: unsupported\n"
            "    smart-zoning: disabled\n"
            "    rscn-format: fabric-address\n"
            "    activation overwrite control: disabled\n"
            "Default zone:\n"
            "    qos: none broadcast: unsupported ronly: unsupported\n"
            "Full Zoning Database :\n"
            f"    DB size: {full_size} bytes\n"
            f"{counters}\n"
            "Active Zoning Database :\n"
            f"{active_lines}"
            f"Current Total Zone DB Usage: {used} / {ZONE_DB_LIMIT} bytes ({used * 100 // ZONE_DB_LIMIT} % used)\n"
            "Pending (Session) DB size:\n"
            f"{pending}"
            f"SFC size: {sfc} / {ZONE_DB_LIMIT} bytes ({sfc * 100 // ZONE_DB_LIMIT} % used)\n"
            f"Status: {zoning.status.get(key, f'{default_status} at {zoning.started}')}\n")


def _db_size(zones: Members, zonesets: Members, fcaliases: Members) -> int:
    """A plausible encoded size: NX-OS reports bytes; the simulator only needs them to grow with the DB."""
    return (124 + sum(44 + 20 * len(members) for members in zones.values())
            + sum(40 + 24 * len(members) for members in zonesets.values())
            + sum(44 + 20 * len(members) for members in fcaliases.values()))

"""What Cisco MDS shows of zoning: ``show zoneset [active] [vsan N]``, ``show zone [vsan N]``, ``show zone
status vsan N`` and the zoning sections of ``show running-config`` / ``startup-config``.

``show zone status`` follows a real capture's layout (cisco.nxos fixtures); its sizes are estimates
that grow with the database. Texts marked ``[R]`` are reconstructed in the same style.
"""

from __future__ import annotations

from typing import Any

from routers.sim.cisco_mds.zoning import ZONE_DB_LIMIT, MdsZoning, member_spec


def show_zoneset(zoning: MdsZoning, active: bool, vsan: int | None) -> str:
    text = ""
    if active:
        for key, info in sorted(zoning.running["active"].items(), key=lambda item: int(item[0])):
            if vsan is not None and key != str(vsan):
                continue
            text += f"zoneset name {info['name']} vsan {key}\n"
            for zone, members in info["zones"].items():
                text += f"  zone name {zone} vsan {key}\n" + "".join(f"    {member_spec(m)}\n" for m in members)
            text += "\n"
        if not text and vsan is not None:
            text = "Zoneset not present\n"  # [R]
        return text
    for key, sets in sorted(zoning.running["zonesets"].items(), key=lambda item: int(item[0])):
        if vsan is not None and key != str(vsan):
            continue
        zones = zoning.running["zones"].get(key, {})
        for name, members in sets.items():
            text += f"zoneset name {name} vsan {key}\n"
            for zone in members:
                text += f"  zone name {zone} vsan {key}\n"
                text += "".join(f"    {member_spec(m)}\n" for m in zones.get(zone, []))
            text += "\n"
    return text


def show_zone(zoning: MdsZoning, vsan: int | None) -> str:
    text = ""
    for key, zones in sorted(zoning.running["zones"].items(), key=lambda item: int(item[0])):
        if vsan is not None and key != str(vsan):
            continue
        for name, members in zones.items():
            text += f"zone name {name} vsan {key}\n" + "".join(f"  {member_spec(m)}\n" for m in members) + "\n"
    return text


def zone_status(zoning: MdsZoning, vsan: int) -> str:
    """``show zone status vsan N``, laid out as a real capture (cisco.nxos fixtures); sizes are estimates."""
    key = str(vsan)
    zones = zoning.running["zones"].get(key, {})
    zonesets = zoning.running["zonesets"].get(key, {})
    active = zoning.running["active"].get(key)
    lock = zoning.locks.get(key)
    holder = zoning.holder(vsan)
    full_size = _db_size(zones, zonesets)
    active_size = _db_size(active["zones"], {active["name"]: list(active["zones"])}) if active else 0
    pending_full = _db_size(lock.zones, lock.zonesets) if lock else 0
    pending_active = 0
    if lock is not None and lock.staged is not None and lock.staged[0] == "activate":
        staged = lock.zonesets.get(lock.staged[1], [])
        pending_active = _db_size({z: lock.zones.get(z, []) for z in staged}, {lock.staged[1]: staged})
    mode = "enhanced" if zoning.enhanced(vsan) else "basic"
    distribute = "full" if mode == "enhanced" else "active only"
    name_line = (f"    Name: {active['name']} Zonesets: 1 Zones: {len(active['zones'])}\n" if active
                 else "    Database Not Available\n")  # [R] the no-active-zoneset line
    default_status = "Activation completed" if active else "Deactivation completed"
    used = full_size + active_size
    return (f"VSAN: {vsan} default-zone: {zoning.default_zone(vsan)} distribute: {distribute} Interop: default\n"
            f"    mode: {mode} merge-control: allow\n"
            f"    session:  {f'cli [{holder}]' if holder else 'none'}\n"  # [R] the holder form
            "    hard-zoning: enabled broadcast: unsupported\n"
            "    smart-zoning: disabled\n"
            "    rscn-format: fabric-address\n"
            "    activation overwrite control: disabled\n"
            "Default zone:\n"
            "    qos: none broadcast: unsupported ronly: unsupported\n"
            "Full Zoning Database :\n"
            f"    DB size: {full_size} bytes\n"
            f"    Zonesets:{len(zonesets):>3} Zones: {len(zones)} Aliases: 0 Attribute-groups: 1\n"
            "Active Zoning Database :\n"
            f"    DB Size: {active_size} bytes\n"
            f"{name_line}"
            f"Current Total Zone DB Usage: {used} / {ZONE_DB_LIMIT} bytes ({used * 100 // ZONE_DB_LIMIT} % used)\n"
            "Pending (Session) DB size:\n"
            f"    Full DB Copy size: {pending_full} bytes\n"
            f"    Active DB Copy size: {pending_active} bytes\n"
            f"SFC size: 0 / {ZONE_DB_LIMIT} bytes (0 % used)\n"
            f"Status: {zoning.status.get(key, f'{default_status} at {zoning.started}')}\n")


def _db_size(zones: dict[str, list[str]], zonesets: dict[str, list[str]]) -> int:
    """A plausible encoded size: NX-OS reports bytes; the simulator only needs them to grow with the DB."""
    if not zones and not zonesets:
        return 4
    return (8 + sum(44 + 20 * len(members) for members in zones.values())
            + sum(40 + 24 * len(members) for members in zonesets.values()))


def render_zoning(config: dict[str, Any]) -> list[str]:
    """The zoning lines of ``show running-config`` (or startup-config) for `config`."""
    lines: list[str] = []
    for key in sorted(config.get("default_zones", {}), key=int):
        lines += ["", f"zone default-zone permit vsan {key}"]
    for key in sorted(config.get("zone_modes", {}), key=int):
        lines += ["", f"zone mode enhanced vsan {key}"]
    for key, active in sorted(config.get("active", {}).items(), key=lambda item: int(item[0])):
        lines += ["", f"!Active Zone Database Section for vsan {key}"]
        for zone, members in active["zones"].items():
            lines.append(f"zone name {zone} vsan {key}")
            lines += [f"    member {member_spec(m)}" for m in members]
        lines += ["", f"zoneset name {active['name']} vsan {key}"]
        lines += [f"    member {zone}" for zone in active["zones"]]
        lines += ["", f"zoneset activate name {active['name']} vsan {key}", f"do clear zone database vsan {key}"]
    vsans = sorted(set(config.get("zones", {})) | set(config.get("zonesets", {})), key=int)
    for key in vsans:
        lines += [f"!Full Zone Database Section for vsan {key}"]
        for zone, members in config.get("zones", {}).get(key, {}).items():
            lines.append(f"zone name {zone} vsan {key}")
            lines += [f"    member {member_spec(m)}" for m in members]
        for name, members in config.get("zonesets", {}).get(key, {}).items():
            lines += ["", f"zoneset name {name} vsan {key}"]
            lines += [f"    member {zone}" for zone in members]
        lines.append("")
    return lines

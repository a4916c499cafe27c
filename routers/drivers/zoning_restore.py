"""The commands that would put a zoning before-image back: rendered for an admin to read and run, never
sent by flexzone.

An image is the zoning in force as the engine journals it (`RouterDriver.zoning_image`): the name of
the configuration in force (FOS: the effective cfg; MDS: the VSAN's active zoneset, with `vsan`) and
its zones with their members. The commands are worked out from the two images of one change, the
before and the after: they undo exactly what differs between them, relative to the zoning flexzone
left behind. What changed on the switch since then is not known here: read the switch first.
"""

from __future__ import annotations

from typing import Any

Image = dict[str, Any]


def differences(before: Image, after: Image) -> tuple[list[str], list[str], list[str]]:
    """(zones the change put in force, zones it took out, zones whose members it changed)."""
    was, now = before.get("zones") or {}, after.get("zones") or {}
    added = sorted(set(now) - set(was))
    taken = sorted(set(was) - set(now))
    changed = sorted(name for name in set(was) & set(now) if sorted(was[name]) != sorted(now[name]))
    return added, taken, changed


def render_fos_restore(before: Image, after: Image | None) -> list[str]:
    """Brocade FOS: edit the configuration that was in effect and enable it again (or disable the
    configuration a change enabled on a fabric that had none in effect)."""
    if after is None:
        return []
    cfg = before.get("in_effect")
    if cfg is None:
        return ["cfgdisable"] if after.get("in_effect") is not None else []
    added, taken, changed = differences(before, after)
    was, now = before["zones"], after["zones"]
    lines = []
    if added:
        lines.append(f'cfgremove "{cfg}", "{"; ".join(added)}"')
    for name in taken:
        lines.append(f'zonecreate "{name}", "{"; ".join(was[name])}"')
    if taken:
        lines.append(f'cfgadd "{cfg}", "{"; ".join(taken)}"')
    for name in changed:
        if missing := [member for member in was[name] if member not in now[name]]:
            lines.append(f'zoneadd "{name}", "{"; ".join(missing)}"')
        if extra := [member for member in now[name] if member not in was[name]]:
            lines.append(f'zoneremove "{name}", "{"; ".join(extra)}"')
    if lines or after.get("in_effect") != cfg:
        lines.append(f'cfgenable "{cfg}"')
    return lines


def render_mds_restore(before: Image, after: Image | None) -> list[str]:
    """Cisco MDS: edit the zoneset that was active in the VSAN and activate it again (in enhanced mode
    a `zone commit vsan N` follows)."""
    if after is None:
        return []
    vsan, zoneset = before.get("vsan", 1), before.get("in_effect")
    if zoneset is None:
        active = after.get("in_effect")
        return [f"no zoneset activate name {active} vsan {vsan}"] if active is not None else []
    added, taken, changed = differences(before, after)
    was, now = before["zones"], after["zones"]
    lines = []
    for name in taken + changed:
        lines.append(f"zone name {name} vsan {vsan}")
        lines += [f"member pwwn {member}" for member in was[name] if member not in now.get(name, [])]
        lines += [f"no member pwwn {member}" for member in now.get(name, []) if member not in was[name]]
    if added or taken:
        lines.append(f"zoneset name {zoneset} vsan {vsan}")
        lines += [f"no member {name}" for name in added]
        lines += [f"member {name}" for name in taken]
    if lines or after.get("in_effect") != zoneset:
        lines.append(f"zoneset activate name {zoneset} vsan {vsan}")
    return lines

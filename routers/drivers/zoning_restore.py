"""The commands that would put a zoning before-image back: rendered for an admin to read and run, never
sent by flexzone.

An image is the zoning in force as the engine journals it (`RouterDriver.zoning_image`): the name of
the configuration in force (FOS: the effective cfg; MDS: the VSAN's active zoneset, with `vsan`) and
its zones with their members. The commands are worked out from the two images of one change, the
before and the after, and follow the first rule: they undo only what differs in flexzone's own zones
(`ours`, the driver's zone-name pattern) and only ever enable flexzone's own configuration where it
had enabled one on a fabric that had none, or re-enable the configuration that was in force. A zone
another admin changed in between is theirs, and never named. What changed on the switch since the
change is not known here: read the switch first. On an MDS VSAN in enhanced zoning mode, end with
`zone commit vsan N`.
"""

from __future__ import annotations

import re
from typing import Any

Image = dict[str, Any]


def differences(before: Image, after: Image, ours: re.Pattern[str] | None = None
                ) -> tuple[list[str], list[str], list[str]]:
    """(zones the change put in force, zones it took out, zones whose members it changed); only
    flexzone's zones (`ours`) when given."""
    was, now = before.get("zones") or {}, after.get("zones") or {}
    names = [name for name in {*was, *now} if ours is None or ours.fullmatch(name)]
    added = sorted(name for name in names if name in now and name not in was)
    taken = sorted(name for name in names if name in was and name not in now)
    changed = sorted(name for name in names if name in was and name in now and sorted(was[name]) != sorted(now[name]))
    return added, taken, changed


def render_fos_restore(before: Image, after: Image | None, ours: re.Pattern[str], own_cfg: str) -> list[str]:
    """Brocade FOS: take flexzone's zones out of (or back into) the configuration that was in effect and
    enable it again; disable flexzone's own configuration where none was in effect before."""
    if after is None:
        return []
    cfg, now_cfg = before.get("in_effect"), after.get("in_effect")
    if cfg is None:
        return ["cfgdisable"] if now_cfg == own_cfg else []
    if now_cfg not in (cfg, None) or (now_cfg is None and cfg != own_cfg):
        return []  # another configuration is in force now: not flexzone's doing, nor to undo here
    added, taken, changed = differences(before, after, ours)
    was, now = before["zones"], after["zones"]
    lines = []
    if added:
        lines.append(f'cfgremove "{cfg}", "{"; ".join(added)}"')
    lines += [f'zonecreate "{name}", "{"; ".join(was[name])}"' for name in taken]
    if taken:  # flexzone's own cfg was deleted with the last of its zones: made again
        lines.append(f'{"cfgcreate" if now_cfg is None else "cfgadd"} "{cfg}", "{"; ".join(taken)}"')
    for name in changed:
        if missing := [member for member in was[name] if member not in now[name]]:
            lines.append(f'zoneadd "{name}", "{"; ".join(missing)}"')
        if extra := [member for member in now[name] if member not in was[name]]:
            lines.append(f'zoneremove "{name}", "{"; ".join(extra)}"')
    if lines:
        lines.append(f'cfgenable "{cfg}"')
    return lines


def render_mds_restore(before: Image, after: Image | None, ours: re.Pattern[str], own_zoneset: str) -> list[str]:
    """Cisco MDS: put flexzone's zones back as they were in the zoneset that was active in the VSAN and
    activate it again; deactivate flexzone's own zoneset where none was active before."""
    if after is None:
        return []
    vsan, zoneset, now_zoneset = before.get("vsan", 1), before.get("in_effect"), after.get("in_effect")
    if zoneset is None:
        return [f"no zoneset activate name {own_zoneset} vsan {vsan}"] if now_zoneset == own_zoneset else []
    if now_zoneset not in (zoneset, None) or (now_zoneset is None and zoneset != own_zoneset):
        return []
    added, taken, changed = differences(before, after, ours)
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
    if lines:
        lines.append(f"zoneset activate name {zoneset} vsan {vsan}")
    return lines

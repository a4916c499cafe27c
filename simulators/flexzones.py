"""How the FCIP simulators recognise flexzone's zones, so ``links()`` can report flexzone's links.

flexzone names its zones after the link: ``fz_z<zone>_<kind><port>`` (the old style, one zone per
link holding the device) or ``fz_z<zone>_<kind><port>_<initiator>_<target>`` (one zone per
initiator-target pair, each WWN as 16 lower-case hex digits), where ``<kind>`` is ``ve`` on Brocade
FOS and ``fcip`` on Cisco MDS. A link is the group of such zones sharing (zone, port).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass
class ZoneGroup:
    """flexzone's zones of one (zone, port), with the initiators and targets they grant."""

    names: list[str] = field(default_factory=list)
    initiators: set[str] = field(default_factory=set)
    targets: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)


def colon_wwn(hex_digits: str) -> str:
    return ":".join(hex_digits[i : i + 2] for i in range(0, 16, 2))


def flexzone_groups(names: Iterable[str], kind: str,
                    members_of: Callable[[str], list[str]]) -> dict[tuple[int, int], ZoneGroup]:
    """(zone, port) -> ZoneGroup for every flexzone zone among `names`.

    A pair zone says its initiator and target in its name; an old-style zone holds only the device,
    so its members (`members_of(name)`) count as targets.
    """
    pattern = re.compile(rf"fz_z(\d+)_{kind}(\d+)(?:_([0-9a-f]{{16}})_([0-9a-f]{{16}}))?")
    groups: dict[tuple[int, int], ZoneGroup] = {}
    for name in sorted(set(names)):
        match = pattern.fullmatch(name)
        if match is None:
            continue
        group = groups.setdefault((int(match.group(1)), int(match.group(2))), ZoneGroup())
        group.names.append(name)
        if match.group(3):
            group.initiators.add(colon_wwn(match.group(3)))
            group.targets.add(colon_wwn(match.group(4)))
            group.pairs.add((colon_wwn(match.group(3)), colon_wwn(match.group(4))))
        else:
            group.targets.update(members_of(name))
    return groups

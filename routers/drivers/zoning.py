"""What the FCIP drivers (Brocade FOS, Cisco MDS) share: what adding a link needs, and zoning on a live fabric.

The rule: never replace or disable the fabric's configuration
----------------------------------------------------------------
A fabric has exactly one configuration in effect (FOS: the enabled cfg; MDS: the active zoneset of
a VSAN), and it holds every production zone of every other host. flexzone therefore adds its own
zones to *that* configuration and re-enables *that* one, takes them out again on remove, and never
edits, disables or replaces anything it did not create. Only a fabric with no configuration in
effect gets one of flexzone's own, with a warning in the journal. This is how OpenStack Cinder's FC
zone manager drives both platforms (its Brocade and Cisco zone drivers).

Re-enabling a configuration puts its whole *defined* content in force. If someone else has staged
changes in it (edited and saved, to be enabled in their own maintenance window), re-enabling would
enforce their half-finished work. So before re-enabling, the defined configuration is compared with
the one in effect, flexzone's own zones of the link aside: any other difference refuses the
operation and names it.

Zone shape: one zone per initiator-target pair
----------------------------------------------
A link zones each of the requesting site's initiator ports with the device's target port, one zone
per pair, named ``<link prefix>_<initiator>_<target>`` (16 hex digits each, no colons). Why pairs:
it is the single-initiator/single-target practice both vendors recommend and Cinder's default
(initiators never see each other, so no RSCN noise between hosts); it is the same on both platforms
(FOS peer zones and MDS smart zoning would be two different mechanisms, and smart zoning is a
VSAN-wide setting flexzone must not change); and every zone's name says exactly what it grants, so
the switch itself tells which link a zone belongs to and whether its members are right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from routers.drivers.base import CommandRejected, LinkSpec, RouterLink

# The configuration in effect is read from the switch at run time; a dry run names it like this.
EFFECTIVE = "<effective cfg>"
ACTIVE_ZONESET = "<active zoneset>"


def check_fcip_add(spec: LinkSpec) -> None:
    """What adding any FCIP link needs once its local address is there (ValueError before anything is
    sent): two different ends, the device's target port and the initiators zoned with it."""
    if spec.local_ip == spec.remote_ip:
        raise ValueError("remote_ip: must differ from local_ip")
    if spec.wwn is None:
        raise ValueError("wwn: required on FCIP platforms (the device's target port is zoned)")
    if not spec.initiators:
        raise ValueError("initiators: an FCIP link zones the requesting site's initiators with the device; "
                         "none given")


def hex16(wwn: str) -> str:
    return wwn.replace(":", "")


def wwn_of(hex_digits: str) -> str:
    return ":".join(hex_digits[i : i + 2] for i in range(0, 16, 2))


def pair_zones(prefix: str, spec: LinkSpec) -> dict[str, list[str]]:
    """Zone name -> [initiator, target] for every pair the link zones (LinkSpec.all_pairs), in the
    spec's order."""
    assert spec.wwn is not None
    return {f"{prefix}_{hex16(initiator)}_{hex16(target)}": [initiator, target]
            for initiator, target in spec.all_pairs()}


@dataclass
class FabricZoning:
    """One fabric's (FOS) or VSAN's (MDS) zoning as read from the switch, aliases resolved.

    `configs` are the defined configurations (FOS cfgs, MDS full zonesets) with their zone names;
    `zones` the defined zones with their members; `in_effect` the name of the configuration in
    effect (None: none) and `active` its zones with their members as enforced.
    """

    configs: dict[str, list[str]] = field(default_factory=dict)
    zones: dict[str, list[str]] = field(default_factory=dict)
    in_effect: str | None = None
    active: dict[str, list[str]] = field(default_factory=dict)

    def names(self) -> set[str]:
        return set(self.zones) | set(self.active)

    def staged_changes(self, config: str, ours: Iterable[str]) -> list[str]:
        """How the defined `config` differs from the one in effect, zones in `ours` aside."""
        ours = set(ours)
        defined = set(self.configs.get(config, [])) - ours
        active = set(self.active) - ours
        changes = [f"zone {name} is defined in {config} but not in effect" for name in sorted(defined - active)]
        changes += [f"zone {name} is in effect but no longer in the defined {config}"
                    for name in sorted(active - defined)]
        changes += [
            f"zone {name} has other members defined than in effect"
            for name in sorted(defined & active)
            if sorted(self.zones.get(name, [])) != sorted(self.active[name])
        ]
        return changes

    def cfgs_holding(self, names: Iterable[str]) -> list[str]:
        names = set(names)
        return [config for config, members in self.configs.items() if names & set(members)]


def link_zones(fabric: FabricZoning, pattern: re.Pattern[str], spec: LinkSpec) -> set[str]:
    """flexzone's zones of the link (zone, port) on the switch, defined or in effect."""
    return {
        name for name in fabric.names()
        if (match := pattern.fullmatch(name)) and (int(match.group(1)), int(match.group(2))) == (spec.zone, spec.port)
    }


def port_zones(fabric: FabricZoning, pattern: re.Pattern[str], port: int, *, in_force: bool = False) -> set[str]:
    """flexzone's zones of every link on `port`, defined or in effect (`in_force`: in effect only)."""
    names = set(fabric.active) if in_force else fabric.names()
    return {name for name in names if (match := pattern.fullmatch(name)) and int(match.group(2)) == port}


def touches(fabric: FabricZoning, config: str | None, ours: Iterable[str]) -> bool:
    """Whether the configuration in force lists or enforces any of `ours` (so taking them out means
    re-enabling it)."""
    ours = set(ours)
    return config is not None and bool(ours & set(fabric.configs.get(config, [])) or ours & set(fabric.active))


def describe_changes(changes: list[str]) -> str:
    """The first few differences found, and how many more."""
    return "; ".join(changes[:3]) + (f"; and {len(changes) - 3} more" if len(changes) > 3 else "")


def refuse_staged_changes(fabric: FabricZoning, config: str, ours: Iterable[str]) -> str | None:
    """The refusal message when re-enabling `config` would also enforce someone else's changes."""
    changes = fabric.staged_changes(config, ours)
    if not changes:
        return None
    shown = describe_changes(changes)
    return (f"the defined configuration {config} differs from the one in effect beyond flexzone's zones ({shown}): "
            f"someone has staged zoning changes, and re-enabling {config} would put them in force; flexzone leaves "
            "that to whoever staged them")


def refuse_foreign_zones(fabric: FabricZoning, config: str, pattern: re.Pattern[str]) -> str | None:
    """The refusal message when flexzone's own-named `config` already lists zones it did not create.

    flexzone's configuration is only ever put in force on a fabric with nothing in force; if someone
    has defined one by that name with zones of their own, enabling it would enforce their work.
    """
    foreign = sorted(name for name in fabric.configs.get(config, []) if not pattern.fullmatch(name))
    if not foreign:
        return None
    return (f"{config} is already defined with zones flexzone did not create ({', '.join(foreign)}); putting it in "
            "force would enforce them, so flexzone leaves it to whoever defined it")


@dataclass
class LinkZoning:
    """What one link needs of a fabric's zoning: the configuration to put its zones in, its pair
    zones (name -> members), and its zones for initiators no longer chosen."""

    config: str
    wanted: dict[str, list[str]]
    stale: list[str]


def plan_link_zoning(fabric: FabricZoning, spec: LinkSpec, prefix: str, pattern: re.Pattern[str], own_config: str,
                     open_refusal: tuple[str, str] | None) -> LinkZoning:
    """Decide, before anything is sent, where the link's zones go, or refuse (CommandRejected).

    The configuration in effect, unless it holds someone's staged changes; only with nothing in force
    flexzone's own `own_config`, and not when the default zone lets every device reach every other
    (`open_refusal`: the driver's message and the switch's words for that) or when someone else has
    defined `own_config` with zones of their own.
    """
    wanted = pair_zones(prefix, spec)
    ours = link_zones(fabric, pattern, spec)
    config = fabric.in_effect
    if config is None:
        if open_refusal is not None:
            raise CommandRejected(open_refusal[0], router_message=open_refusal[1])
        config = own_config
        refusal = refuse_foreign_zones(fabric, config, pattern)
    else:
        refusal = refuse_staged_changes(fabric, config, ours | set(wanted))
    if refusal:
        raise CommandRejected(refusal, router_message="")
    return LinkZoning(config, wanted, sorted(ours - set(wanted)))


def zone_members_differ(fabric: FabricZoning, name: str, members: list[str]) -> bool:
    return sorted(fabric.zones.get(name, [])) != sorted(members)


def fabric_links(fabric: FabricZoning, pattern: re.Pattern[str], remote_of: dict[int, str | None],
                 carrying: dict[int, bool], oper: dict[int, str] | None = None) -> list[RouterLink]:
    """A RouterLink per (zone, port) group of flexzone zones whose port reaches a remote gateway.

    Up when every zone of the group is in effect, defined and enforced with exactly the members its
    name says (an old-style zone: the members it is defined with), and the port's tunnel or
    interface is configured to carry it (`carrying`); otherwise down. Members are read from the pair
    names; `oper` is the port's operational status where the switch reports one.
    """
    groups: dict[tuple[int, int], list[str]] = {}
    for name in sorted(fabric.names()):
        if match := pattern.fullmatch(name):
            groups.setdefault((int(match.group(1)), int(match.group(2))), []).append(name)
    links = []
    for (zone, port), names in groups.items():
        remote = remote_of.get(port)
        if not remote:
            continue
        initiators: set[str] = set()
        targets: set[str] = set()
        pairs: set[tuple[str, str]] = set()
        enforced = True
        for name in names:
            match = pattern.fullmatch(name)
            assert match is not None
            if match.group(3):
                expected = [wwn_of(match.group(3)), wwn_of(match.group(4))]
                initiators.add(expected[0])
                targets.add(expected[1])
                pairs.add((expected[0], expected[1]))
            else:
                expected = fabric.zones.get(name) or fabric.active.get(name) or []
                targets.update(expected)
            defined_right = name not in fabric.zones or not zone_members_differ(fabric, name, expected)
            enforced &= name in fabric.active and sorted(fabric.active[name]) == sorted(expected) and defined_right
        state = "up" if enforced and carrying.get(port, False) else "down"
        links.append(RouterLink(port, zone, remote, state, tuple(sorted(initiators)), tuple(sorted(targets)),
                                (oper or {}).get(port, ""), tuple(sorted(pairs))))
    return sorted(links, key=lambda link: link.key)

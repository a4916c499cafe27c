"""What the MDS driver (cisco_mds.py) writes, and which FCIP objects are flexzone's to change.

Written: the lines that configure a link's FCIP profile and interface, and the lines that define
zones. ``foreign_fcip`` says when an fcip interface or profile is someone else's. What the switch
prints is read in cisco_mds_show.py.
"""

from __future__ import annotations

from routers.drivers.base import LinkSpec
from routers.drivers.cisco_mds_show import FcipConfig
from routers.drivers.zoning import FabricZoning

DESCRIPTION = "flexzone"


def profile_users(config: FcipConfig, profile: int) -> list[int]:
    """The fcip interfaces that use FCIP profile `profile`."""
    return sorted(number for number, interface in config.interfaces.items() if interface.get("profile") == str(profile))


def foreign_fcip(config: FcipConfig, port: int) -> str | None:
    """Why the port's fcip interface or profile is not flexzone's to configure (None: it is, or is free).

    The interface is flexzone's only with flexzone's description; profile N only when flexzone's own
    ``fcip N`` is its one user: a profile any other interface uses, or none, is someone else's.
    """
    interface = config.interfaces.get(port)
    if interface is not None and interface.get("description") != DESCRIPTION:
        return (f"interface fcip{port} was not created by flexzone (description "
                f"{interface.get('description', '')!r}, not {DESCRIPTION!r}); flexzone leaves it alone")
    if port not in config.profiles:
        return None
    others = [number for number in profile_users(config, port) if number != port]
    if others:
        used_by = ", ".join(f"fcip{number}" for number in others)
        return f"fcip profile {port} is used by interface {used_by}; flexzone leaves it alone"
    if interface is None or interface.get("profile") != str(port):
        return (f"fcip profile {port} exists and no flexzone interface fcip{port} uses it: it is not flexzone's, "
                "flexzone leaves it alone")
    return None


def interface_lines(spec: LinkSpec) -> list[str]:
    """The lines that turn FCIP on and configure a link's FCIP profile and interface (described flexzone)."""
    return [
        "feature fcip",
        f"fcip profile {spec.port}",
        f"ip address {spec.local_ip}",
        f"interface fcip {spec.port}",
        f"switchport description {DESCRIPTION}",
        f"use-profile {spec.port}",
        f"peer-info ipaddr {spec.remote_ip}",
        "no shutdown",
    ]


def zone_lines(zones: dict[str, list[str]], vsan: int) -> list[str]:
    """Each zone with its ``member pwwn`` lines, in the VSAN."""
    lines = []
    for name, members in zones.items():
        lines.append(f"zone name {name} vsan {vsan}")
        lines += [f"member pwwn {member}" for member in members]
    return lines


def zone_edit_lines(fabric: FabricZoning, wanted: dict[str, list[str]], stale: list[str], zoneset: str,
                    vsan: int) -> list[str]:
    """The lines that define the `wanted` zones with exactly their members, list them in `zoneset`, and
    take the `stale` ones out of it and away (activation not included)."""
    lines = zone_lines({name: members for name, members in wanted.items() if name not in fabric.zones}, vsan)
    for name, members in wanted.items():
        have = fabric.zones.get(name)
        if have is None:
            continue
        missing, extra = [m for m in members if m not in have], [m for m in have if m not in members]
        if missing or extra:
            lines += [f"zone name {name} vsan {vsan}", *(f"member pwwn {m}" for m in missing),
                      *(f"no member pwwn {m}" for m in extra)]
    in_zoneset = fabric.configs.get(zoneset, [])
    joining = [name for name in wanted if name not in in_zoneset]
    leaving = [name for name in stale if name in in_zoneset]
    if joining or leaving:
        lines += [f"zoneset name {zoneset} vsan {vsan}", *(f"member {name}" for name in joining),
                  *(f"no member {name}" for name in leaving)]
    return lines + [f"no zone name {name} vsan {vsan}" for name in stale if name in fabric.zones]

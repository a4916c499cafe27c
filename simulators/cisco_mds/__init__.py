"""Cisco MDS 9000 NX-OS simulator: FCIP (profiles and fcip interfaces), VSAN zoning with fcaliases, the
device-alias database and logged-in devices, over SSH and telnet.

Formats follow public NX-OS captures: ``HOST#`` and the config-mode prompts, ``terminal length 0``/
``terminal width 511``, ``% Invalid command at '^' marker.`` with its caret line, the real ``show
interface brief`` FC header, the zone, zoneset (full, brief, active with ``* fcid`` lines), fcalias and
device-alias views, ``show zone status`` and an MDS 9148S running-config. The fcip section of ``show
interface brief``, ``show fcip profile``, ``show interface fcipN`` and ``show running-config fcip``
are documented but uncaptured formats ([R]). Keywords may be abbreviated to any unambiguous prefix,
as on the device (``conf t``, ``sh int br``).

The package by job: personality.py (login, prompts, exec mode, dispatch, links), parser.py (how a line
is read: keywords, the caret, pipes), config.py (configuration mode and its sub-modes), show.py (the
shows), switch.py (what those two need of the switch, a Protocol), zoning.py (zoning state, modes and
the enhanced-mode lock, and what the zoning commands do), zoning_show.py (the zoning shows),
device_alias.py (the device-alias database), fabric.py (logged-in devices, their FCIDs, the seeded
production zoning and fabrics) and running_config.py (``show running-config``/``startup-config``). With
``terminal dont-ask`` the session's confirmation questions are not asked.

State layout (``SimState.running``)::

    features: ["fcip"]
    profiles: {"5": {"ip": "10.1.1.1" | None}}
    interfaces: {"5": {"profile": "5"|None, "peer": ip|None, "shutdown": bool, "description": str}}
    vsans: {"1": {"name": "VSAN0001"}, "10": {"name": "backup", "interfaces": ["fc1/7"]}}
    zones: {"1": {"fz_z7_fcip5": ["10:00:...", "device-alias hostA", "fcalias arrayA"]}}   # per VSAN
    zonesets: {"1": {"fz_zoneset": ["fz_z7_fcip5"]}}   # per VSAN
    fcaliases: {"1": {"arrayA": ["50:00:...", "device-alias hostB"]}}   # per VSAN
    active: {"1": {"name": "fz_zoneset", "zones": {"fz_z7_fcip5": ["10:00:..."]}}}   # fcaliases expanded
    zone_modes: {"1": "enhanced"}                      # absent: basic
    default_zones: {"1": "permit"}                     # absent: deny
    zoneset_distribute: {"1": "full"}                  # absent: active only
    device_aliases: {"hostA": "10:00:..."}             # the committed device-alias database
    logged_in: ["10:00:...", ...]                      # pwwns logged in to VSAN 1, in login order

``copy running-config startup-config`` copies running to ``saved`` (the startup configuration).
"""

from simulators.cisco_mds.personality import MdsPersonality

__all__ = ["MdsPersonality"]

"""Cisco MDS 9000 NX-OS simulator: FCIP (profiles and fcip interfaces) and VSAN zoning, over SSH and telnet.

Formats follow public NX-OS captures: ``HOST#`` and the config-mode prompts, ``terminal length 0``/
``terminal width 511``, ``% Invalid command at '^' marker.`` with its caret line, the real ``show
interface brief`` FC header, ``show zoneset [active] vsan N`` layout and the ``interface fcipN``
running-config block. The fcip section of ``show interface brief``, ``show fcip profile`` and ``show
interface fcip N`` are documented but uncaptured formats ([R]). Keywords may be abbreviated to any
unambiguous prefix, as on the device (``conf t``, ``sh int br``).

The package by job: personality.py (login, prompts, exec mode, dispatch, links), parser.py (how a
line is read: keywords, the caret, pipes), config.py (configuration mode and its sub-modes), show.py
(the shows and the running-config), zoning.py (zoning state, modes and the enhanced-mode lock, and
what the zoning commands do) and zoning_show.py (the zoning shows). With ``terminal dont-ask`` the
session's confirmation questions are not asked.

State layout (``SimState.running``)::

    features: ["fcip"]
    profiles: {"5": {"ip": "10.1.1.1" | None}}
    interfaces: {"5": {"profile": "5"|None, "peer": ip|None, "shutdown": bool, "description": str}}
    vsans: {"1": {"name": "VSAN0001"}}
    zones: {"1": {"fz_z7_fcip5": ["10:00:...", "device-alias hostA"]}}   # per VSAN, the full zone database
    zonesets: {"1": {"fz_zoneset": ["fz_z7_fcip5"]}}   # per VSAN
    active: {"1": {"name": "fz_zoneset", "zones": {"fz_z7_fcip5": ["10:00:..."]}}}
    zone_modes: {"1": "enhanced"}                      # absent: basic
    default_zones: {"1": "permit"}                     # absent: deny

``copy running-config startup-config`` copies running to ``saved`` (the startup configuration).
"""

from routers.sim.cisco_mds.personality import MdsPersonality

__all__ = ["MdsPersonality"]

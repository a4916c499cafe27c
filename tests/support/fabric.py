"""flexzone's link and zones on a simulated FCIP switch (Brocade FOS, Cisco MDS)."""

from __future__ import annotations

from routers.drivers.base import LinkSpec
from simulators.admin import zones_in_force

TARGET = "50:00:09:72:08:1a:f1:04"
INITIATORS = ("10:00:00:10:9b:5e:b0:01", "10:00:00:10:9b:5e:b0:02")
PORTS = {"brocade_fos": 24, "cisco_mds": 5}


def spec_for(platform: str, initiators=INITIATORS) -> LinkSpec:
    return LinkSpec(PORTS[platform], 7, "198.18.1.1", "198.18.0.1", TARGET, tuple(initiators))


def flexzone_zones(sim, platform) -> dict[str, list[str]]:
    """flexzone's zones in force on the switch (named fz_...), with their members."""
    return {name: members for name, members in zones_in_force(sim, platform).items() if name.startswith("fz_")}

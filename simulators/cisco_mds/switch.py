"""What the configuration mode (config.py) and the shows (show.py) read and change of one switch.

``MdsPersonality`` is that switch, and it builds both of them; describing it here as a Protocol keeps
the imports one way: the personality imports config and show, they import only this.
"""

from __future__ import annotations

from typing import Any, Protocol

from simulators.cisco_mds.device_alias import DeviceAliases
from simulators.cisco_mds.zoning import MdsZoning
from simulators.personality import SimState


class Switch(Protocol):
    """One MDS switch as its configuration commands and shows see it."""

    hostname: str
    state: SimState  # running and the startup configuration (``saved``)
    zoning: MdsZoning
    device_aliases: DeviceAliases
    changed_at: float  # when the running configuration last changed (time.time())
    saved_at: float  # when it was last copied to the startup configuration

    @property
    def running(self) -> dict[str, Any]: ...

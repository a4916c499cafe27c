"""The Cisco MDS device-alias database: names for pwwns, shared by the whole switch (not per VSAN).

Committed state (``SimState.running``, persisted)::

    device_aliases: {"hostA": "10:00:00:90:fa:c7:43:10"}

``device-alias database`` (config) enters ``config-device-alias-db``, where ``device-alias name X pwwn
W`` and ``no device-alias name X`` change a pending copy (one per switch, in memory, as with fabric
distribution on); ``device-alias commit`` (config) makes it the database and ``device-alias abort``
drops it. Zones, fcaliases and the shows print a member's alias from the committed database.

``There are no pending changes`` is a device text (Cisco's mdssdk and CoprHD test for it); the other
refusals are reconstructed ([R]).
"""

from __future__ import annotations

from typing import Any

from simulators.cisco_mds.zoning import Output
from simulators.personality import SimState

NO_PENDING = "There are no pending changes\n"


class DeviceAliases:
    """The switch's device-alias database and its pending copy."""

    def __init__(self, state: SimState) -> None:
        self.state = state
        state.running.setdefault("device_aliases", {})
        self.pending: dict[str, str] | None = None

    @property
    def committed(self) -> dict[str, str]:
        aliases: dict[str, str] = self.state.running["device_aliases"]
        return aliases

    def _edit(self) -> dict[str, str]:
        if self.pending is None:
            self.pending = dict(self.committed)
        return self.pending

    def add(self, out: Output, name: str, wwn: str) -> None:
        """``device-alias name X pwwn W`` in the device-alias database mode."""
        aliases = self.pending if self.pending is not None else self.committed
        if name in aliases:
            out.write("Device Alias already present\n")  # [R]
        elif wwn in aliases.values():
            out.write("Another device-alias already present with the same pwwn\n")  # [R]
        else:
            self._edit()[name] = wwn
            out.changed = True

    def remove(self, out: Output, name: str) -> None:
        """``no device-alias name X`` in the device-alias database mode."""
        aliases = self.pending if self.pending is not None else self.committed
        if name not in aliases:
            out.write("Device Alias not present\n")  # [R]
            return
        del self._edit()[name]
        out.changed = True

    def commit(self, out: Output) -> None:
        """``device-alias commit``: the pending copy becomes the database (silent, as on the device)."""
        if self.pending is None:
            out.write(NO_PENDING)
            return
        self.state.running["device_aliases"] = self.pending
        self.pending = None
        out.changed = True

    def abort(self, out: Output) -> None:
        """``device-alias abort``: the pending copy is dropped."""
        if self.pending is None:
            out.write(NO_PENDING)
            return
        self.pending = None
        out.changed = True


def alias_of_wwn(config: dict[str, Any]) -> dict[str, str]:
    """pwwn -> device-alias name, from a configuration's committed database."""
    return {wwn: name for name, wwn in config.get("device_aliases", {}).items()}


def show_database(config: dict[str, Any]) -> str:
    """``show device-alias database``: one line per alias, a blank line and the total (no period)."""
    aliases = config.get("device_aliases", {})
    lines = [f"device-alias name {name} pwwn {wwn}\n" for name, wwn in aliases.items()]
    if lines:
        lines.append("\n")
    return "".join(lines) + f"Total number of entries = {len(aliases)}\n"  # [R] the empty database's text

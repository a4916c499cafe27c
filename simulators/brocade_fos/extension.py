"""The extension configuration of a Brocade 7840: IP interfaces on its GE ports, static IP routes, FCIP
tunnels on its VE ports and their circuits.

State layout (``SimState.running``)::

    ipif:    [{"port": "ge2.dp0", "ip": "10.1.1.1", "pfx": 24, "mtu": "AUTO"|int, "vlan": int|None}]
    iproute: [{"port": ..., "ip": "10.2.0.0", "pfx": 24, "gw": "10.1.1.254"}]
    tunnels: {"24": {"description": str, "compression": str, "circuits": {"0": {...}}}}

The switch writes extension configuration to flash as it applies it, so every change is mirrored into
``saved`` at once.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from simulators.personality import SimState

FC_PORTS = range(0, 24)
VE_PORTS = range(24, 44)
GE_PORTS = range(0, 18)
DOMAIN = 1
SWITCH_WWN = "10:00:c4:f5:7c:3a:41:00"
KEYS = ("ipif", "iproute", "tunnels")


class ExtensionConfig:
    """The ipif, iproute and tunnel tables of one switch, and the questions asked of them."""

    def __init__(self, state: SimState) -> None:
        self.state = state
        for key in KEYS:
            state.running.setdefault(key, [] if key != "tunnels" else {})
        state.running.setdefault("uptime_base", 0)
        self.mirror()

    @property
    def ipif(self) -> list[dict[str, Any]]:
        return self.state.running["ipif"]

    @property
    def iproute(self) -> list[dict[str, Any]]:
        return self.state.running["iproute"]

    @property
    def tunnels(self) -> dict[str, dict[str, Any]]:
        return self.state.running["tunnels"]

    def mirror(self) -> None:
        """Copy the extension configuration to flash (``saved``), as the switch does on every change."""
        for key in KEYS:
            self.state.saved[key] = copy.deepcopy(self.state.running[key])

    def circuits(self) -> list[dict[str, Any]]:
        return [circuit for tunnel in self.tunnels.values() for circuit in tunnel["circuits"].values()]

    def address_in_use(self, address: str) -> bool:
        """Whether a circuit uses `address` as its local IP (the ipif cannot go)."""
        return any(circuit.get("local_ip") == address for circuit in self.circuits())

    def pair_in_use(self, local_ip: str, remote_ip: str) -> str:
        """The error text when a circuit already joins these two addresses, else ""."""
        for ve, tunnel in self.tunnels.items():
            for cid, circuit in tunnel["circuits"].items():
                if circuit.get("local_ip") == local_ip and circuit.get("remote_ip") == remote_ip:
                    return f"Local IP {local_ip} and remote IP {remote_ip} are already used by circuit {ve}.{cid}."
        return ""

    def ge_in_use(self, ge: int) -> bool:
        return any(re.fullmatch(rf"ge{ge}(\.dp[01])?", entry["port"]) for entry in self.ipif)

    def circuit_ge(self, circuit: dict[str, Any]) -> str:
        """The GE port a circuit leaves by (its local IP's interface), or "-"."""
        entry = next((e for e in self.ipif if e["ip"] == circuit.get("local_ip")), None)
        return entry["port"].split(".")[0] if entry else "-"

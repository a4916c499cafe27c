"""Another storage admin on the same switch: a separate SSH session with stock netmiko.

It sets up the production zoning every real fabric already carries, holds the fabric's zoning (an
open FOS transaction, an MDS enhanced-mode lock) without finishing, stages changes, and reads what is
in force from the simulator's state. The driver and operations tests use it, and so does the soak
(bench/soak.py) for its other admin's moves. It logs in with the simulator's own account unless
given another one the simulator has (`accounts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from netmiko import ConnectHandler

from simulators.cisco_mds.zoning import STATE_KEYS as MDS_ZONING_STATE

PROD_ZONE = "prod_oradb1_vmax"
PROD_MEMBERS = ["10:00:00:90:fa:c7:43:10", "50:00:09:73:f0:2c:51:04"]
PENDING_MEMBERS = ["10:00:00:90:fa:c7:43:99", "50:00:09:73:f0:2c:51:99"]


class Simulator(Protocol):
    """A running simulator, as FabricAdmin reaches it: its bound addresses and its own account."""

    addresses: dict[str, tuple[str, int]]
    username: str
    password: str


@dataclass
class FabricAdmin:
    """A stock netmiko session to a simulated FOS or MDS switch, as an administrator would open it."""

    sim: Simulator
    platform: str
    username: str | None = None  # an account of its own (SimRouter `accounts`); default: the simulator's one
    password: str | None = None

    def __post_init__(self) -> None:
        host, port = self.sim.addresses["ssh"]
        device_type = "brocade_fos" if self.platform == "brocade_fos" else "cisco_nxos"
        self.conn = ConnectHandler(device_type=device_type, host=host, port=port,
                                   username=self.username or self.sim.username,
                                   password=self.password or self.sim.password, allow_agent=False, use_keys=False,
                                   ssh_config_file=None, conn_timeout=10)
        if self.platform == "cisco_mds":
            self.conn.send_command("terminal dont-ask")

    def close(self) -> None:
        self.conn.disconnect()

    # --- FOS ---------------------------------------------------------------------------------
    def fos(self, command: str) -> str:
        return str(self.conn.send_command(command, expect_string=r"(?:\[no\]\s*$)|(?:>\s*$)"))

    def fos_confirmed(self, command: str) -> str:
        output = self.fos(command)
        if "[no]" in output:
            output += self.fos("y")
        return output

    # --- what an admin does --------------------------------------------------------------------
    def seed_production(self) -> None:
        """The zoning every other host depends on: PROD in effect (FOS) / active in VSAN 1 (MDS)."""
        if self.platform == "brocade_fos":
            assert self.fos(f'zonecreate "{PROD_ZONE}", "{"; ".join(PROD_MEMBERS)}"') == ""
            assert self.fos(f'cfgcreate "PROD", "{PROD_ZONE}"') == ""
            assert "is in effect" in self.fos_confirmed('cfgenable "PROD"')
        else:
            self.conn.send_config_set([f"zone name {PROD_ZONE} vsan 1", *(f"member pwwn {m}" for m in PROD_MEMBERS),
                                       "zoneset name PROD vsan 1", f"member {PROD_ZONE}",
                                       "zoneset activate name PROD vsan 1"])
        assert production_in_force(self.sim, self.platform)

    def enhanced_mode(self) -> None:
        assert self.platform == "cisco_mds"
        output = self.conn.send_config_set(["zone mode enhanced vsan 1"])
        assert "Set zoning mode command initiated" in output

    def start_edit(self) -> None:
        """Begin a zoning edit and leave it open (FOS transaction / MDS enhanced-mode session lock)."""
        if self.platform == "brocade_fos":
            assert self.fos(f'zonecreate "adm_pending", "{"; ".join(PENDING_MEMBERS)}"') == ""
        else:
            output = self.conn.send_config_set(["zone name adm_pending vsan 1",
                                                *(f"member pwwn {m}" for m in PENDING_MEMBERS)])
            assert "Enhanced zone session has been created" in output

    def abandon_edit(self) -> None:
        """Drop the open edit (FOS cfgtransabort / MDS no zone commit), releasing the fabric."""
        if self.platform == "brocade_fos":
            assert self.fos("cfgtransabort") == ""
        else:
            self.conn.send_config_set(["no zone commit vsan 1"])

    def stage_change(self) -> None:
        """Edit the defined PROD (FOS: saved, not enabled; MDS basic mode: full zoneset, not activated)."""
        if self.platform == "brocade_fos":
            assert self.fos(f'zonecreate "adm_staged", "{"; ".join(PENDING_MEMBERS)}"') == ""
            assert self.fos('cfgadd "PROD", "adm_staged"') == ""
            assert "Updating flash" in self.fos_confirmed("cfgsave")
        else:
            self.conn.send_config_set(["zone name adm_staged vsan 1", *(f"member pwwn {m}" for m in PENDING_MEMBERS),
                                       "zoneset name PROD vsan 1", "member adm_staged"])


def production_in_force(sim, platform: str) -> bool:
    """PROD is the configuration in effect and enforces its production zone with its members."""
    running = sim.state().running
    if platform == "brocade_fos":
        effective = running["zoning"]["effective"] or {}
        return effective.get("cfg") == "PROD" and effective.get("zones", {}).get(PROD_ZONE) == PROD_MEMBERS
    active = running["active"].get("1") or {}
    return active.get("name") == "PROD" and active.get("zones", {}).get(PROD_ZONE) == PROD_MEMBERS


def zones_in_force(sim, platform: str) -> dict[str, list[str]]:
    """Every zone the switch enforces, by name."""
    running = sim.state().running
    if platform == "brocade_fos":
        return dict((running["zoning"]["effective"] or {}).get("zones", {}))
    return dict((running["active"].get("1") or {}).get("zones", {}))


def configuration_in_force(sim, platform: str) -> str | None:
    running = sim.state().running
    if platform == "brocade_fos":
        return (running["zoning"]["effective"] or {}).get("cfg")
    return (running["active"].get("1") or {}).get("name")


def foreign_zoning(sim) -> dict[str, Any]:
    """The switch's zoning (defined and in force; on MDS also each VSAN's zoning mode, default zone and
    distribution) with every object flexzone created (fz_...) taken out."""
    running = sim.state().running
    if sim.platform == "brocade_fos":
        return _not_flexzone_table(running["zoning"])
    return _not_flexzone_table({key: running.get(key, {}) for key in MDS_ZONING_STATE})


def _not_flexzone_table(table: dict[str, Any]) -> dict[str, Any]:
    kept = {key: _not_flexzones(item) for key, item in table.items() if not str(key).startswith("fz_")}
    return {key: item for key, item in kept.items() if item != {}}


def _not_flexzones(value: object) -> object:
    """`value` without flexzone's objects, nor empty tables (the MDS simulator makes a VSAN's empty fcalias
    table on its first basic-mode edit, which no switch would show)."""
    if isinstance(value, dict):
        return _not_flexzone_table(value)
    if isinstance(value, list):
        return [_not_flexzones(item) for item in value if not str(item).startswith("fz_")]
    return value

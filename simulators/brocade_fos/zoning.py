"""Brocade FOS zoning state: the fabric's defined and effective configurations, the default zone access and
the one zoning transaction a switch allows at a time.

Committed state (``SimState.running["zoning"]``, persisted; ``saved["zoning"]`` is the flash copy)::

    {"defined": {"cfgs": {}, "zones": {}, "aliases": {}},         # fabric-wide defined configuration
     "effective": {"cfg": NAME, "zones": {zone: [members resolved]}} | None,
     "default_access": "No Access" | "All Access"}                # what applies with no effective cfg

Transactions (in memory only, as on the switch): the first zoning edit of a session opens the
transaction, owned by that session, with a token and a working copy of the committed defined
configuration; its later edits change the copy. The owner sees the copy in ``cfgshow``, everybody
else the committed configuration. ``cfgsave``, ``cfgenable`` and ``cfgdisable`` commit it,
``cfgtransabort`` drops it, and so does the end of its session [R]. While another session's
transaction is open, or the ``zoning_locked`` fault is armed (a transaction of an administrator
elsewhere, token 0x5eed), every zoning change is refused and nothing changes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simulators.brocade_fos.zoning_show import resolve
from simulators.flexzones import ZoneGroup, flexzone_groups
from simulators.personality import Session, SimState

NO_ACCESS, ALL_ACCESS = "No Access", "All Access"
FIRST_TOKEN = 0x3109
PHANTOM_TOKEN = 0x5EED  # the transaction of the administrator the zoning_locked fault stands for

PROD_ZONES = {
    "prod_oradb1_vmax": ["10:00:00:90:fa:c7:43:10", "50:00:09:73:f0:2c:51:04"],
    "prod_backup1_tape": ["10:00:00:90:fa:c7:43:22", "50:01:04:f0:00:a1:b2:c3"],
}


def empty_defined() -> dict[str, Any]:
    return {"cfgs": {}, "zones": {}, "aliases": {}}


def empty_zoning() -> dict[str, Any]:
    return {"defined": empty_defined(), "effective": None, "default_access": NO_ACCESS}


@dataclass
class Transaction:
    """The switch's open zoning transaction: its owner, its token, its working defined configuration."""

    session: int
    token: int
    defined: dict[str, Any]


class FabricZoning:
    """One switch's zoning: the committed configuration, the open transaction and who may change what."""

    def __init__(self, state: SimState, locked_elsewhere: Callable[[], bool]) -> None:
        self.state = state
        self.locked_elsewhere = locked_elsewhere
        zoning = state.running.setdefault("zoning", empty_zoning())
        zoning.setdefault("default_access", NO_ACCESS)  # state files written before it existed
        if "zoning" not in state.saved:
            state.saved["zoning"] = copy.deepcopy(zoning)
        state.saved["zoning"].setdefault("default_access", NO_ACCESS)
        self.transaction: Transaction | None = None
        self._opened = 0

    @property
    def committed(self) -> dict[str, Any]:
        return self.state.running["zoning"]

    @property
    def flashed(self) -> dict[str, Any] | None:
        """The zoning in flash (the saved configuration)."""
        return self.state.saved.get("zoning")

    def owned_by(self, session: Session) -> Transaction | None:
        transaction = self.transaction
        return transaction if transaction is not None and transaction.session == session.id else None

    def defined_for(self, session: Session) -> dict[str, Any]:
        """What `session` sees as the Defined configuration: its working copy, or the committed one."""
        own = self.owned_by(session)
        return own.defined if own is not None else self.committed["defined"]

    def blocking_token(self, session: Session) -> int | None:
        """The token of the transaction that keeps `session` from changing zoning; None: nothing does."""
        if self.locked_elsewhere():
            return PHANTOM_TOKEN
        if self.transaction is not None and self.transaction.session != session.id:
            return self.transaction.token
        return None

    def keep(self, session: Session, defined: dict[str, Any]) -> None:
        """Make `defined` the session's working copy, opening its transaction if it had none."""
        own = self.owned_by(session)
        if own is not None:
            own.defined = defined
            return
        self.transaction = Transaction(session.id, FIRST_TOKEN + self._opened, defined)
        self._opened += 1

    def commit(self, session: Session) -> None:
        """The session's working copy (if any) becomes the fabric's defined configuration."""
        own = self.owned_by(session)
        if own is not None:
            self.committed["defined"] = own.defined
            self.transaction = None

    def enable(self, session: Session, cfg: str | None) -> None:
        """Commit the session's copy, put `cfg` in effect (None: disable zoning) and write it all to flash."""
        self.commit(session)
        defined = self.committed["defined"]
        self.committed["effective"] = None if cfg is None else {"cfg": cfg, "zones": resolve(defined, cfg)}
        self.flash()

    def set_default_access(self, mode: str) -> None:
        # Committed and written to flash at once; an open working copy of the defined configuration
        # is not part of it.
        self.committed["default_access"] = mode
        self.state.saved["zoning"]["default_access"] = mode

    def flash(self) -> None:
        """Write the committed zoning to flash (the saved configuration)."""
        self.state.saved["zoning"] = copy.deepcopy(self.committed)

    def session_ended(self, session: Session) -> None:
        """A session that logs out (or is cut off) leaves no transaction behind: it is aborted [R]."""
        if self.owned_by(session) is not None:
            self.transaction = None

    def flexzone_groups(self) -> dict[tuple[int, int], tuple[ZoneGroup, bool]]:
        """flexzone's zones, committed or in effect, by (zone, port), each with whether all are in effect."""
        defined = self.committed["defined"]["zones"]
        effective = (self.committed["effective"] or {"zones": {}})["zones"]

        def members_of(name: str) -> list[str]:
            return effective.get(name) or defined.get(name) or []

        groups = flexzone_groups([*defined, *effective], "ve", members_of)
        return {key: (group, all(name in effective for name in group.names)) for key, group in groups.items()}

    def seed_production(self) -> None:
        """Other hosts' zoning, in effect: two production zones in cfg PROD, written to flash."""
        defined = {"cfgs": {"PROD": list(PROD_ZONES)}, "zones": copy.deepcopy(PROD_ZONES), "aliases": {}}
        self.committed["defined"] = defined
        self.committed["effective"] = {"cfg": "PROD", "zones": resolve(defined, "PROD")}
        self.transaction = None
        self.flash()

    def seed_fabric(self, size: int) -> None:
        """A fabric of real size: `size` more zones of other hosts in the cfg in effect (PROD, made if
        there is none), as sites name them: each host's port and each array port an alias (every
        fourth zone names the host's WWN directly), arrays shared by many hosts, 16 hosts to an
        array port pair, two array ports per zone."""
        defined = self.committed["defined"]
        cfg = (self.committed["effective"] or {}).get("cfg", "PROD")
        zones = defined["cfgs"].setdefault(cfg, [])
        for number in range(size):
            host = f"10:00:00:90:fa:{number >> 16 & 0xff:02x}:{number >> 8 & 0xff:02x}:{number & 0xff:02x}"
            array = number // 16
            ports = [f"50:00:09:73:{array >> 8 & 0xff:02x}:{array & 0xff:02x}:a0:{side:02x}" for side in (1, 2)]
            host_member = host if number % 4 == 3 else f"h{number:05d}_hba0"
            if host_member != host:
                defined["aliases"][host_member] = [host]
            for side, port in enumerate(ports, start=1):
                defined["aliases"].setdefault(f"vmax{array:04d}_fa{side}", [port])
            name = f"z_h{number:05d}_vmax{array:04d}"
            defined["zones"][name] = [host_member, f"vmax{array:04d}_fa1", f"vmax{array:04d}_fa2"]
            zones.append(name)
        self.committed["effective"] = {"cfg": cfg, "zones": resolve(defined, cfg)}
        self.transaction = None
        self.flash()

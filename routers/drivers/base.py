"""The contract every router driver honours.

Drivers take plain dataclasses (never Django models), speak the router's CLI through netmiko, and
raise the typed exceptions below. The operations engine, the planner (dry-run command rendering)
and the lab only ever use what is declared in this module, routers.platforms (the platforms,
transports and the WWN rule) and the dispatch map in routers.drivers.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from routers.platforms import WWN_RE, Platform, Transport

VSAN_IDS = range(1, 4094)  # 4094 and 4079 are reserved on Cisco MDS
RESERVED_VSANS = frozenset({4079})


@dataclass(frozen=True)
class RouterTarget:
    """How to reach one router's management CLI."""

    platform: Platform
    host: str
    port: int
    transport: Transport
    username: str
    password: str = field(repr=False)
    name: str = ""
    connect_timeout: float = 30.0
    command_timeout: float = 30.0
    vsan: int = 1  # Cisco MDS: the VSAN whose zoning flexzone reads and edits
    host_key: str = ""  # SSH: the trusted host key ("<type> <base64>"); nothing is sent to any other


@dataclass(frozen=True)
class LinkSpec:
    """One SAN extension as a router sees it.

    `port` is the router's FC port facing the local SAN (iFCP) or the VE/FCIP interface number
    (FCIP); `zone` is the flexzone zone id; `remote_ip` is the data-path address of the gateway
    at the other end. The FCIP platforms also need `local_ip` (this router's data-path address),
    `wwn` (the device's target port), `initiators` (the requesting site's initiator ports, zoned
    with the target) and, on Cisco MDS, `vsan`; the iFCP platforms zone at the gateway and ignore
    them. An FCIP link several grants share (more devices of the zone, or hosts of the other site)
    zones further (initiator, target) `pairs` besides `wwn` with each of `initiators`.
    """

    port: int
    zone: int
    remote_ip: str
    local_ip: str | None = None
    wwn: str | None = None
    initiators: tuple[str, ...] = ()
    vsan: int = 1
    pairs: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        validate_link_spec(self)

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.port, self.zone, self.remote_ip)

    def all_pairs(self) -> list[tuple[str, str]]:
        """Every (initiator, target) pair the link zones: `wwn` with each of `initiators` in their
        order, then the further `pairs` in theirs, each once."""
        pairs = [(initiator, self.wwn) for initiator in self.initiators] if self.wwn else []
        return list(dict.fromkeys([*pairs, *self.pairs]))


def pairs_spec(port: int, zone: int, remote_ip: str, *, local_ip: str | None, pairs: set[tuple[str, str]],
               vsan: int = 1) -> LinkSpec:
    """The LinkSpec of an FCIP link zoning exactly `pairs` (initiator, target): the lowest target is
    its `wwn`, with the initiators paired with it; the other pairs are its further `pairs`."""
    first = min(target for _initiator, target in pairs)
    initiators = tuple(sorted(initiator for initiator, target in pairs if target == first))
    rest = tuple(sorted(pair for pair in pairs if pair[1] != first))
    return LinkSpec(port=port, zone=zone, remote_ip=remote_ip, local_ip=local_ip, wwn=first, initiators=initiators,
                    vsan=vsan, pairs=rest)


@dataclass(frozen=True)
class RouterLink:
    """A link as read back from a router's running configuration.

    On FCIP platforms `initiators` and `targets` are the zone members found on the switch (sorted),
    and `pairs` the (initiator, target) pairs its pair zones name (sorted); they are left out of
    equality, which is about the link and its state. `state` says whether the router is configured
    to carry the link ("up": in force, "down": part of it missing or disabled); `oper` is what the
    router reports of its carrier right now where it says (a Brocade tunnel's OpStatus: ``Up``,
    ``InProg``, ``Degrade``...), "" otherwise: a carrier waiting for the far end is still configured.
    """

    port: int
    zone: int
    remote_ip: str
    state: str = "up"
    initiators: tuple[str, ...] = field(default=(), compare=False)
    targets: tuple[str, ...] = field(default=(), compare=False)
    oper: str = field(default="", compare=False)
    pairs: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.port, self.zone, self.remote_ip)


@dataclass
class ReadStats:
    """What a driver read from its router: show commands, the bytes they returned, the seconds they took."""

    commands: list[str] = field(default_factory=list)
    bytes: int = 0
    seconds: float = 0.0

    @property
    def reads(self) -> int:
        return len(self.commands)

    def add(self, command: str, size: int, seconds: float) -> None:
        self.commands.append(command)
        self.bytes += size
        self.seconds += seconds


class RouterError(Exception):
    """Base of every driver error. `transcript` holds the masked session text when known."""

    transient: ClassVar[bool] = False

    def __init__(self, message: str, *, transcript: str = "") -> None:
        super().__init__(message)
        self.transcript = transcript


class RouterConnectError(RouterError):
    """TCP connect failed, was reset, or the session ended unexpectedly (EOF)."""

    transient = True


class RouterTimeout(RouterError):
    """The router did not answer within a bounded wait."""

    transient = True


class RouterAuthError(RouterError):
    """The router refused our credentials (or its session limit was reached)."""


class RouterHostKeyError(RouterError):
    """The router's SSH host key is not the one trusted for it (or none is trusted yet): nothing was
    sent, and retrying cannot help until an admin decides."""


class CommandRejected(RouterError):
    """The router answered, and the answer was an error. `router_message` is its text."""

    def __init__(self, message: str, *, router_message: str = "", transcript: str = "") -> None:
        super().__init__(message, transcript=transcript)
        self.router_message = router_message


class LinkExists(CommandRejected):
    """An add was rejected because the router already has that link."""


class LinkAbsent(CommandRejected):
    """A remove was rejected because the router has no such link."""


class GarbledOutput(RouterError):
    """The router's reply could not be parsed; treated as transient (re-read the state)."""

    transient = True


class LayoutError(ValueError):
    """A line of a show command's reply outside the layout its parser knows (parsers raise it; the
    driver turns it into GarbledOutput naming the command and the line)."""

    def __init__(self, line: str, why: str = "unrecognised line") -> None:
        super().__init__(f"{why} {line[:160]!r}")
        self.line = line


class ZoningBusy(RouterError):
    """Someone else holds the fabric's zoning (an open FOS zoning transaction, an MDS enhanced-mode
    session lock). Nothing was changed; wait and try again, never break another admin's lock."""

    transient = True


class ZoningChanged(RouterError):
    """The fabric's zoning changed under an edit: between flexzone's read and its first edit another
    admin enabled or saved a configuration. flexzone dropped its own edits; read again and retry."""

    transient = True


def validate_link_spec(spec: LinkSpec) -> None:
    """Refuse anything that must never reach a router command line."""
    if not isinstance(spec.port, int) or isinstance(spec.port, bool) or not 0 <= spec.port <= 4095:
        raise ValueError(f"port: must be an integer 0-4095, got {spec.port!r}")
    if not isinstance(spec.zone, int) or isinstance(spec.zone, bool) or not 1 <= spec.zone <= 4094:
        raise ValueError(f"zone: must be an integer 1-4094, got {spec.zone!r}")
    for name in ("remote_ip", "local_ip"):
        value = getattr(spec, name)
        if value is None and name == "local_ip":
            continue
        try:
            parsed = ipaddress.ip_address(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: must be an IPv4 or IPv6 address, got {value!r}") from None
        if str(parsed) != value:
            raise ValueError(f"{name}: must be written in canonical form ({parsed}), got {value!r}")
    if spec.wwn is not None and not WWN_RE.match(spec.wwn):
        raise ValueError(f"wwn: must be eight lower-case colon-separated hex bytes, got {spec.wwn!r}")
    if not isinstance(spec.initiators, tuple):
        raise ValueError(f"initiators: must be a tuple of WWNs, got {type(spec.initiators).__name__}")
    for index, initiator in enumerate(spec.initiators):
        if not isinstance(initiator, str) or not WWN_RE.match(initiator):
            raise ValueError(f"initiators[{index}]: must be eight lower-case colon-separated hex bytes, "
                             f"got {initiator!r}")
    if len(set(spec.initiators)) != len(spec.initiators):
        raise ValueError("initiators: each initiator may appear once")
    if spec.wwn is not None and spec.wwn in spec.initiators:
        raise ValueError(f"initiators: {spec.wwn} is the target itself")
    if not isinstance(spec.pairs, tuple):
        raise ValueError(f"pairs: must be a tuple of (initiator, target) pairs, got {type(spec.pairs).__name__}")
    for index, pair in enumerate(spec.pairs):
        if (not isinstance(pair, tuple) or len(pair) != 2
                or not all(isinstance(wwn, str) and WWN_RE.match(wwn) for wwn in pair)):
            raise ValueError(f"pairs[{index}]: must be an (initiator, target) pair of WWNs, got {pair!r}")
        if pair[0] == pair[1]:
            raise ValueError(f"pairs[{index}]: {pair[0]} cannot be zoned with itself")
    if spec.pairs and spec.wwn is None:
        raise ValueError("pairs: further pairs need the link's own target (wwn)")
    if (not isinstance(spec.vsan, int) or isinstance(spec.vsan, bool) or spec.vsan not in VSAN_IDS
            or spec.vsan in RESERVED_VSANS):
        raise ValueError(f"vsan: must be an integer 1-4093 other than 4079, got {spec.vsan!r}")


@dataclass
class ZoningChange:
    """A zoning change a driver made: the zoning in force before it and, once read again, after it."""

    before: dict[str, Any]
    after: dict[str, Any] | None = None


class RouterDriver:
    """One management session to one router (netmiko style: subclasses override only what differs).

    Life cycle: ``connect()`` logs in (the expensive part: up to ~12 s on an Eclipse), then any
    number of ``list_links`` / ``add_link`` / ``remove_link`` / ``save_config`` calls reuse the
    session, then ``close()``. Every wait is bounded by the target's timeouts. ``render_add`` and
    ``render_remove`` are pure: they return the exact command lines without connecting, for dry runs.

    Deadline: ``deadline`` (a ``time.monotonic()`` instant, or None) caps every wait on top of the
    target's timeouts, so that the caller's own time limit holds while a router is silent; a call
    made after it has passed raises RouterTimeout without sending anything.

    Timing: ``router_seconds`` accumulates the wall time spent waiting on the router (login
    included) since the last ``take_router_seconds()``; ``take_transcript()`` returns and clears
    the masked session text; ``take_warnings()`` returns and clears what the driver did that an
    operator should know about (e.g. it had to create a zoning configuration). The operations
    engine journals all three.
    """

    platform: ClassVar[Platform]
    # FCIP switches zone the requesting site's initiators with the target; iFCP gateways zone by
    # themselves (an iFCP zone is the gateway's own), so their links need no initiators.
    zones_initiators: ClassVar[bool] = False
    # Switches whose zoning lives in one VSAN of the router's (Cisco MDS): the plan carries the router's VSAN.
    zones_in_vsan: ClassVar[bool] = False
    # CLI sessions flexzone may hold to one router at once, over all its processes, unless the router
    # says otherwise: far below what the device accepts (McData Eclipse 4, Nishan 8, FOS and MDS 32),
    # so that people always get in.
    session_budget: ClassVar[int] = 2

    def __init__(self, target: RouterTarget) -> None:
        self.target = target
        self.deadline: float | None = None
        self._warnings: list[str] = []
        self._zoning_changes: list[ZoningChange] = []

    def warn(self, text: str) -> None:
        self._warnings.append(text)

    # --- before- and after-images of the zoning in force (FCIP switches) -------------------------
    def zoning_image(self, fabric: Any) -> dict[str, Any]:
        """The configuration in force, as the engine journals it: its name and its zones' members."""
        return {"in_effect": fabric.in_effect,
                "zones": {name: sorted(members) for name, members in sorted(fabric.active.items())}}

    def zoning_changed(self, before: Any) -> None:
        """A zoning change is about to go in force (called right before the command that commits it, so
        that one which fails part-way is journaled too); `before` is the zoning as read last before it.
        Its after-image is the next read of the zoning (the engine's verification reads it at once)."""
        self._zoning_changes.append(ZoningChange(self.zoning_image(before)))

    def zoning_read(self, fabric: Any) -> None:
        """Every read of the zoning: the after-image of the changes made before it that have none yet."""
        for change in self._zoning_changes:
            if change.after is None:
                change.after = self.zoning_image(fabric)

    @staticmethod
    def render_restore(before: dict[str, Any], after: dict[str, Any] | None) -> list[str]:
        """The commands that would put a before-image back (FCIP switches; none elsewhere): rendered
        for an admin, never sent."""
        return []

    def take_zoning_changes(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """(before, after) of each zoning change since the last call; after is None when the session
        ended before the zoning was read again."""
        changes, self._zoning_changes = self._zoning_changes, []
        return [(change.before, change.after) for change in changes]

    def take_warnings(self) -> list[str]:
        warnings, self._warnings = self._warnings, []
        return warnings

    def wait_limit(self, timeout: float) -> float:
        """`timeout` shortened to what is left before the deadline; RouterTimeout if nothing is."""
        if self.deadline is None:
            return timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RouterTimeout(f"{self.target.name or self.target.host}: the operation's time limit was reached")
        return min(timeout, left)

    # --- pure rendering (no connection) -------------------------------------------------------
    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        raise NotImplementedError

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        raise NotImplementedError

    @classmethod
    def render_notes(cls, action: str, spec: LinkSpec) -> list[str]:
        """What a reader of the rendered commands should know (placeholders, conditional lines)."""
        return []

    # --- session ---------------------------------------------------------------------------------
    def connect(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def is_alive(self) -> bool:
        raise NotImplementedError

    # --- operations ------------------------------------------------------------------------------
    def list_links(self) -> list[RouterLink]:
        raise NotImplementedError

    def add_link(self, spec: LinkSpec) -> None:
        """Raise LinkExists when the router already has it (the engine treats that as done)."""
        raise NotImplementedError

    def remove_link(self, spec: LinkSpec) -> None:
        """Raise LinkAbsent when the router has no such link (the engine treats that as done)."""
        raise NotImplementedError

    def remnants(self, spec: LinkSpec) -> bool:
        """Whether anything of the link is on the router, so a remove still has work to do. The listing
        says it on a gateway; an FCIP switch can also hold a link's zones in force without its carrier,
        and those still grant access."""
        return spec.key in {link.key for link in self.list_links()}

    def save_config(self) -> None:
        raise NotImplementedError

    # --- journal support -------------------------------------------------------------------------
    def take_transcript(self) -> str:
        raise NotImplementedError

    def take_router_seconds(self) -> float:
        raise NotImplementedError

"""The contract every router driver honours.

Drivers take plain dataclasses (never Django models), speak the router's CLI through netmiko, and
raise the typed exceptions below. The operations engine, the planner (dry-run command rendering)
and the lab only ever use what is declared in this module.
"""

from __future__ import annotations

import ipaddress
import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

WWN_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){7}$")


class Transport(StrEnum):
    TELNET = "telnet"
    SSH = "ssh"


class Platform(StrEnum):
    MCDATA_ECLIPSE = "mcdata_eclipse"
    NISHAN_IPS3000 = "nishan_ips3000"
    BROCADE_FOS = "brocade_fos"
    CISCO_MDS = "cisco_mds"


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


@dataclass(frozen=True)
class LinkSpec:
    """One SAN extension as a router sees it.

    `port` is the router's FC port facing the local SAN (iFCP) or the VE/FCIP interface number
    (FCIP); `zone` is the flexzone zone id; `remote_ip` is the data-path address of the gateway
    at the other end. `local_ip` (this router's data-path address) and `wwn` (the device whose
    zone membership the link carries) are needed by the FCIP platforms and ignored by iFCP ones.
    """

    port: int
    zone: int
    remote_ip: str
    local_ip: str | None = None
    wwn: str | None = None

    def __post_init__(self) -> None:
        validate_link_spec(self)

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.port, self.zone, self.remote_ip)


@dataclass(frozen=True)
class RouterLink:
    """A link as read back from a router's running configuration."""

    port: int
    zone: int
    remote_ip: str
    state: str = "up"

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.port, self.zone, self.remote_ip)


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
    the masked session text. The operations engine uses both for its journal.
    """

    platform: ClassVar[Platform]

    def __init__(self, target: RouterTarget) -> None:
        self.target = target
        self.deadline: float | None = None

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

    def save_config(self) -> None:
        raise NotImplementedError

    # --- journal support -------------------------------------------------------------------------
    def take_transcript(self) -> str:
        raise NotImplementedError

    def take_router_seconds(self) -> float:
        raise NotImplementedError

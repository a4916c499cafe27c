"""The contract between the simulator framework (transport, timing, faults, state) and a platform
personality (prompts, grammar, outputs, state changes).

The framework owns sockets (telnet/SSH), login, echo and newline handling, the timing profile, the
fault knobs and persistence. A personality owns what the device says: its banner, prompts, command
grammar, error strings and tables, and how commands change the running configuration.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from routers.drivers.base import RouterLink

if TYPE_CHECKING:
    from simulators.faults import FaultBook


@dataclass
class TimingProfile:
    """Seconds. Each delay gets +/- uniform jitter (fraction of itself) unless jitter is 0."""

    connect_to_login: float = 0.0  # TCP accept -> first login prompt
    after_password: float = 0.0  # password -> first command prompt
    command: float = 0.0  # per command, read-only commands
    mutating_command: float = 0.0  # per command that changes configuration
    jitter: float = 0.0


@dataclass
class SimState:
    """JSON-serialisable configuration of one simulated router; persisted by the framework."""

    running: dict[str, Any] = field(default_factory=dict)
    saved: dict[str, Any] = field(default_factory=dict)


@dataclass
class Session:
    """Per-connection state a personality may keep (config-mode stack, paging, user).

    `id` tells concurrent sessions apart (the framework numbers connections from 1): a device's
    zoning transaction or lock belongs to one session, not to a user.
    """

    username: str
    transport: str  # "telnet" | "ssh"
    paging: bool = True
    modes: list[str] = field(default_factory=list)
    scratch: dict[str, Any] = field(default_factory=dict)
    id: int = 0


class Console(Protocol):
    """What a personality may do with the session it serves; provided by the framework."""

    def write(self, text: str) -> None:
        """Queue output; `\\n` is sent as CRLF."""

    async def ask(self, question: str) -> str:
        """Write a question (confirmation prompt), read and echo one line, return it stripped."""

    async def page(self, text: str) -> None:
        """Write long output through the platform's pager (honours session.paging)."""

    async def applied(self) -> None:
        """Call right after a state change is made: the 'drop after apply' fault fires here,
        so the change persists while the reply is lost."""

    async def delay(self, seconds: float) -> None:
        """Device think time inside a command (e.g. after a confirmation), scaled like the profile."""


class Personality(ABC):
    """One platform's CLI. Subclasses are registered in simulators.PERSONALITIES by platform name."""

    platform: ClassVar[str]
    timing: ClassVar[TimingProfile]
    synthetic: ClassVar[bool] = False  # True for grammars invented from RFC 4172 (no public CLI exists)
    transports: ClassVar[tuple[str, ...]] = ("telnet", "ssh")  # what the device can be reached by
    default_hostname: ClassVar[str] = "router"
    max_sessions: ClassVar[int | None] = None  # concurrent CLI sessions the device accepts
    page_lines: ClassVar[int] = 24  # Console.page() shows this many lines per screen
    pager_prompt: ClassVar[str] = "--More--"
    paged_transports: ClassVar[tuple[str, ...]] = ("telnet", "ssh")  # where a new session starts paging
    # The lines a client sends to prepare a new SSH session before its first command: the round trips
    # they take are booked as the session's login (simulators.roundtrips). netmiko reads the first prompt
    # by sending an empty line; a platform adds the terminal settings netmiko or flexzone's driver send.
    session_preparation: ClassVar[frozenset[str]] = frozenset({""})

    def __init__(self, state: SimState, hostname: str) -> None:
        self.state = state
        self.hostname = hostname
        # The simulator's fault book, set by SimRouter right after construction (None when a test
        # drives the personality alone). State faults such as `zoning_locked` are read from it.
        self.faults: FaultBook | None = None

    @abstractmethod
    def login_banner(self, transport: str) -> str:
        """Text before the username prompt (telnet) or as the SSH banner."""

    def username_prompt(self) -> str:
        return "login: "

    def password_prompt(self) -> str:
        return "Password: "

    def motd(self, session: Session) -> str:
        """Text after a successful login, before the first prompt."""
        return ""

    def login_failed_message(self) -> str:
        return "Login incorrect"

    def session_limit_message(self) -> str:
        return "Session limit reached. Exiting."

    def idle_message(self) -> str:
        """Said before the device closes an idle session (SimRouter idle_timeout)."""
        return "timed out waiting for input: auto-logout"

    @abstractmethod
    def prompt(self, session: Session) -> str:
        """The prompt for the session's current mode, including the trailing space if any."""

    @abstractmethod
    def is_mutating(self, session: Session, line: str) -> bool:
        """Whether `line` changes configuration (selects the timing and the fault hooks)."""

    @abstractmethod
    async def execute(self, session: Session, console: Console, line: str) -> bool:
        """Run one command line (already stripped of the newline). Return False to end the session."""

    @abstractmethod
    def links(self) -> list[RouterLink]:
        """The SAN extension links in the running configuration (for the data path and tests)."""

    def save(self) -> None:
        """Copy running to saved, for platforms that have a saved configuration."""
        self.state.saved = _deep_copy(self.state.running)

    def session_ended(self, session: Session) -> None:
        """Called on the simulator's loop when a session ends, whatever ended it (exit, EOF, a fault,
        idle timeout, stop). The framework persists any state change right after."""
        return None

    def seed_production_zoning(self) -> None:
        """Give a new switch the zoning other hosts already depend on (``--production-zoning``)."""
        return None

    def seed_fabric(self, size: int) -> None:
        """Give a new switch a production-sized fabric of `size` other hosts' zones (``--fabric-size``)."""
        return None

    def zoning_locked(self) -> bool:
        """Whether the `zoning_locked` fault is armed: another administrator holds the fabric's zoning."""
        return self.faults is not None and self.faults.peek("zoning_locked", "", False)


def _deep_copy(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value))

"""``SimRouter``: one simulated router, a platform personality served over telnet and/or SSH with its
timing, faults and state, from construction to ``stop()``.

It runs its asyncio loop on a background thread (``start()``/``stop()``, simulators.loop) for tests,
benchmarks and the lab, or in the caller's loop (``await serve()``/``await aclose()``) for
``python -m simulators``. The terminal (simulators.server.terminal), the transports
(simulators.server.transports) and the state directory (simulators.server.state) do the work.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import asyncssh

from routers.drivers.base import RouterLink
from simulators.faults import Fault, FaultBook
from simulators.loop import BackgroundLoop
from simulators.personality import Personality, Session, SimState, TimingProfile
from simulators.roundtrips import RoundTripBook, SetUp
from simulators.server.state import StateListener, StateStore
from simulators.server.terminal import Terminal
from simulators.server.transports import open_servers, parse_address

log = logging.getLogger(__name__)
T = TypeVar("T")


class SimRouter:
    """One simulated router: a personality served over telnet and/or SSH with state and faults."""

    def __init__(
        self,
        platform: str | type[Personality],
        *,
        telnet: str | tuple[str, int] | None = None,
        ssh: str | tuple[str, int] | None = None,
        state_dir: str | Path | None = None,
        username: str = "admin",
        password: str = "password",
        hostname: str | None = None,
        timing: TimingProfile | None = None,
        scale: float = 1.0,
        faults: list[Fault] | None = None,
        max_sessions: int | None = None,
        seed: int | None = None,
        idle_timeout: float | None = None,
        production_zoning: bool = False,
        fabric_size: int = 0,
        accounts: dict[str, str] | None = None,
    ) -> None:
        from simulators import personality_class

        cls = personality_class(platform) if isinstance(platform, str) else platform
        platform = cls.platform
        if telnet is None and ssh is None:
            telnet = ("127.0.0.1", 0) if "telnet" in cls.transports else None
            ssh = ("127.0.0.1", 0) if telnet is None else None
        for name, value in (("telnet", telnet), ("ssh", ssh)):
            if value is not None and name not in cls.transports:
                raise ValueError(f"{name}: {platform} is served over {', '.join(cls.transports)} only")
        self.platform = platform
        self.telnet_address = parse_address(telnet) if telnet is not None else None
        self.ssh_address = parse_address(ssh) if ssh is not None else None
        self.store = StateStore(state_dir, platform)
        self.state_dir = self.store.directory
        self.username = username
        self.password = password
        # Other administrators' accounts (name -> password), beside the one flexzone is given.
        self.accounts = {**(accounts or {}), username: password}
        self.timing = timing or TimingProfile(**vars(cls.timing))
        self.scale = scale
        self.max_sessions = max_sessions if max_sessions is not None else cls.max_sessions
        self.rng = random.Random(seed)
        self.idle_timeout = idle_timeout
        self.faults_book = FaultBook(faults, self.state_dir)
        self.passwords_received = 0  # SSH password attempts, to show which clients never sent one
        new_state = self.store.is_new()
        self.personality: Personality = cls(self.store.load(), hostname or cls.default_hostname)
        self.personality.faults = self.faults_book
        seed_zoning = (production_zoning or fabric_size > 0) and new_state
        if seed_zoning and production_zoning:
            # A fabric that already carries other hosts' zoning; from now on it is this switch's state.
            self.personality.seed_production_zoning()
        if seed_zoning and fabric_size > 0:
            self.personality.seed_fabric(fabric_size)
        self.store.keep(self.personality, write=seed_zoning)
        self.sessions: set[Terminal] = set()  # connections past the session limit check
        self.sessions_started = 0  # such connections so far (logins tried)
        self.peak_sessions = 0  # the most of them open at once
        self.logged_in: dict[Terminal, str] = {}  # the open sessions past their login, by account
        self.peak_by_account: dict[str, int] = {}  # the most sessions of each account open at once
        self.tasks: set[asyncio.Task[Any]] = set()  # one per connection, cancelled by aclose()
        self._session_counter = 0
        self._servers: list[Any] = []
        self._background = BackgroundLoop(f"sim-{platform}")
        self.addresses: dict[str, tuple[str, int]] = {}
        self.think_seconds = 0.0  # total device "think time" (timing-profile delays) served so far
        self.round_trip_book = RoundTripBook(self.state_dir)  # the clients' turns (simulators.roundtrips)

    # --- public API --------------------------------------------------------------------------
    @property
    def faults(self) -> list[Fault]:
        return self.faults_book.get()

    @faults.setter
    def faults(self, faults: list[Fault]) -> None:
        self.faults_book.set(faults)

    def add_fault(self, kind: str, match: str | None = None, count: int | None = None,
                  seconds: float | None = None) -> None:
        self.faults = [*self.faults, Fault(kind, match=match, count=count, seconds=seconds)]

    def clear_faults(self) -> None:
        self.faults = []

    def add_state_listener(self, callback: StateListener) -> None:
        """Call `callback(links)` (in the simulator's loop thread) after every configuration change."""
        self.store.listeners.append(callback)

    def links(self) -> list[RouterLink]:
        return self._on_loop(self.personality.links)

    def state(self) -> SimState:
        return self._on_loop(self.store.copy)

    def transcript(self) -> str:
        return self.store.transcript()

    def round_trips(self) -> dict[str, Any]:
        """The clients' turns so far: {"login": n, "commands": n, "sessions": n, "per_session": {...}}."""
        return self._on_loop(self.round_trip_book.snapshot)

    def active_sessions(self) -> int:
        return len(self.sessions)

    def ssh_key(self) -> asyncssh.SSHKey:
        """The SSH host key: kept in the state directory (the same key across restarts), or made once
        per instance without one."""
        return self.store.ssh_key()

    def host_key_line(self) -> str:
        """The public host key as "<type> <base64>" (what an admin would compare and trust)."""
        return " ".join(self.ssh_key().export_public_key("openssh").decode().split()[:2])

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> dict[str, tuple[str, int]]:
        """Serve in a background thread; return the bound addresses by transport."""
        return self._background.start(self.serve, self.aclose)

    def stop(self) -> None:
        self._background.stop(self.aclose)

    def __enter__(self) -> SimRouter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def serve(self) -> dict[str, tuple[str, int]]:
        """Open the listening sockets in the running loop; return the bound addresses."""
        servers, addresses = await open_servers(self)
        self._servers += servers
        self.addresses.update(addresses)
        return dict(self.addresses)

    async def aclose(self) -> None:
        for server in self._servers:
            server.close()
        for terminal in list(self.sessions):
            terminal.abort()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=5)
        self._servers.clear()

    def _on_loop(self, func: Callable[[], T]) -> T:
        return self._background.call(func)

    # --- timing ------------------------------------------------------------------------------
    def delay_for(self, base: float) -> float:
        seconds = base * self.scale
        if self.timing.jitter and seconds > 0:
            seconds *= 1 + self.rng.uniform(-self.timing.jitter, self.timing.jitter)
        return max(0.0, seconds)

    async def pause(self, base: float) -> None:
        seconds = self.delay_for(base)
        if seconds > 0:
            self.think_seconds += seconds
            await asyncio.sleep(seconds)

    # --- state and sessions ------------------------------------------------------------------
    def state_changed(self) -> None:
        """Persist and notify if the configuration differs from the last snapshot."""
        self.store.changed()

    def new_terminal(self, transport: str, write: Callable[[str], None], abort: Callable[[], None],
                     close: Callable[[], None]) -> Terminal:
        """A terminal for a new connection, numbered in connection order and logged in the transcript; an SSH
        session's login turns are its set-up (simulators.roundtrips), telnet's its login dialogue alone."""
        self._session_counter += 1
        set_up = SetUp(self.personality.session_preparation) if transport == "ssh" else None
        return Terminal(transport, write, abort, close, self.store.transcript_logger(self._session_counter, transport),
                        session_id=self._session_counter, turns=self.round_trip_book, set_up=set_up)

    def session_started(self, terminal: Terminal) -> None:
        """A connection past the session limit check: counted, and the peak of concurrent ones kept."""
        self.sessions.add(terminal)
        self.sessions_started += 1
        self.peak_sessions = max(self.peak_sessions, len(self.sessions))

    def session_logged_in(self, terminal: Terminal, user: str) -> None:
        """A session logged in as `user`: counted for that account, and the account's peak kept (how many
        sessions one client, flexzone say, had open at once, beside other admins')."""
        self.logged_in[terminal] = user
        now = sum(1 for account in self.logged_in.values() if account == user)
        self.peak_by_account[user] = max(self.peak_by_account.get(user, 0), now)

    def refuses_session(self, terminal: Terminal) -> bool:
        """Over the session limit, or a session_limit fault: say so and close the connection."""
        over_limit = self.max_sessions is not None and len(self.sessions) >= self.max_sessions
        if over_limit or self.faults_book.take(("session_limit",)):
            terminal.write(self.personality.session_limit_message() + "\n")
            terminal.close()
            return True
        return False

    def end_session(self, session: Session) -> None:
        """Let the personality release what the session held (e.g. an open FOS zoning transaction)."""
        try:
            self.personality.session_ended(session)
        except Exception:  # noqa: BLE001 - a personality's bug must not take the device down
            log.exception("simulator %s: session_ended failed", self.platform)
        self.state_changed()

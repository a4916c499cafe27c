"""The simulator framework: telnet and SSH servers, login, echo, newlines, timing, faults, state.

A ``SimRouter`` serves one personality (one platform's CLI) on a telnet and/or an SSH port. It runs
its asyncio loop in a background thread (``start()``/``stop()``) for tests and the lab, or in the
caller's loop (``await serve()``/``await aclose()``) for ``python -m routers.sim``.

Telnet is telnetlib3's server: it negotiates options (netmiko's vendored telnetlib client refuses
them all and that is fine) and hands us decoded characters; everything the device does with those
characters (newline folding, echo, login, prompts) is ours. SSH is asyncssh with password
authentication and the line editor off, so echo and newlines behave the same on both transports.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh
import telnetlib3

from routers.drivers.base import RouterLink
from routers.sim.faults import Fault, FaultBook, atomic_write
from routers.sim.personality import Personality, Session, SimState, TimingProfile

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
TRANSCRIPT_FILE = "transcript.log"
HOST_KEY_FILE = "ssh_host_key"
LAB_NETWORK = ipaddress.ip_network("198.18.0.0/15")
StateListener = Callable[[list[RouterLink]], None]


class SessionEnded(Exception):
    """The client went away (EOF) or the framework ended the session."""


class DropConnection(Exception):
    """A fault fired: cut the connection now, without a goodbye."""


def parse_address(value: str | tuple[str, int]) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` or a tuple -> (host, port), refusing addresses we may not bind."""
    if isinstance(value, tuple):
        host, port = value
    else:
        match = re.fullmatch(r"\[(?P<v6>[^\]]+)\]:(?P<p6>\d+)|(?P<host>[^:]+):(?P<port>\d+)", value)
        if not match:
            raise ValueError(f"address: expected HOST:PORT, got {value!r}")
        host = match["v6"] or match["host"]
        port = int(match["p6"] or match["port"])
    check_bind_host(host)
    return host, int(port)


def check_bind_host(host: str) -> None:
    """Simulators listen on loopback, or on lab addresses inside the lab's own namespaces; nowhere else."""
    if host == "localhost":
        return
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"address: {host!r} is not an IP address") from None
    if not (address.is_loopback or (address.version == 4 and address in LAB_NETWORK)):
        raise ValueError(f"address: {host} is neither loopback nor in the lab network {LAB_NETWORK}")


def garble(text: str, rng: random.Random) -> str:
    """Corrupt output as a bad line would: flipped characters and a lost chunk, line breaks kept."""
    chars = list(text)
    for index in range(len(chars)):
        if chars[index] not in "\r\n" and rng.random() < 0.3:
            chars[index] = rng.choice("$&*@~^?!")
    if len(chars) > 8:
        start = rng.randrange(len(chars) // 2)
        del chars[start : start + len(chars) // 4]
    return "".join(chars)


class Terminal:
    """One client connection, transport-neutral: a character queue in, text out, newline folding.

    A pump task moves whatever the client sends into a queue; reading lines consumes it and echoes.
    Typeahead sent while the device is "busy" (login delays) can be flushed, as the device discards it.
    """

    def __init__(self, transport: str, write: Callable[[str], None], abort: Callable[[], None],
                 close: Callable[[], None], log_line: Callable[[str], None], session_id: int = 0) -> None:
        self.transport = transport
        self.session_id = session_id
        self._write = write
        self._abort = abort
        self._close = close
        self._log = log_line
        self._chars: asyncio.Queue[str | None] = asyncio.Queue()
        self._after_cr = False
        self.closed = asyncio.Event()
        self.garbler: random.Random | None = None
        self.fragmenter: random.Random | None = None
        self._send_at = 0.0  # loop time of the last output piece scheduled by fragmentation
        self._pending: collections.deque[tuple[float, str]] = collections.deque()
        self._drainer: asyncio.TimerHandle | None = None
        self._close_when_drained = False

    def feed(self, data: str | None) -> None:
        if data is None:
            self._chars.put_nowait(None)
            self.closed.set()
            return
        for char in data:
            self._chars.put_nowait(char)

    def flush_input(self) -> None:
        while not self._chars.empty():
            if self._chars.get_nowait() is None:
                self._chars.put_nowait(None)
                return
        self._after_cr = False

    def write(self, text: str) -> None:
        if self.closed.is_set() or not text:
            return
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        if self.garbler is not None:
            text = garble(text, self.garbler)
        self._log("> " + text)
        try:
            self._send(text)
        except Exception as exc:  # noqa: BLE001 - a write to a dead peer ends the session
            raise SessionEnded(str(exc)) from exc

    def write_raw(self, text: str) -> None:
        """Echo: not logged, not garbled."""
        if not self.closed.is_set():
            self._send(text)

    def _send(self, text: str) -> None:
        """Write now, or (fragment fault) as 1-6 character pieces 5 ms apart, in order."""
        if self.fragmenter is None and not self._pending:
            self._write(text)
            return
        loop = asyncio.get_running_loop()
        pieces, gap = [text], 0.0
        if self.fragmenter is not None:
            pieces, gap, rest = [], 0.005, text
            while rest:
                size = self.fragmenter.randint(1, 6)
                pieces.append(rest[:size])
                rest = rest[size:]
        for piece in pieces:
            self._send_at = max(self._send_at, loop.time()) + gap
            self._pending.append((self._send_at, piece))
        if self._drainer is None:
            self._drainer = loop.call_at(self._pending[0][0], self._drain)

    def _drain(self) -> None:
        """Write every due piece in FIFO order (timer handles with equal times are not ordered)."""
        loop = asyncio.get_running_loop()
        self._drainer = None
        while self._pending and self._pending[0][0] <= loop.time() + 0.001:
            _, piece = self._pending.popleft()
            try:
                self._write(piece)
            except Exception:  # noqa: BLE001 - the peer went away meanwhile
                self._pending.clear()
        if self._pending:
            self._drainer = loop.call_at(self._pending[0][0], self._drain)
        elif self._close_when_drained:
            self._close()

    async def read_line(self, echo: bool = True, secret: bool = False) -> str:
        """One line; CR LF, CR NUL, CR and LF each end it once. Raises SessionEnded on EOF."""
        line: list[str] = []
        while True:
            char = await self._chars.get()
            if char is None:
                self._chars.put_nowait(None)
                raise SessionEnded("EOF")
            if self._after_cr:
                self._after_cr = False
                if char in "\n\0":
                    continue
            if char in "\r\n":
                self._after_cr = char == "\r"
                self.write_raw("\r\n")
                text = "".join(line)
                self._log("< " + ("*" * 8 if secret else text))
                return text
            if char in "\x08\x7f":
                if line:
                    line.pop()
                    if echo:
                        self.write_raw("\b \b")
                continue
            if char == "\x03":  # ^C abandons the line, as a shell does
                self.write_raw("^C\r\n")
                return ""
            if char < " " and char != "\t":
                continue
            line.append(char)
            if echo:
                self.write_raw(char)

    async def wait_closed(self) -> None:
        await self.closed.wait()

    def abort(self) -> None:
        self.closed.set()
        self._pending.clear()
        if self._drainer is not None:
            self._drainer.cancel()
            self._drainer = None
        self._abort()

    def close(self) -> None:
        """Close gracefully, after any output still queued by fragmentation."""
        if self._pending:
            self._close_when_drained = True
        else:
            self._close()
        self.closed.set()


class SimConsole:
    """The ``Console`` a personality talks to during one command (see routers.sim.personality)."""

    def __init__(self, router: SimRouter, terminal: Terminal, session: Session) -> None:
        self.router = router
        self.terminal = terminal
        self.session = session
        self.drop_after_apply = False
        self.line = ""
        self.mutating = False

    def write(self, text: str) -> None:
        self.terminal.write(text)

    async def ask(self, question: str) -> str:
        self.terminal.write(question)
        return (await self.terminal.read_line()).strip()

    async def page(self, text: str) -> None:
        personality = self.router.personality
        lines = text.splitlines(keepends=True)
        size = max(1, personality.page_lines - 1)
        if not self.session.paging or len(lines) <= size:
            self.write(text)
            return
        for start in range(0, len(lines), size):
            self.write("".join(lines[start : start + size]))
            if start + size >= len(lines):
                break
            self.terminal.write(personality.pager_prompt)
            answer = await self.terminal.read_line(echo=False)
            if answer.strip().lower().startswith("q"):
                break

    async def applied(self) -> None:
        self.router.state_changed()
        if self.drop_after_apply and self.router.faults_book.take(("drop_after_apply",), self.line, self.mutating):
            raise DropConnection("drop_after_apply")

    async def delay(self, seconds: float) -> None:
        """Extra device think time inside a command (e.g. after a confirmation), timing-scaled."""
        await self.router.pause(seconds)


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
    ) -> None:
        from routers.sim import personality_class

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
        self.state_dir = Path(state_dir) if state_dir is not None else None
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        self.username = username
        self.password = password
        self.timing = timing or TimingProfile(**vars(cls.timing))
        self.scale = scale
        self.max_sessions = max_sessions if max_sessions is not None else cls.max_sessions
        self.rng = random.Random(seed)
        self.idle_timeout = idle_timeout
        self.faults_book = FaultBook(faults, self.state_dir)
        self.passwords_received = 0  # SSH password attempts, to show which clients never sent one
        self._ssh_key: asyncssh.SSHKey | None = None
        new_state = not self._state_file_exists()
        self.personality: Personality = cls(self._load_state(), hostname or cls.default_hostname)
        self.personality.faults = self.faults_book
        if production_zoning and new_state:
            # A fabric that already carries other hosts' zoning; from now on it is this switch's state.
            self.personality.seed_production_zoning()
            if self.state_dir is not None:
                atomic_write(self.state_dir / STATE_FILE, self._state_json())
        self._snapshot = self._state_json()
        self._listeners: list[StateListener] = []
        self._transcript: collections.deque[str] = collections.deque(maxlen=20000)
        self._sessions: set[Terminal] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._session_counter = 0
        self._servers: list[Any] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.addresses: dict[str, tuple[str, int]] = {}
        self.think_seconds = 0.0  # total device "think time" (timing-profile delays) served so far

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
        self._listeners.append(callback)

    def links(self) -> list[RouterLink]:
        return self._on_loop(self.personality.links)

    def state(self) -> SimState:
        return self._on_loop(lambda: SimState(**json.loads(self._state_json())))

    def transcript(self) -> str:
        return "\n".join(self._transcript)

    def active_sessions(self) -> int:
        return len(self._sessions)

    def start(self) -> dict[str, tuple[str, int]]:
        """Serve in a background thread; return the bound addresses by transport."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name=f"sim-{self.platform}", daemon=True)
        self._thread.start()
        try:
            return asyncio.run_coroutine_threadsafe(self.serve(), loop).result(timeout=30)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout=10)
            except Exception:  # noqa: BLE001 - stopping must not fail on a half-dead session
                log.exception("simulator %s: error while stopping", self.platform)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> SimRouter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def serve(self) -> dict[str, tuple[str, int]]:
        """Open the listening sockets in the running loop; return the bound addresses."""
        self._loop = asyncio.get_running_loop()
        if self.telnet_address is not None:
            host, port = self.telnet_address
            server = await telnetlib3.create_server(
                host=host, port=port, shell=self._telnet_shell, encoding="utf8", encoding_errors="replace",
                force_binary=True, connect_maxwait=0.5, timeout=0,
            )
            self._servers.append(server)
            self.addresses["telnet"] = server.sockets[0].getsockname()[:2]
        if self.ssh_address is not None:
            host, port = self.ssh_address
            server = await asyncssh.create_server(
                lambda: _SSHServer(self), host, port, server_host_keys=[self.ssh_key()],
                process_factory=self._ssh_process, line_editor=False, encoding="utf-8", errors="replace",
            )
            self._servers.append(server)
            self.addresses["ssh"] = server.sockets[0].getsockname()[:2]
        return dict(self.addresses)

    async def aclose(self) -> None:
        for server in self._servers:
            server.close()
        for terminal in list(self._sessions):
            terminal.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        self._servers.clear()

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

    # --- state -------------------------------------------------------------------------------
    def _state_file_exists(self) -> bool:
        return self.state_dir is not None and (self.state_dir / STATE_FILE).exists()

    def _load_state(self) -> SimState:
        if self._state_file_exists():
            data = json.loads((self.state_dir / STATE_FILE).read_text())
            return SimState(running=data.get("running", {}), saved=data.get("saved", {}))
        return SimState()

    def _state_json(self) -> str:
        state = self.personality.state
        return json.dumps({"running": state.running, "saved": state.saved}, indent=1, sort_keys=True)

    def state_changed(self) -> None:
        """Persist and notify if the configuration differs from the last snapshot."""
        current = self._state_json()
        if current == self._snapshot:
            return
        self._snapshot = current
        if self.state_dir is not None:
            atomic_write(self.state_dir / STATE_FILE, current)
        links = self.personality.links()
        for listener in list(self._listeners):
            try:
                listener(links)
            except Exception:  # noqa: BLE001 - a listener's bug must not take the device down
                log.exception("simulator %s: state listener failed", self.platform)

    def _on_loop(self, func: Callable[[], Any]) -> Any:
        loop = self._loop
        if loop is None or not loop.is_running() or self._in_loop_thread():
            return func()

        async def call() -> Any:
            return func()

        return asyncio.run_coroutine_threadsafe(call(), loop).result(timeout=10)

    def _in_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    # --- transcript --------------------------------------------------------------------------
    def _logger(self, session_id: int, transport: str) -> Callable[[str], None]:
        path = self.state_dir / TRANSCRIPT_FILE if self.state_dir is not None else None

        def log_line(text: str) -> None:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"
            entry = f"{stamp} s{session_id} {transport} {text!r}"
            self._transcript.append(entry)
            if path is not None:
                with path.open("a") as handle:
                    handle.write(entry + "\n")

        return log_line

    # --- SSH host key ------------------------------------------------------------------------
    def ssh_key(self) -> asyncssh.SSHKey:
        """The SSH host key: kept in the state directory (the same key across restarts), or made once
        per instance without one."""
        if self._ssh_key is not None:
            return self._ssh_key
        path = self.state_dir / HOST_KEY_FILE if self.state_dir is not None else None
        if path is not None and path.exists():
            self._ssh_key = asyncssh.read_private_key(str(path))
            return self._ssh_key
        self._ssh_key = asyncssh.generate_private_key("ssh-ed25519")
        if path is not None:
            self._ssh_key.write_private_key(str(path))
            path.chmod(0o600)
        return self._ssh_key

    def host_key_line(self) -> str:
        """The public host key as "<type> <base64>" (what an admin would compare and trust)."""
        return " ".join(self.ssh_key().export_public_key("openssh").decode().split()[:2])

    # --- sessions ----------------------------------------------------------------------------
    def _new_terminal(self, transport: str, write: Callable[[str], None], abort: Callable[[], None],
                      close: Callable[[], None]) -> Terminal:
        self._session_counter += 1
        return Terminal(transport, write, abort, close, self._logger(self._session_counter, transport),
                        session_id=self._session_counter)

    async def _pump(self, read: Callable[[], Any], terminal: Terminal) -> None:
        try:
            while True:
                try:
                    data = await read()
                except (asyncssh.TerminalSizeChanged, asyncssh.BreakReceived, asyncssh.SignalReceived):
                    continue  # SSH out-of-band events (window resize, break) are not input
                if not data:
                    break
                terminal.feed(data)
        except (ConnectionError, asyncio.IncompleteReadError, asyncssh.Error, OSError):
            pass
        finally:
            terminal.feed(None)

    def _session_refused(self, terminal: Terminal) -> bool:
        over_limit = self.max_sessions is not None and len(self._sessions) >= self.max_sessions
        if over_limit or self.faults_book.take(("session_limit",)):
            terminal.write(self.personality.session_limit_message() + "\n")
            terminal.close()
            return True
        return False

    async def _telnet_shell(self, reader: Any, writer: Any) -> None:
        transport = writer.transport

        def abort() -> None:
            if transport is not None:
                transport.abort()

        terminal = self._new_terminal("telnet", writer.write, abort, writer.close)
        await self._run_session(terminal, lambda: reader.read(4096), self._telnet_login)

    async def _telnet_login(self, terminal: Terminal) -> str:
        personality = self.personality
        await self.pause(self.timing.connect_to_login)
        terminal.flush_input()
        terminal.write(personality.login_banner("telnet"))
        failures = 0
        while True:
            terminal.write(personality.username_prompt())
            user = (await terminal.read_line()).strip()
            if not user:
                continue
            terminal.write(personality.password_prompt())
            password = await terminal.read_line(echo=False, secret=True)
            refused = self.faults_book.take(("refuse_login",)) is not None
            if not refused and user == self.username and password == self.password:
                return user
            terminal.write("\n" + personality.login_failed_message() + "\n")
            failures += 1
            if refused or failures >= 3:
                raise SessionEnded("login refused")

    async def _ssh_process(self, process: asyncssh.SSHServerProcess[str]) -> None:
        channel = process.channel
        connection = channel.get_connection()

        def write(text: str) -> None:
            process.stdout.write(text)

        def close() -> None:
            process.exit(0)

        terminal = self._new_terminal("ssh", write, connection.abort, close)
        username = process.get_extra_info("username") or self.username

        async def login(_: Terminal) -> str:
            return username

        await self._run_session(terminal, lambda: process.stdin.read(4096), login)

    async def _run_session(self, terminal: Terminal, read: Callable[[], Any],
                           login: Callable[[Terminal], Any]) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        pump = asyncio.ensure_future(self._pump(read, terminal))
        session: Session | None = None
        try:
            if self._session_refused(terminal):
                return
            self._sessions.add(terminal)
            user = await login(terminal)
            session = Session(username=user, transport=terminal.transport, id=terminal.session_id)
            await self._after_login(terminal)
            terminal.write(self.personality.motd(session))
            await self._command_loop(terminal, session)
        except SessionEnded:
            if not terminal.closed.is_set():
                terminal.close()
        except DropConnection:
            terminal.abort()
        except asyncio.CancelledError:
            terminal.abort()
        finally:
            self._sessions.discard(terminal)
            pump.cancel()
            if session is not None:
                self._end_session(session)
            if task is not None:
                self._tasks.discard(task)

    def _end_session(self, session: Session) -> None:
        """Let the personality release what the session held (e.g. an open FOS zoning transaction)."""
        try:
            self.personality.session_ended(session)
        except Exception:  # noqa: BLE001 - a personality's bug must not take the device down
            log.exception("simulator %s: session_ended failed", self.platform)
        self.state_changed()

    async def _after_login(self, terminal: Terminal) -> None:
        await self.pause(self.timing.after_password)
        stall = self.faults_book.take(("stall_before_prompt",))
        if stall is not None:
            if stall.seconds is None:
                await terminal.wait_closed()
                raise SessionEnded("stalled")
            await asyncio.sleep(stall.seconds)
        terminal.flush_input()

    async def _command_loop(self, terminal: Terminal, session: Session) -> None:
        personality = self.personality
        while True:
            terminal.write(personality.prompt(session))
            terminal.fragmenter = None
            line = (await self._read_command(terminal)).strip()
            if not line:
                continue
            mutating = personality.is_mutating(session, line)
            await self.pause(self.timing.mutating_command if mutating else self.timing.command)
            if self.faults_book.take(("drop_before_apply",), line, mutating):
                raise DropConnection("drop_before_apply")
            if self.faults_book.take(("stall_command",), line, mutating):
                await terminal.wait_closed()
                raise SessionEnded("stalled mid-command")
            console = SimConsole(self, terminal, session)
            console.line, console.mutating = line, mutating
            console.drop_after_apply = self.faults_book.peek("drop_after_apply", line, mutating)
            if self.faults_book.take(("garble",), line, mutating):
                terminal.garbler = self.rng
            if self.faults_book.take(("fragment",), line, mutating):
                terminal.fragmenter = self.rng  # until the next prompt has been written
            try:
                keep_going = await personality.execute(session, console, line)
            finally:
                terminal.garbler = None
                self.state_changed()
            if not keep_going:
                terminal.close()
                return


    async def _read_command(self, terminal: Terminal) -> str:
        if self.idle_timeout is None:
            return await terminal.read_line()
        try:
            return await asyncio.wait_for(terminal.read_line(), self.idle_timeout)
        except TimeoutError:
            terminal.write("\n" + self.personality.idle_message() + "\n")
            raise SessionEnded("idle timeout") from None


class _SSHServer(asyncssh.SSHServer):
    def __init__(self, router: SimRouter) -> None:
        self.router = router
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn

    async def begin_auth(self, username: str) -> bool:
        await self.router.pause(self.router.timing.connect_to_login)
        banner = self.router.personality.login_banner("ssh")
        if banner and self._conn is not None:
            self._conn.send_auth_banner(banner.replace("\r\n", "\n").replace("\n", "\r\n"))
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        self.router.passwords_received += 1
        if self.router.faults_book.take(("refuse_login",)) is not None:
            return False
        return username == self.router.username and password == self.router.password

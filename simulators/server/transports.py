"""How clients reach a simulated router: telnet and SSH servers, their logins, and one connection's life.

Telnet is telnetlib3's server: it negotiates options (netmiko's vendored telnetlib client refuses
them all and that is fine) and hands us decoded characters; everything the device does with those
characters (newline folding, echo, login, prompts) is ours. SSH is asyncssh with password
authentication and the line editor off, so echo and newlines behave the same on both transports.

Simulators listen on loopback, or on lab addresses (198.18.0.0/15, RFC 2544's benchmarking block)
inside the lab's own network namespaces; nowhere else.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import asyncssh
import telnetlib3

from simulators.personality import Session
from simulators.server.terminal import CommandLoop, DropConnection, SessionEnded, SessionRouter, Terminal

LAB_NETWORK = ipaddress.ip_network("198.18.0.0/15")
Login = Callable[[Terminal], Awaitable[str]]


class ListeningRouter(SessionRouter, Protocol):
    """What the servers need of the router they serve (a SimRouter, which imports this module) besides
    what its sessions need: where to listen, its accounts and host key, and the book of its connections."""

    telnet_address: tuple[str, int] | None
    ssh_address: tuple[str, int] | None
    username: str
    accounts: dict[str, str]
    passwords_received: int
    sessions: set[Terminal]
    logged_in: dict[Terminal, str]
    tasks: set[asyncio.Task[Any]]

    def ssh_key(self) -> asyncssh.SSHKey: ...

    def new_terminal(self, transport: str, write: Callable[[str], None], abort: Callable[[], None],
                     close: Callable[[], None]) -> Terminal: ...

    def refuses_session(self, terminal: Terminal) -> bool: ...

    def session_started(self, terminal: Terminal) -> None: ...

    def session_logged_in(self, terminal: Terminal, user: str) -> None: ...

    def end_session(self, session: Session) -> None: ...


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


async def open_servers(router: ListeningRouter) -> tuple[list[Any], dict[str, tuple[str, int]]]:
    """Listen where `router` was told to; return the servers and the bound address of each transport."""
    servers: list[Any] = []
    addresses: dict[str, tuple[str, int]] = {}
    if router.telnet_address is not None:
        host, port = router.telnet_address
        telnet_server = await telnetlib3.create_server(
            host=host, port=port, shell=lambda reader, writer: _telnet_shell(router, reader, writer),
            encoding="utf8", encoding_errors="replace", force_binary=True, connect_maxwait=0.5, timeout=0,
        )
        servers.append(telnet_server)
        addresses["telnet"] = _bound(telnet_server.sockets)
    if router.ssh_address is not None:
        host, port = router.ssh_address
        ssh_server = await asyncssh.create_server(
            lambda: _SSHServer(router), host, port, server_host_keys=[router.ssh_key()],
            process_factory=lambda process: _ssh_process(router, process), line_editor=False,
            encoding="utf-8", errors="replace",
        )
        servers.append(ssh_server)
        addresses["ssh"] = _bound(ssh_server.sockets)
    return servers, addresses


def _bound(sockets: Sequence[socket.socket] | None) -> tuple[str, int]:
    if not sockets:
        raise OSError("the server is not listening")
    return sockets[0].getsockname()[:2]


# --- telnet -------------------------------------------------------------------------------------
async def _telnet_shell(router: ListeningRouter, reader: Any, writer: Any) -> None:
    transport = writer.transport

    def abort() -> None:
        if transport is not None:
            transport.abort()

    terminal = router.new_terminal("telnet", writer.write, abort, writer.close)

    async def login(terminal: Terminal) -> str:
        return await _telnet_login(router, terminal)

    await serve_connection(router, terminal, lambda: reader.read(4096), login)


async def _telnet_login(router: ListeningRouter, terminal: Terminal) -> str:
    """The device's own login dialogue; three failures (or a refuse_login fault) end the connection."""
    personality = router.personality
    await router.pause(router.timing.connect_to_login)
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
        refused = router.faults_book.take(("refuse_login",)) is not None
        if not refused and router.accounts.get(user) == password:
            return user
        terminal.write("\n" + personality.login_failed_message() + "\n")
        failures += 1
        if refused or failures >= 3:
            raise SessionEnded("login refused")


# --- SSH ----------------------------------------------------------------------------------------
class _SSHServer(asyncssh.SSHServer):
    """Password authentication against the router's account; the login banner as the SSH banner."""

    def __init__(self, router: ListeningRouter) -> None:
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
        return self.router.accounts.get(username) == password


async def _ssh_process(router: ListeningRouter, process: asyncssh.SSHServerProcess[str]) -> None:
    connection = process.channel.get_connection()

    def write(text: str) -> None:
        process.stdout.write(text)

    def close() -> None:
        process.exit(0)

    terminal = router.new_terminal("ssh", write, connection.abort, close)
    username = process.get_extra_info("username") or router.username

    async def login(_: Terminal) -> str:
        return username  # SSH authenticated the user before the session began

    await serve_connection(router, terminal, lambda: process.stdin.read(4096), login)


# --- one connection -----------------------------------------------------------------------------
async def serve_connection(router: ListeningRouter, terminal: Terminal, read: Callable[[], Awaitable[Any]],
                           login: Login) -> None:
    """A connection from accept to close: the session limit, the login, the command loop, and whatever
    ends it (exit, EOF, a fault, idle timeout, stop); then the personality releases what the session held."""
    task = asyncio.current_task()
    if task is not None:
        router.tasks.add(task)
    pump = asyncio.ensure_future(_pump(read, terminal))
    session: Session | None = None
    try:
        if router.refuses_session(terminal):
            return
        router.session_started(terminal)
        user = await login(terminal)
        router.session_logged_in(terminal, user)
        session = Session(username=user, transport=terminal.transport, id=terminal.session_id,
                          paging=terminal.transport in router.personality.paged_transports)
        await CommandLoop(router, terminal, session).run()
    except SessionEnded:
        if not terminal.closed.is_set():
            terminal.close()
    except (DropConnection, asyncio.CancelledError):
        terminal.abort()
    finally:
        router.sessions.discard(terminal)
        router.logged_in.pop(terminal, None)
        pump.cancel()
        if session is not None:
            router.end_session(session)
        if task is not None:
            router.tasks.discard(task)


async def _pump(read: Callable[[], Awaitable[Any]], terminal: Terminal) -> None:
    """Move whatever the client sends into the terminal until EOF or an error."""
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

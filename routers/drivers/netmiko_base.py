"""The netmiko driver base: connect, bounded waits, typed errors, masked transcripts, router time.

Platform drivers subclass ``NetmikoDriver`` (``SessionGuardedDriver`` on SSH) and set
``device_types`` (netmiko device_type per transport); they add the platform's commands and parsers
and override nothing else unless the device differs. netmiko has no telnet class for the iFCP
routers nor for Brocade FOS, so each of those vendor modules defines one (a ``PatientTelnet``
subclass, telnet_login.py) and registers it in netmiko's dispatcher with ``@netmiko_device_type``:
``mcdata_eclipse_telnet``, ``nishan_ips3000_telnet`` and ``brocade_fos_telnet``. SSH platforms use
netmiko's stock ``cisco_nxos`` and ``brocade_fos``.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, ClassVar, TypeVar

import paramiko
from netmiko import ConnectHandler
from netmiko.base_connection import BaseConnection
from netmiko.exceptions import (
    NetmikoAuthenticationException,
    NetmikoTimeoutException,
    ReadException,
    ReadTimeout,
    WriteException,
)
from netmiko.ssh_dispatcher import CLASS_MAPPER
from netmiko.ssh_dispatcher import platforms as netmiko_platforms

from routers import hostkeys
from routers.drivers.base import (
    CommandRejected,
    GarbledOutput,
    LayoutError,
    LinkAbsent,
    LinkExists,
    ReadStats,
    RouterAuthError,
    RouterConnectError,
    RouterDriver,
    RouterError,
    RouterHostKeyError,
    RouterTarget,
    RouterTimeout,
)
from routers.drivers.telnet_login import last_line
from routers.drivers.together import send_and_split
from routers.platforms import Transport

MASK = "********"


Connection = TypeVar("Connection", bound=BaseConnection)
T = TypeVar("T")
NETMIKO_CLASSES: dict[str, type[BaseConnection]] = {}


def netmiko_device_type(name: str) -> Callable[[type[Connection]], type[Connection]]:
    """Register a connection class under `name` in netmiko.ConnectHandler's dispatcher (there is no
    public registry: #3273)."""

    def register(cls: type[Connection]) -> type[Connection]:
        NETMIKO_CLASSES[name] = cls
        CLASS_MAPPER[name] = cls
        if name not in netmiko_platforms:
            netmiko_platforms.append(name)
        return cls

    return register


LOGOUT_WAIT = 2.0  # s the device gets to end a session we logged out of


class NetmikoDriver(RouterDriver):
    """A RouterDriver speaking through one netmiko connection.

    Subclasses set ``device_types`` and implement the platform's operations with ``run()`` (one
    command, its output) and ``classify()`` (output -> success or the typed error).
    """

    device_types: ClassVar[dict[Transport, str]]
    # Patterns any platform may hit: the CLI reports a problem in a recognisable way.
    error_pattern: ClassVar[str] = r"(?m)^\s*(?:%|Error|ERROR|Invalid|Usage)"
    # Sent on close where the device has a logout command (None: netmiko's disconnect only).
    logout_command: ClassVar[str | None] = None
    # How the CLI refuses a show command it does not know (the reply is then not parsed).
    read_refusal: ClassVar[str] = r"(?m)^\s*% "
    # A question that may stop lines sent together (the pager): the session is then dropped.
    together_stop: ClassVar[str | None] = None

    def __init__(self, target: RouterTarget) -> None:
        super().__init__(target)
        self._conn: BaseConnection | None = None
        self._log = io.BytesIO()
        self._router_seconds = 0.0
        self._notes: list[str] = []
        self._reads = ReadStats()  # show commands sent since take_read_stats()
        self._ahead: dict[str, str] = {}  # replies of reads sent together, until the next exchange
        self._operations = 0  # public operations running (together.one_operation)

    # --- session -------------------------------------------------------------------------------
    def connection_args(self) -> dict[str, Any]:
        """Arguments for netmiko.ConnectHandler; subclasses may add to them."""
        target = self.target
        try:
            device_type = self.device_types[target.transport]
        except KeyError:
            raise RouterConnectError(f"{self.platform} cannot be reached over {target.transport}") from None
        args: dict[str, Any] = {
            "device_type": device_type,
            "host": target.host,
            "port": target.port,
            "username": target.username,
            "password": target.password,
            "conn_timeout": self.wait_limit(min(target.connect_timeout, 10.0)),
            "auth_timeout": self.wait_limit(target.connect_timeout),
            "banner_timeout": self.wait_limit(target.connect_timeout),
            "blocking_timeout": self.wait_limit(target.command_timeout),
            "session_log": self._log,
            "fast_cli": True,
            "allow_agent": False,
            "use_keys": False,
            "ssh_config_file": None,
        }
        if device_type in NETMIKO_CLASSES:
            args["login_patience"] = self.wait_limit(target.connect_timeout)
        if target.transport == Transport.SSH:
            args["system_host_keys"] = False
            args["alt_host_keys"] = False
        return args

    def connect(self) -> None:
        if self._conn is not None:
            return
        self._note(f"connect {self.target.transport} {self.target.host}:{self.target.port}")
        if self.target.transport != Transport.SSH:
            with self._router_call("connect"):
                self._conn = ConnectHandler(**self.connection_args())
            return
        target = self.target
        if not target.host_key:
            raise RouterHostKeyError(
                f"{target.name or target.host}: no SSH host key is trusted for this router yet (it presents "
                f"{self._presented_fingerprint()}); nothing was sent. Check that fingerprint against the router "
                f"itself, then: manage.py routers trust {target.name or '<router>'}")
        try:
            pinned = hostkeys.fingerprint(target.host_key)
        except hostkeys.HostKeyError as exc:
            raise RouterHostKeyError(f"{target.name or target.host}: the trusted host key is unusable: {exc}") from None
        with hostkeys.pinned_known_hosts(target.host, target.port, target.host_key) as known_hosts:
            args = {**self.connection_args(), "ssh_strict": True, "alt_host_keys": True, "alt_key_file": known_hosts}
            with self._router_call("connect"):
                try:
                    self._conn = ConnectHandler(**args)
                except Exception as exc:
                    bad = _bad_host_key(exc)
                    if bad is None:
                        raise
                    presented = hostkeys.fingerprint_of_blob(bad.key.asbytes())
                    raise RouterHostKeyError(
                        f"{target.name or target.host}: SSH host key changed: trusted {pinned}, presented "
                        f"{presented}; refusing to log in (nothing was sent). A machine in the middle, or a "
                        f"replaced router: if replaced, check the new key and run manage.py routers trust "
                        f"{target.name or '<router>'}") from None

    def _presented_fingerprint(self) -> str:
        try:
            return hostkeys.fingerprint(hostkeys.fetch(self.target.host, self.target.port,
                                                       self.wait_limit(min(self.target.connect_timeout, 10.0))))
        except (OSError, paramiko.SSHException, EOFError, hostkeys.HostKeyError) as exc:
            return f"a key that could not be read ({type(exc).__name__})"

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            self.logout(conn)
        except Exception:  # noqa: BLE001 - the session may already be gone; closing must not fail
            pass
        finally:
            try:
                conn.disconnect()
            except Exception:  # noqa: BLE001
                pass

    def logout(self, conn: BaseConnection) -> None:
        """Say goodbye politely where the device has a logout command, and wait (briefly) for the device
        to end the session: only then has it given the session back, and the session budget's slot may
        go to another login (a login right after our close could find the device still counting ours)."""
        if self.logout_command:
            conn.write_channel(self.logout_command + conn.RETURN)
            wait_closed_by_peer(conn, min(LOGOUT_WAIT, self.target.command_timeout))

    def is_alive(self) -> bool:
        conn = self._conn
        if conn is None:
            return False
        try:
            if conn.protocol == "telnet":
                conn.read_channel()  # raises EOFError once the device has closed the connection
            return bool(conn.is_alive())
        except (EOFError, OSError, ReadException, WriteException, paramiko.SSHException):
            return False

    def __enter__(self) -> NetmikoDriver:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- commands ------------------------------------------------------------------------------
    @property
    def conn(self) -> BaseConnection:
        if self._conn is None:
            raise RouterConnectError(f"{self.target.host}:{self.target.port}: not connected")
        return self._conn

    def prompt_pattern(self) -> str:
        """The device prompt, anchored at the end of the output."""
        return re.escape(self.conn.base_prompt) + r"\S*[#>]\s*$"

    def verify_echo(self, command: str) -> bool:
        """Whether to wait for the command's echo (netmiko cmd_verify); devices that wrap long echoes say no."""
        return True

    def command_guard(self) -> AbstractContextManager[None]:
        """Wrapped around every command's wait (SessionGuardedDriver: a closed session is a dropped connection)."""
        return nullcontext()

    def run(self, command: str, *, expect: str | None = None, timeout: float | None = None) -> str:
        """Send one command line; return its output (echo and prompt stripped)."""
        conn = self.conn
        with self._router_call(command), self.command_guard():
            return str(
                conn.send_command(
                    command,
                    expect_string=expect or self.prompt_pattern(),
                    read_timeout=self.wait_limit(timeout or self.target.command_timeout),
                    strip_prompt=True,
                    strip_command=True,
                    cmd_verify=self.verify_echo(command),
                )
            )

    @property
    def sends_together(self) -> bool:
        """Whether lines may go in one send (together.py): not where a pager would take a line sent ahead."""
        return False

    def together(self, command: str | None, reads: list[str]) -> str:
        """Send `command` (if any) and the read-only `reads` in one send, one round trip: return the
        command's reply and keep the reads' for the show() calls that follow at once. A session that
        may not send together sends the command alone and leaves the reads to those calls."""
        if command is None and all(read in self._ahead for read in reads):
            return ""
        if not self.sends_together:
            return "" if command is None else self.run(command)
        lines = [command, *reads] if command is not None else reads
        with self._router_call(lines[0]), self.command_guard():
            replies, _ = send_and_split(self.conn, lines, self.wait_limit(self.target.command_timeout),
                                        self.together_stop)
        self._ahead = dict(zip(reads, replies[-len(reads):], strict=True)) if reads else {}
        return replies[0] if command is not None else ""

    def read_command(self, command: str) -> str:
        """Send one read-only command and return its whole reply (platforms with a pager override it)."""
        return self.run(command)

    def show(self, command: str, parse: Callable[[str], T]) -> T:
        """Run a read-only command and parse its reply.

        A reply outside the layout `parse` knows is GarbledOutput naming the command and the line (a
        transient error: read again); the CLI refusing the command itself is CommandRejected.
        """
        started = time.monotonic()
        output = self._ahead.pop(command, None)
        if output is None:
            output = self.read_command(command)
        self._reads.add(command, len(output.encode()), time.monotonic() - started)
        if re.search(self.read_refusal, output):
            message = " ".join(line.strip() for line in output.splitlines() if line.strip() not in ("", "^"))[:300]
            raise CommandRejected(f"{command!r}: {message}", router_message=message, transcript=self._peek_transcript())
        try:
            return parse(output)
        except LayoutError as exc:
            raise GarbledOutput(f"{command}: {exc}", transcript=self._peek_transcript()) from None

    def take_read_stats(self) -> ReadStats:
        """The show commands sent since the last call: how many, the bytes they returned, the time."""
        stats, self._reads = self._reads, ReadStats()
        return stats

    def run_confirmed(self, command: str, question: str, answer: str = "y") -> str:
        """Send a command that may ask a question; answer it; return all output."""
        first = self.run(command, expect=rf"(?:{question})|(?:{self.prompt_pattern()})")
        if not re.search(question, first):
            return first
        return first + "\n" + self.run(answer)

    def classify(
        self,
        command: str,
        output: str,
        *,
        ok: str,
        exists: str | None = None,
        absent: str | None = None,
    ) -> str:
        """Map a reply to success or the typed error; anything unrecognised is GarbledOutput."""
        if re.search(ok, output):
            return output
        message = last_line(output)
        if exists and re.search(exists, output):
            raise LinkExists(f"{command!r}: {message}", router_message=message, transcript=self._peek_transcript())
        if absent and re.search(absent, output):
            raise LinkAbsent(f"{command!r}: {message}", router_message=message, transcript=self._peek_transcript())
        if re.search(self.error_pattern, output):
            raise CommandRejected(
                f"{command!r}: {message}", router_message=message, transcript=self._peek_transcript()
            )
        raise GarbledOutput(f"{command!r}: unrecognised reply {output[:200]!r}", transcript=self._peek_transcript())

    # --- journal support -----------------------------------------------------------------------
    def take_transcript(self) -> str:
        text = self._peek_transcript()
        # Start the session log afresh: a pooled session lives for days and must not keep them all.
        self._log.seek(0)
        self._log.truncate()
        self._notes.clear()
        return text

    def take_router_seconds(self) -> float:
        seconds, self._router_seconds = self._router_seconds, 0.0
        return seconds

    @property
    def router_seconds(self) -> float:
        return self._router_seconds

    def _peek_transcript(self) -> str:
        conn = self._conn
        if conn is not None and conn.session_log is not None:
            try:
                conn.session_log.flush()
            except Exception:  # noqa: BLE001 - a closed log still has what was written
                pass
        raw = self._log.getvalue().decode("utf-8", errors="replace")
        return self.mask(raw.replace("\r\n", "\n").replace("\r", "\n"))

    def mask(self, text: str) -> str:
        if self.target.password:
            text = text.replace(self.target.password, MASK)
        return text

    def _note(self, text: str) -> None:
        self._notes.append(text)

    @contextmanager
    def _router_call(self, what: str) -> Iterator[None]:
        """Time a wait on the router and turn netmiko/socket errors into our typed exceptions."""
        start = time.monotonic()
        self._ahead.clear()  # a reply read ahead stands only until the router is spoken to again
        try:
            yield
        except RouterError:
            raise
        except NetmikoAuthenticationException as exc:
            self._drop()
            raise RouterAuthError(self.mask(f"{what}: {exc}"), transcript=self._peek_transcript()) from exc
        except (ReadTimeout, TimeoutError) as exc:
            self._drop()
            raise RouterTimeout(self.mask(f"{what}: {_first_line(exc)}"), transcript=self._peek_transcript()) from exc
        except NetmikoTimeoutException as exc:
            self._drop()
            text = str(exc)
            cls = RouterConnectError if "TCP connection" in text or "refused" in text else RouterTimeout
            raise cls(self.mask(f"{what}: {_first_line(exc)}"), transcript=self._peek_transcript()) from exc
        except (EOFError, OSError, ReadException, WriteException, paramiko.SSHException, ValueError) as exc:
            # ValueError: netmiko's "Router prompt not found" after a garbled or cut-off prompt.
            self._drop()
            raise RouterConnectError(
                self.mask(f"{what}: {type(exc).__name__}: {_first_line(exc)}"), transcript=self._peek_transcript()
            ) from exc
        finally:
            self._router_seconds += time.monotonic() - start

    @contextmanager
    def _transcript_on_refusal(self) -> Iterator[None]:
        """A refusal decided from what was read (a zoning plan, say) carries the session text so far."""
        try:
            yield
        except CommandRejected as refused:
            refused.transcript = refused.transcript or self._peek_transcript()
            raise

    def _drop(self) -> None:
        """After a transport error the session state is unknown: never reuse it."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.disconnect()
            except Exception:  # noqa: BLE001
                pass


def _bad_host_key(exc: BaseException | None) -> paramiko.BadHostKeyException | None:
    """paramiko's host-key refusal, which netmiko re-raises as a timeout with the original as context."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, paramiko.BadHostKeyException):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def wait_closed_by_peer(conn: BaseConnection, timeout: float) -> bool:
    """Read until the device closes the session (telnet EOF; SSH channel EOF or close), at most
    `timeout` seconds; whether it did."""
    remote = conn.remote_conn
    if remote is None:  # netmiko has let go of it: nothing left to close
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if isinstance(remote, paramiko.Channel):
                if remote.closed or remote.eof_received:
                    return True
                if remote.recv_ready():
                    remote.recv(65535)
            else:
                remote.read_very_eager()  # EOFError once the device closed the connection
        except (EOFError, OSError):
            return True
        time.sleep(0.01)
    return False


# --- Guards for the SSH platforms (Brocade FOS, Cisco MDS) ------------------------------------------


@contextmanager
def closed_session_is_eof(driver: NetmikoDriver) -> Iterator[None]:
    """netmiko's SSH reads never notice the peer closing the channel; they wait out the read timeout.
    If the session is dead by then, report a dropped connection (EOFError -> RouterConnectError)."""
    try:
        yield
    except ReadTimeout as exc:
        if not driver.is_alive():
            raise EOFError(f"{driver.target.host}:{driver.target.port} closed the session") from exc
        raise


class SessionGuardedDriver(NetmikoDriver):
    """A NetmikoDriver whose every wait is bounded on SSH too.

    * Login: netmiko's post-login reads (``_test_channel_read``, terminal setup) wait a fixed 20 s
      each; during ``connect()`` they are bounded by the target's ``connect_timeout``.
    * A session-limit message seen during login is an auth error (the device refused us), not a
      timeout.
    * A command whose session was closed under it is a connect error, not a timeout.
    * A session dropped after an error is closed hard: netmiko's polite cleanup would wait on it.
    """

    session_limit_pattern: ClassVar[str] = r"(?i)session limit|maximum number of|sessions? .*exceeded"

    def connection_args(self) -> dict[str, Any]:
        args = super().connection_args()
        args["read_timeout_override"] = self.wait_limit(self.target.connect_timeout)
        return args

    def connect(self) -> None:
        if self._conn is not None:
            return
        try:
            super().connect()
        except (RouterConnectError, RouterTimeout) as exc:
            if re.search(self.session_limit_pattern, exc.transcript):
                message = next((line for line in exc.transcript.splitlines()
                                if re.search(self.session_limit_pattern, line)), "session limit")
                raise RouterAuthError(f"connect: {message.strip()}", transcript=exc.transcript) from exc
            raise
        self.conn.read_timeout_override = None  # from here on each command has its own timeout

    def command_guard(self) -> AbstractContextManager[None]:
        return closed_session_is_eof(self)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if conn.protocol == "ssh":
                conn.paramiko_cleanup()
            elif conn.remote_conn is not None:
                conn.remote_conn.close()
        except Exception:  # noqa: BLE001 - the session is being abandoned either way
            pass

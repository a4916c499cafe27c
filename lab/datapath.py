"""The lab's data path for the simulated routers: a TCP relay that carries block traffic only while a SAN
link is up.

A real iFCP/FCIP router forwards storage traffic between its sites once a link is configured. The
simulators only speak CLI, so this relay stands in for the forwarding plane: router A listens on its
data-path address and relays to router B's data-path address across the WAN; router B relays to the
storage target (nbdkit). While the link is down nothing listens, so a connection attempt is refused by
the kernel (ECONNREFUSED), and connections already open are cut, as they would be on a real link.

While down, the relay keeps its port bound but not listening: the port stays reserved for it (nobody
else can bind it without SO_REUSEADDR), and a SYN to a bound, non-listening port is answered with a
reset, which is exactly "connection refused".

Optionally the hop between the two routers is TLS (the security on/off comparison): both relays load
one throwaway self-signed certificate generated at run time with `cryptography`, each pins it as the
only trust anchor and the server requires it from the client (mutual TLS with a pinned key). Nothing is
ever written to the repository.

Relays only talk to loopback (127.0.0.0/8, ::1) and the lab network 198.18.0.0/15; any other
destination is refused when the relay is built. It belongs to the lab, which alone moves blocks through
the simulators; the simulators themselves (simulators/) know nothing of it. Run one in-process
(`DataPathRelay(...).start()`, as the tests do on loopback) or as a process inside a lab namespace:

    python -m lab.datapath --listen 198.18.1.11:10809 --target 198.18.2.11:10809 --link up
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import ipaddress
import json
import logging
import os
import signal
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulators.loop import BackgroundLoop

if TYPE_CHECKING:
    from routers.drivers.base import RouterLink

log = logging.getLogger(__name__)

ALLOWED_TARGETS = [ipaddress.ip_network(n) for n in ("127.0.0.0/8", "::1/128", "198.18.0.0/15")]
WRITE_HIGH_WATER = 1 << 20


class RefusedDestination(ValueError):
    """The relay was asked to forward somewhere outside loopback and the lab network."""


def check_relay_target(host: str, what: str = "target") -> None:
    """Relays forward only to loopback or the lab network 198.18.0.0/15; raise RefusedDestination otherwise."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise RefusedDestination(f"{what}: {host!r} is not an IP address (names are not resolved)") from None
    if not any(address in net for net in ALLOWED_TARGETS if net.version == address.version):
        raise RefusedDestination(f"{what}: {host} is outside loopback and the lab network 198.18.0.0/15")


def check_bind_host(host: str) -> None:
    """Relays listen where simulators may (simulators.server.check_bind_host), checked here without importing
    the simulator framework (asyncssh, telnetlib3): a relay starts in a fraction of the time."""
    check_relay_target(host, "listen")


def parse_address(value: str | tuple[str, int]) -> tuple[str, int]:
    host, port = value if isinstance(value, tuple) else _split(value)
    check_bind_host(host)
    return host, int(port)


# --- TLS ----------------------------------------------------------------------------------------------


def throwaway_certificate(directory: str | Path, common_name: str = "flexzone-datapath") -> tuple[Path, Path]:
    """Write a fresh self-signed EC certificate and key (mode 0600) into directory; return their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
        # A self-signed trust anchor: OpenSSL wants CA:TRUE on the certificate it pins.
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "datapath-cert.pem", directory / "datapath-key.pem"
    key_bytes = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key_bytes)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def tls_contexts(cert: str | Path, key: str | Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts for the router-to-router hop: mutual TLS, the one certificate pinned."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for ctx in (server, client):
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key)
        ctx.load_verify_locations(cafile=str(cert))
        ctx.verify_mode = ssl.CERT_REQUIRED
    # The peer is identified by the pinned key, not by a name: relays are addressed by lab IP.
    client.check_hostname = False
    return server, client


# --- the relay ------------------------------------------------------------------------------------------


@dataclass
class RelayStats:
    """Counters a lab run records beside its results."""

    accepted: int = 0
    upstream_failures: int = 0
    cut_by_link_down: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    link_changes: list[tuple[float, bool]] = field(default_factory=list)


class _Half(asyncio.Protocol):
    """One side of a relayed connection; copies what it reads to its peer, with flow control both ways."""

    def __init__(self, relay: DataPathRelay, inbound: bool) -> None:
        self.relay = relay
        self.inbound = inbound
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.pending: list[bytes] = []
        self.eof = False
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.inbound:
            self.relay._accepted(self)

    def data_received(self, data: bytes) -> None:
        if self.inbound:
            self.relay.stats.bytes_in += len(data)
        else:
            self.relay.stats.bytes_out += len(data)
        if self.peer is None or self.peer.transport is None:
            self.pending.append(data)
            return
        self.peer.transport.write(data)

    def eof_received(self) -> bool:
        self.eof = True
        peer = self.peer
        if peer is None or peer.transport is None:
            return True
        if peer.transport.can_write_eof():
            peer.transport.write_eof()
        else:
            peer.transport.close()
        if peer.eof:
            self.close()
            peer.close()
            return False
        # Keep our side open: the other direction may still be carrying the reply (TCP half-close).
        return True

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.relay._forget(self)
        if self.peer is not None:
            self.peer.close()

    def attach(self, peer: _Half) -> None:
        """Join two halves and forward what either read before the join (the server may speak first: NBD)."""
        self.peer, peer.peer = peer, self
        for source, sink in ((self, peer), (peer, self)):
            for chunk in source.pending:
                sink.transport.write(chunk)  # type: ignore[union-attr]
            source.pending.clear()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class DataPathRelay:
    """Relay TCP from `listen` to `target` while the link is up; refuse connections while it is down.

    `server_tls` makes the listening side TLS (router B, facing router A); `client_tls` makes the upstream
    side TLS (router A, facing router B). The link starts `up` or down and follows `set_link()`, a
    simulator (`follow()`) or both.
    """

    def __init__(self, listen: str | tuple[str, int], target: str | tuple[str, int], *, up: bool = False,
                 server_tls: ssl.SSLContext | None = None, client_tls: ssl.SSLContext | None = None,
                 connect_timeout: float = 10.0) -> None:
        self.listen_address = parse_address(listen)
        host, port = target if isinstance(target, tuple) else _split(target)
        check_relay_target(host)
        self.target = (host, int(port))
        self.server_tls = server_tls
        self.client_tls = client_tls
        self.connect_timeout = connect_timeout
        self.stats = RelayStats()
        self.address: tuple[str, int] | None = None
        self._want_up = up
        self._hold: socket.socket | None = None
        self._server: asyncio.AbstractServer | None = None
        self._halves: set[_Half] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop serving it (its own, or a caller's)
        self._background: BackgroundLoop | None = None  # its own, from start() to stop()
        self._switch: asyncio.Lock | None = None

    # --- public API --------------------------------------------------------------------------------
    @property
    def link_up(self) -> bool:
        return self._server is not None

    def set_link(self, up: bool) -> None:
        """Bring the data path up or down; safe from any thread; returns once the change took effect."""
        self._want_up = up
        loop = self._loop
        if loop is None or not loop.is_running():
            return
        if _running_loop() is loop:  # on the loop's thread: a simulator's state listener, the link file
            self._spawn(self._apply())
        else:
            asyncio.run_coroutine_threadsafe(self._apply(), loop).result(timeout=10)

    def follow(self, router: Any, peer: str | None = None) -> None:
        """Track a SimRouter: the data path is up while any of its links (to `peer`, if given) is up."""
        def on_links(links: list[RouterLink]) -> None:
            self.set_link(links_up(links, peer))

        router.add_state_listener(on_links)
        self.set_link(links_up(router.links(), peer))

    def start(self) -> tuple[str, int]:
        """Serve on a loop of its own in a background thread (simulators.loop, as the simulators do); return
        the bound (host, port)."""
        background = BackgroundLoop("datapath-relay")
        address = background.start(self.serve, self.aclose)
        self._background = background
        return address

    def stop(self) -> None:
        """Close the listener and every relayed connection, then end the background loop started by start()."""
        background, self._background = self._background, None
        if background is not None:
            background.stop(self.aclose)
            self._loop = None

    def __enter__(self) -> DataPathRelay:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def serve(self) -> tuple[str, int]:
        """Reserve the port, open it if the link is up; return the bound (host, port)."""
        self._loop = asyncio.get_running_loop()
        self._switch = asyncio.Lock()
        host, port = self.listen_address
        self._hold = _bound_socket(host, port)
        self.address = self._hold.getsockname()[:2]
        await self._apply()
        return self.address

    async def aclose(self) -> None:
        await self._close_listener(cut=True)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        if self._hold is not None:
            self._hold.close()
            self._hold = None

    # --- internals ---------------------------------------------------------------------------------
    async def _apply(self) -> None:
        assert self._switch is not None
        async with self._switch:
            if self._want_up and self._server is None:
                await self._open_listener()
            elif not self._want_up and self._server is not None:
                await self._close_listener(cut=True)

    async def _open_listener(self) -> None:
        assert self.address is not None
        sock = _bound_socket(*self.address)
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Half(self, inbound=True), sock=sock, ssl=self.server_tls, backlog=128)
        self.stats.link_changes.append((asyncio.get_running_loop().time(), True))
        log.info("data path %s:%s -> %s:%s up", *self.address, *self.target)

    async def _close_listener(self, *, cut: bool) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        self.stats.link_changes.append((asyncio.get_running_loop().time(), False))
        if cut:
            # The link went away: open sessions die as they would on a real router (no goodbye).
            for half in list(self._halves):
                if half.inbound:
                    self.stats.cut_by_link_down += 1
                half.abort()
        log.info("data path %s:%s down", *(self.address or ("?", 0)))

    def _accepted(self, inbound: _Half) -> None:
        self.stats.accepted += 1
        self._halves.add(inbound)
        assert inbound.transport is not None
        inbound.transport.pause_reading()
        self._spawn(self._connect_upstream(inbound))

    async def _connect_upstream(self, inbound: _Half) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, outbound = await asyncio.wait_for(
                loop.create_connection(lambda: _Half(self, inbound=False), *self.target, ssl=self.client_tls,
                                       server_hostname="flexzone-datapath" if self.client_tls else None),
                self.connect_timeout)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            self.stats.upstream_failures += 1
            log.warning("data path: upstream %s:%s failed: %s", *self.target, exc)
            inbound.abort()
            return
        if inbound.closed:
            outbound.close()
            return
        self._halves.add(outbound)
        inbound.attach(outbound)
        assert inbound.transport is not None
        inbound.transport.resume_reading()

    def _forget(self, half: _Half) -> None:
        self._halves.discard(half)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def links_up(links: list[RouterLink], peer: str | None = None) -> bool:
    """True when some link (to `peer`, if given) is up."""
    return any(link.state == "up" and (peer is None or link.remote_ip == peer) for link in links)


def _split(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address: expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _bound_socket(host: str, port: int) -> socket.socket:
    check_bind_host(host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # Both the reserving socket and the listener carry SO_REUSEADDR so they may share the port (Linux allows
    # it while at most one of them listens); anyone else is kept out.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


# --- command line -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lab.datapath", description=__doc__.split("\n")[0])
    parser.add_argument("--listen", required=True, metavar="HOST:PORT", help="data-path address of this router")
    parser.add_argument("--target", required=True, metavar="HOST:PORT", help="peer router's data path or storage")
    parser.add_argument("--link", default="up",
                        help="up, down, or file:PATH (the file holds 'up' or 'down' and is polled every 50 ms)")
    parser.add_argument("--tls-listen", action="store_true", help="accept TLS (the far router of an encrypted hop)")
    parser.add_argument("--tls-upstream", action="store_true", help="speak TLS to the target (the near router)")
    parser.add_argument("--tls-cert", type=Path, help="PEM certificate shared by both ends of the encrypted hop")
    parser.add_argument("--tls-key", type=Path, help="its PEM private key")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="stop when the process that started this relay goes away (like nbdkit's option)")
    return parser


async def _watch_parent(stop: asyncio.Event, parent: int) -> None:
    """Set `stop` once this process is re-parented (its parent died): orphans must not keep a port."""
    while not stop.is_set():
        if os.getppid() != parent:
            stop.set()
            return
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except TimeoutError:
            pass


async def _follow_file(relay: DataPathRelay, path: Path, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            wanted = path.read_text().strip() == "up"
        except OSError:
            wanted = False
        if wanted != relay.link_up:
            relay.set_link(wanted)
            await asyncio.sleep(0)
        try:
            await asyncio.wait_for(stop.wait(), 0.05)
        except TimeoutError:
            pass


async def run(args: argparse.Namespace, ready: Callable[[dict[str, Any]], None] | None = None) -> int:
    # main() reads the parent first thing; if it is already gone, getppid() names init and we stop at once.
    parent = getattr(args, "parent_pid", None) or os.getppid()
    if args.exit_with_parent and parent == 1:
        return 0
    server_tls = client_tls = None
    if args.tls_listen or args.tls_upstream:
        if not (args.tls_cert and args.tls_key):
            raise ValueError("TLS needs --tls-cert and --tls-key")
        server, client = tls_contexts(args.tls_cert, args.tls_key)
        server_tls = server if args.tls_listen else None
        client_tls = client if args.tls_upstream else None
    link_file = Path(args.link[5:]) if args.link.startswith("file:") else None
    if link_file is None and args.link not in ("up", "down"):
        raise ValueError(f"--link: expected up, down or file:PATH, got {args.link!r}")
    relay = DataPathRelay(args.listen, args.target, up=args.link == "up", server_tls=server_tls,
                          client_tls=client_tls)
    address = await relay.serve()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    watcher = loop.create_task(_follow_file(relay, link_file, stop)) if link_file else None
    orphan_guard = loop.create_task(_watch_parent(stop, parent)) if args.exit_with_parent else None
    info = {"listen": list(address), "target": list(relay.target), "pid": os.getpid(),
            "tls": "listen" if server_tls else "upstream" if client_tls else "off"}
    print(json.dumps(info), flush=True)
    if ready:
        ready(info)
    await stop.wait()
    for task in (watcher, orphan_guard):
        if task:
            await task
    await relay.aclose()
    stats = relay.stats
    print(json.dumps({"accepted": stats.accepted, "bytes_in": stats.bytes_in, "bytes_out": stats.bytes_out,
                      "upstream_failures": stats.upstream_failures}), file=sys.stderr, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parent = os.getppid()
    args = build_parser().parse_args(argv)
    args.parent_pid = parent
    try:
        return asyncio.run(run(args))
    except (ValueError, OSError) as exc:
        print(f"lab.datapath: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

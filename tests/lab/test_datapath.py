"""The simulated routers' data path: a relay that forwards while the link is up and refuses while it is down."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from netmiko._telnetlib import telnetlib

from lab.datapath import (
    DataPathRelay,
    RefusedDestination,
    check_relay_target,
    throwaway_certificate,
    tls_contexts,
)
from simulators.server import SimRouter

GREETING = b"NBDMAGIC-greeting"


class EchoServer:
    """A loopback TCP server that sends a greeting first (as NBD servers do), then echoes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            conn.sendall(GREETING)
            while data := conn.recv(65536):
                conn.sendall(data)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def relays() -> Iterator[list[DataPathRelay]]:
    started: list[DataPathRelay] = []
    yield started
    for relay in started:
        relay.stop()


def start(relays: list[DataPathRelay], target: tuple[str, int], **kwargs) -> DataPathRelay:
    relay = DataPathRelay(("127.0.0.1", 0), target, **kwargs)
    relay.start()
    relays.append(relay)
    return relay


def round_trip(address: tuple[str, int], payload: bytes) -> bytes:
    with socket.create_connection(address, timeout=5) as conn:
        received = b""
        sender = threading.Thread(target=conn.sendall, args=(payload,), daemon=True)
        sender.start()
        while len(received) < len(GREETING) + len(payload):
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            received += chunk
        sender.join(5)
        return received


def test_relay_refuses_connections_while_the_link_is_down(echo, relays):
    relay = start(relays, echo.address, up=False)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(relay.address, timeout=5)


def test_relay_forwards_both_ways_once_the_link_comes_up(echo, relays):
    relay = start(relays, echo.address, up=False)
    relay.set_link(True)
    payload = bytes(range(256)) * 4096
    assert round_trip(relay.address, payload) == GREETING + payload
    assert relay.stats.bytes_in == len(payload)


def test_relay_forwards_the_greeting_a_server_sends_before_the_client_speaks(echo, relays):
    relay = start(relays, echo.address, up=True)
    with socket.create_connection(relay.address, timeout=5) as conn:
        assert conn.recv(len(GREETING)) == GREETING


def test_taking_the_link_down_cuts_open_connections_and_refuses_new_ones(echo, relays):
    relay = start(relays, echo.address, up=True)
    conn = socket.create_connection(relay.address, timeout=5)
    assert conn.recv(len(GREETING)) == GREETING
    relay.set_link(False)
    try:
        assert conn.recv(10) == b""
    except ConnectionResetError:
        pass
    finally:
        conn.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(relay.address, timeout=5)
    relay.set_link(True)
    assert round_trip(relay.address, b"again") == GREETING + b"again"


def test_two_relays_chain_like_router_a_and_router_b(echo, relays):
    router_b = start(relays, echo.address, up=True)
    router_a = start(relays, router_b.address, up=True)
    assert round_trip(router_a.address, b"x" * 100_000) == GREETING + b"x" * 100_000
    router_b.set_link(False)
    # A still listens, but the far side refuses: the client's connection is closed without data.
    with socket.create_connection(router_a.address, timeout=5) as conn:
        assert conn.recv(10) == b""
    assert router_a.stats.upstream_failures == 1


@pytest.mark.parametrize("host", ["10.0.8.50", "8.8.8.8", "198.20.0.1", "192.0.2.1", "fe80::1", "storage.example"])
def test_relay_refuses_destinations_outside_loopback_and_the_lab(host):
    with pytest.raises(RefusedDestination):
        check_relay_target(host)
    with pytest.raises(RefusedDestination):
        DataPathRelay(("127.0.0.1", 0), (host, 10809))


@pytest.mark.parametrize("host", ["127.0.0.1", "127.9.9.9", "::1", "198.18.2.20", "198.19.255.254"])
def test_relay_accepts_loopback_and_lab_destinations(host):
    check_relay_target(host)


def test_relay_will_not_listen_outside_loopback_and_the_lab():
    with pytest.raises(ValueError):
        DataPathRelay(("0.0.0.0", 0), ("127.0.0.1", 10809))


def test_tls_between_the_routers_carries_the_data(echo, relays, tmp_path):
    server_ctx, client_ctx = tls_contexts(*throwaway_certificate(tmp_path))
    router_b = start(relays, echo.address, up=True, server_tls=server_ctx)
    router_a = start(relays, router_b.address, up=True, client_tls=client_ctx)
    payload = b"secret block" * 50_000
    assert round_trip(router_a.address, payload) == GREETING + payload


def test_tls_router_rejects_a_peer_without_the_pinned_certificate(echo, relays, tmp_path):
    server_ctx, _ = tls_contexts(*throwaway_certificate(tmp_path / "ours"))
    _, stranger_ctx = tls_contexts(*throwaway_certificate(tmp_path / "theirs"))
    router_b = start(relays, echo.address, up=True, server_tls=server_ctx)
    with socket.create_connection(router_b.address, timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            with stranger_ctx.wrap_socket(raw) as tls:
                tls.recv(10)
    # and the plain-text client of a TLS listener gets nothing from the target
    with socket.create_connection(router_b.address, timeout=5) as raw:
        raw.sendall(b"hello\r\n" * 100)
        try:
            assert GREETING not in raw.recv(100)
        except ConnectionResetError:
            pass


def test_relay_follows_the_simulated_routers_links(echo, relays):
    sim = SimRouter("mcdata_eclipse", telnet=("127.0.0.1", 0), scale=0.0, username="admin", password="pw")
    sim.start()
    try:
        relay = start(relays, echo.address)
        relay.follow(sim, peer="198.18.2.11")
        assert not relay.link_up
        client = telnetlib.Telnet(*sim.addresses["telnet"], timeout=5)
        client.read_until(b"Username: ", 5)
        client.write(b"admin\r")
        client.read_until(b"Password: ", 5)
        client.write(b"pw\r")
        client.read_until(b"# ", 5)
        client.write(b"ifcp session add fc-port 1 zone 2 remote-gateway 198.18.9.9\r\n")
        client.read_until(b"# ", 5)
        assert not relay.link_up  # a link to another peer does not carry this data path
        client.write(b"ifcp session add fc-port 1 zone 3 remote-gateway 198.18.2.11\r\n")
        client.read_until(b"# ", 5)
        client.close()
        assert relay.link_up
        assert round_trip(relay.address, b"data") == GREETING + b"data"
    finally:
        sim.stop()


def test_relay_process_follows_a_link_file_and_reports_its_address(echo, tmp_path):
    link = tmp_path / "link"
    link.write_text("down")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "lab.datapath", "--listen", "127.0.0.1:0", "--target",
                             f"{echo.address[0]}:{echo.address[1]}", "--link", f"file:{link}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        info = json.loads(proc.stdout.readline())
        address = tuple(info["listen"])
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(address, timeout=5)
        link.write_text("up\n")
        deadline = time.monotonic() + 10
        while True:
            try:
                assert round_trip(address, b"via file") == GREETING + b"via file"
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0


def test_relay_process_refuses_a_destination_outside_the_lab():
    proc = subprocess.run([sys.executable, "-m", "lab.datapath", "--listen", "127.0.0.1:0", "--target",
                           "10.0.8.50:10809"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 2
    assert "outside loopback and the lab network" in proc.stderr


def test_relay_process_started_with_exit_with_parent_stops_when_its_parent_dies(echo):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # A parent shell starts the relay, prints its PID and exits a moment later: the relay is orphaned.
    script = (f"{sys.executable} -m lab.datapath --listen 127.0.0.1:0 --target "
              f"{echo.address[0]}:{echo.address[1]} --exit-with-parent >/dev/null 2>&1 & echo $!; sleep 1")
    pid = int(subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env, timeout=30).stdout)
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, "the orphaned relay kept running"
        time.sleep(0.1)

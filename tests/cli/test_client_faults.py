"""The CLI against a server that misbehaves: every failure is one line with an exit code, never a
traceback, and a dropped connection is not mistaken for a refused certificate. The servers here are
small TLS servers standing in for the service (or what sits in front of it); the CLI is the unit."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cli import client as client_module
from cli.config import Config, write_config
from cli.errors import UNREACHABLE, CliError


@contextmanager
def tls_server(api_pki, answer: Callable[[ssl.SSLSocket, bytes], None]) -> Iterator[tuple[str, list[str]]]:
    """A TLS server (the test CA's server certificate, client certificates required) that hands each
    request to `answer`; yields its URL and the request lines it received."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=api_pki.ca_file)
    context.load_cert_chain(*api_pki.pair("server"))
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    request = b""
                    while b"\r\n\r\n" not in request:
                        chunk = tls.recv(4096)
                        if not chunk:
                            break
                        request += chunk
                    seen.append(request.split(b"\r\n", 1)[0].decode())
                    answer(tls, request)
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}", seen
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def reset(tls: ssl.SSLSocket, _request: bytes) -> None:
    """Drop the connection with a TCP reset, as a restarting server or a proxy may."""
    tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def config_for(tmp_path, api_pki, url: str):
    cert, key = api_pki.pair("alice")
    return write_config(tmp_path / "c.toml", server=url, ca=api_pki.ca_file, cert=cert, key=key)


def only_line(result) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.splitlines()
    return line


def test_a_connection_reset_after_the_handshake_is_not_a_refused_certificate(run_cli, api_pki, tmp_path):
    with tls_server(api_pki, reset) as (url, _seen):
        result = run_cli("flexzone", "--zones", config=config_for(tmp_path, api_pki, url))
    assert result.returncode == 4, result.stderr
    line = only_line(result)
    assert "closed the connection before answering" in line and "certificate" not in line


def test_a_broken_chunked_reply_is_one_line_exit_4(run_cli, api_pki, tmp_path):
    def broken(tls: ssl.SSLSocket, _request: bytes) -> None:
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"zz\r\n{\"count\"\r\n")

    with tls_server(api_pki, broken) as (url, _seen):
        result = run_cli("flexzone", "--zones", config=config_for(tmp_path, api_pki, url))
    assert result.returncode == 4, result.stderr
    assert "was cut off or malformed" in only_line(result)


@pytest.mark.parametrize("server", ["https://[::1", "https://127.0.0.1:99999", "https://exa mple.test",
                                    "https://127.0.0.1:8443?x=1"])
def test_an_invalid_server_url_is_a_usage_error_not_a_traceback(run_cli, api_pki, tmp_path, server):
    result = run_cli("flexzone", "--zones", config=config_for(tmp_path, api_pki, server))
    assert result.returncode == 2, result.stderr
    assert "server must be an https:// URL" in only_line(result)


def test_links_the_server_gives_keep_the_path_prefix_once(run_cli, api_pki, tmp_path):
    def paginated(tls: ssl.SSLSocket, request: bytes) -> None:
        path = request.split(b" ", 2)[1].decode()
        host = request.split(b"Host: ", 1)[1].split(b"\r\n", 1)[0].decode()
        nxt = f"https://{host}/flexzone/api/zones/?page=2" if "page=2" not in path else None
        zone = {"id": 2 if nxt is None else 1, "zone_id": 2 if nxt is None else 1, "description": ""}
        body = json.dumps({"count": 2, "next": nxt, "previous": None, "results": [zone]}).encode()
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "
                    + str(len(body)).encode() + b"\r\n\r\n" + body)

    with tls_server(api_pki, paginated) as (url, seen):
        result = run_cli("flexzone", "--zones", "--json", config=config_for(tmp_path, api_pki, url + "/flexzone"))
    assert result.returncode == 0, result.stderr
    assert [zone["zone_id"] for zone in json.loads(result.stdout)] == [1, 2]
    assert seen == ["GET /flexzone/api/zones/ HTTP/1.1", "GET /flexzone/api/zones/?page=2 HTTP/1.1"]


def test_a_handshake_that_never_comes_reports_the_time_waited_not_the_configured_limit(api_pki, tmp_path, monkeypatch):
    """A server whose socket listens but whose process has not yet accepted (a gunicorn worker still
    booting) leaves the TLS handshake hanging; urllib3 calls that a read timeout after the connect limit.
    The message gives the seconds waited, not the read limit of the configuration."""
    monkeypatch.setattr(client_module, "CONNECT_TIMEOUT", 0.5)
    listener = socket.create_server(("127.0.0.1", 0))  # the kernel completes TCP connects; nothing accepts
    try:
        url = f"https://127.0.0.1:{listener.getsockname()[1]}"
        cert, key = api_pki.pair("alice")
        client = client_module.Client(Config(server=url, ca=Path(api_pki.ca_file), cert=Path(cert), key=Path(key),
                                             timeout=120.0))
        with pytest.raises(CliError) as raised:
            client.request("GET", "/api/zones/")
    finally:
        listener.close()
    message = str(raised.value)
    assert message.startswith(f"{url} did not answer within 0."), message
    assert "120" not in message
    assert raised.value.exit_code == UNREACHABLE

"""The nginx alternative: behind a proxy, gunicorn serves plain HTTP on a unix socket and the app
believes X-Client-Verify / X-Client-Cert only there, and only with the shared secret."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import pytest
from cryptography.hazmat.primitives import serialization

from registry.readiness import database_url
from tests.support.servers import ROOT

SECRET = "proxy-hop-secret-for-this-test"


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


@pytest.fixture
def proxied_server(cast, api_pki, tmp_path):

    sock = tmp_path / "api.sock"
    log = tmp_path / "gunicorn.log"
    env = dict(os.environ, DATABASE_URL=database_url(), FLEXZONE_DB_CONN_MAX_AGE="0",
               FLEXZONE_PKI_DIR=str(api_pki.dir), FLEXZONE_OPS_QUEUE="manual", FLEXZONE_API_WORKERS="1",
               FLEXZONE_TRUST_PROXY_HEADERS="1", FLEXZONE_PROXY_SECRET=SECRET)
    with open(log, "wb") as handle:
        process = subprocess.Popen([sys.executable, "manage.py", "serve", "--bind", f"unix:{sock}"], cwd=ROOT,
                                   env=env, stdout=handle, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        yield str(sock)
    finally:
        process.terminate()
        process.wait(timeout=10)


def get_as(sock: str, headers: dict) -> tuple[int, str]:
    connection = UnixHTTPConnection(sock)
    connection.request("GET", "/api/sites/", headers=headers)
    response = connection.getresponse()
    return response.status, response.read().decode()


def proxy_headers(api_pki, name: str, secret: str | None = SECRET) -> dict:
    pem = api_pki.certs[name].public_bytes(serialization.Encoding.PEM).decode()
    headers = {"X-Client-Verify": "SUCCESS", "X-Client-Cert": quote(pem)}
    if secret is not None:
        headers["X-Flexzone-Proxy-Secret"] = secret
    return headers


def test_the_proxys_headers_are_believed_on_the_unix_socket_with_the_secret(proxied_server, api_pki):
    status, body = get_as(proxied_server, proxy_headers(api_pki, "alice"))
    assert status == 200 and "primary-site" in body


def test_without_the_secret_the_headers_are_ignored(proxied_server, api_pki):
    assert get_as(proxied_server, proxy_headers(api_pki, "alice", secret=None))[0] == 401
    assert get_as(proxied_server, proxy_headers(api_pki, "alice", secret="guessed"))[0] == 401


def test_a_failed_verification_is_not_an_identity(proxied_server, api_pki):
    headers = proxy_headers(api_pki, "alice")
    headers["X-Client-Verify"] = "FAILED:certificate revoked"
    assert get_as(proxied_server, headers)[0] == 401


@pytest.mark.parametrize("database", ["migrated", "missing"])
def test_serve_refuses_a_tcp_port_when_proxy_headers_are_trusted(db, database):
    # A wrong command line is reported as such whatever the database holds: before the database check,
    # which on a machine without the named database would otherwise speak first.
    env = dict(os.environ, FLEXZONE_TRUST_PROXY_HEADERS="1", FLEXZONE_PROXY_SECRET=SECRET)
    if database == "missing":
        env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/flexzone_no_such_database"
    result = subprocess.run(
        [sys.executable, "manage.py", "serve", "--bind", "127.0.0.1:0"], cwd=ROOT, capture_output=True, text=True,
        env=env, timeout=60,
    )
    assert result.returncode != 0
    assert "bind a unix socket" in result.stderr


@pytest.mark.parametrize("secret", [None, "", "short"])
def test_proxy_mode_refuses_to_start_without_its_secret(secret):
    env = {key: value for key, value in os.environ.items() if key != "FLEXZONE_PROXY_SECRET"}
    env["FLEXZONE_TRUST_PROXY_HEADERS"] = "1"
    if secret is not None:
        env["FLEXZONE_PROXY_SECRET"] = secret
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True,
                            text=True, env={**env, "DJANGO_SETTINGS_MODULE": "flexzone.settings"}, timeout=60)
    assert result.returncode != 0
    assert "FLEXZONE_PROXY_SECRET" in result.stderr and "FLEXZONE_TRUST_PROXY_HEADERS" in result.stderr

"""The gunicorn ssl_context hook, driven directly with real TLS handshakes over a socket pair."""

from __future__ import annotations

import os
import socket
import ssl
import threading

import pytest

from access import pki
from serving import gunicorn_conf


@pytest.fixture
def ca(tmp_path, settings):
    authority = pki.init_ca(tmp_path)
    authority.issue(pki.SERVER, server=True)
    for name in ("alice", "bob"):
        authority.issue(name)
    settings.FLEXZONE_TLS_CRL = tmp_path / pki.CRL
    gunicorn_conf._cache.update(key=None, context=None)
    return authority


def default_factory(directory):
    """What gunicorn's default factory builds from certfile/keyfile/ca_certs/cert_reqs."""

    def factory() -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(directory / pki.CA_CERT))
        context.load_cert_chain(directory / "server.pem", directory / "server.key")
        context.verify_mode = ssl.CERT_REQUIRED
        return context

    return factory


def handshake(server_context: ssl.SSLContext, directory, client: str) -> str:
    """'ok' if the server accepted `client`, else the server's verification error."""
    server_sock, client_sock = socket.socketpair()
    outcome: dict[str, str] = {}

    def serve() -> None:
        try:
            with server_context.wrap_socket(server_sock, server_side=True) as tls:
                tls.sendall(b"ok")
                outcome["server"] = "ok"
        except (ssl.SSLError, OSError) as exc:
            outcome["server"] = getattr(exc, "verify_message", None) or str(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    context = ssl.create_default_context(cafile=str(directory / pki.CA_CERT))
    context.load_cert_chain(directory / f"{client}.pem", directory / f"{client}.key")
    try:
        with context.wrap_socket(client_sock, server_hostname="127.0.0.1") as tls:
            tls.recv(2)
    except (ssl.SSLError, OSError):
        pass
    thread.join(10)
    return outcome["server"]


def test_the_context_is_reused_until_the_crl_file_changes(ca, tmp_path):
    factory = default_factory(tmp_path)
    first = gunicorn_conf.ssl_context(None, factory)
    assert gunicorn_conf.ssl_context(None, factory) is first
    assert handshake(first, tmp_path, "bob") == "ok"
    ca.revoke("bob")
    second = gunicorn_conf.ssl_context(None, factory)
    assert second is not first
    assert handshake(second, tmp_path, "bob") == "certificate revoked"
    assert handshake(second, tmp_path, "alice") == "ok"


def test_a_missing_or_corrupt_crl_refuses_everyone_until_a_good_one_returns(ca, tmp_path):
    factory = default_factory(tmp_path)
    good = (tmp_path / pki.CRL).read_bytes()
    os.unlink(tmp_path / pki.CRL)
    assert handshake(gunicorn_conf.ssl_context(None, factory), tmp_path, "alice") == "unable to get certificate CRL"
    (tmp_path / pki.CRL).write_text("not a CRL\n")
    assert handshake(gunicorn_conf.ssl_context(None, factory), tmp_path, "alice") == "unable to get certificate CRL"
    pki.write_atomically(tmp_path / pki.CRL, good)
    assert handshake(gunicorn_conf.ssl_context(None, factory), tmp_path, "alice") == "ok"

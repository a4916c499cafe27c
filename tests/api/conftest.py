"""A real API server for the API tests: gunicorn over mutual TLS, a per-session PKI, the test database.

The PKI is generated into a temporary directory once per session. gunicorn (`manage.py serve`) runs
as a subprocess on a free loopback port and is pointed at pytest-django's test database, so the
tests that talk to it use transactional tests: what they write is committed and the server sees it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from cryptography import x509

from access import pki
from registry.readiness import database_url

ROOT = Path(__file__).resolve().parents[2]
ADMIN_PK = 987_654  # far from the ids the property-based run guesses, so it rarely deletes its own admin


class PKI:
    """The session's certificates: the cast (alice, bob, an admin) and the ones meant to be refused."""

    def __init__(self, directory: Path, foreign: Path) -> None:
        self.dir = directory
        self.ca = pki.init_ca(directory, "flexzone API CA")
        self.ca.issue(pki.SERVER, server=True)
        self.certs: dict[str, x509.Certificate] = {}
        for name in ("alice", "bob", "root", "carol", "eve", "dave"):
            self.certs[name] = self.ca.issue(name)
        past = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
        self.certs["expired"] = self.ca.issue("expired", not_before=past, not_after=past + dt.timedelta(days=1))
        # mallory: another CA with the *same* CA name issues a certificate with alice's exact subject.
        other = pki.init_ca(foreign, "flexzone API CA")
        self.certs["mallory"] = other.issue("mallory", subject=self.certs["alice"].subject)
        self.foreign = foreign
        # stranger: an unrelated CA with its own name.
        self.certs["stranger"] = pki.init_ca(foreign / "other", "Some Other CA").issue("stranger")

    def pair(self, name: str) -> tuple[str, str]:
        directory = {"mallory": self.foreign, "stranger": self.foreign / "other"}.get(name, self.dir)
        return str(directory / f"{name}.pem"), str(directory / f"{name}.key")

    @property
    def ca_file(self) -> str:
        return str(self.dir / pki.CA_CERT)


@pytest.fixture(scope="session")
def api_pki(tmp_path_factory) -> PKI:
    return PKI(tmp_path_factory.mktemp("pki"), tmp_path_factory.mktemp("foreign-pki"))


class APIServer:
    def __init__(self, process: subprocess.Popen, url: str, log: Path, pki_: PKI) -> None:
        self.process, self.url, self.log, self.pki = process, url, log, pki_

    def session(self, name: str | None) -> requests.Session:
        """A keep-alive HTTPS session presenting `name`'s certificate (None: no certificate)."""
        session = requests.Session()
        # Session.verify loses to REQUESTS_CA_BUNDLE from the environment unless trust_env is off.
        session.trust_env = False
        session.verify = self.pki.ca_file
        if name is not None:
            session.cert = self.pki.pair(name)
        return session


@contextmanager
def running_server(log: Path, **env_overrides: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """`manage.py serve` on a free loopback port against pytest-django's test database, with the
    environment's overrides; yields (process, URL) and stops it after."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.fail("the server tests need PostgreSQL: set DATABASE_URL=postgres://... (make test does)")
    env = dict(
        os.environ,
        DATABASE_URL=database_url(),
        FLEXZONE_DB_CONN_MAX_AGE="0",
        # gunicorn 27 opens a control socket under $HOME/.gunicorn: keep each server's apart.
        HOME=str(log.parent),
        **env_overrides,
    )
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--bind", "127.0.0.1:0"],
            cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
        )
    try:
        yield process, _wait_for_listening(process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def api_server(django_db_setup, django_db_blocker, api_pki, tmp_path_factory) -> APIServer:
    log = tmp_path_factory.mktemp("api-server") / "gunicorn.log"
    env = {"FLEXZONE_PKI_DIR": str(api_pki.dir), "FLEXZONE_OPS_QUEUE": "manual", "FLEXZONE_API_WORKERS": "1",
           "FLEXZONE_API_KEEPALIVE": "30", "FLEXZONE_API_MAX_WAIT": "5"}
    with running_server(log, **env) as (process, url):
        yield APIServer(process, url, log, api_pki)


def _wait_for_listening(process: subprocess.Popen, log: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"Listening at: https://(127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
        if found:
            return f"https://{found.group(1)}"
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"gunicorn did not start:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def cast(transactional_db, demo, api_pki):
    """The demo registry plus the principals: alice (operator, both demo sites, zones 1-3), bob
    (viewer), root (admin), carol (operator scoped to primary-site and zone 1 only), dave (operator)."""
    from access.models import Principal
    from access.principals import register

    register(api_pki.certs["alice"], "alice", "operator", sites=["primary-site", "remote-site"], zones=[1, 2, 3])
    register(api_pki.certs["bob"], "bob", "viewer")
    root = register(api_pki.certs["root"], "root", "admin", all_sites=True, all_zones=True)
    Principal.objects.filter(pk=root.pk).update(id=ADMIN_PK)
    register(api_pki.certs["carol"], "carol", "operator", sites=["primary-site"], zones=[1])
    register(api_pki.certs["dave"], "dave", "operator", sites=["primary-site", "remote-site"], zones=[1, 2, 3])
    register(api_pki.certs["expired"], "expired", "operator", all_sites=True, all_zones=True)
    return demo


@pytest.fixture
def call(api_server):
    """call(principal, method, path, **requests kwargs): a request over mTLS as that principal (one
    session per principal, so its TLS connection is reused)."""
    sessions = {}

    def call(name: str, method: str, path: str, **kwargs):
        session = sessions.setdefault(name, api_server.session(name))
        return session.request(method, f"{api_server.url}{path}", timeout=20, **kwargs)

    return call

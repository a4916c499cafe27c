"""A real API server for the tests: gunicorn (`manage.py serve`) over mutual TLS, a per-session PKI, the test
database; and the settings of a server that runs operations against simulated routers.

The server runs as a subprocess on a free loopback port and is pointed at pytest-django's test database, so
the tests that talk to it use transactional tests: what they write is committed and the server sees it.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from cryptography import x509

from access import pki
from lab.deployment import wait_until_serving
from registry.readiness import database_url
from tests.support.sims import play_the_demo

ROOT = Path(__file__).resolve().parents[2]
ADMIN_PK = 987_654  # far from the ids the property-based run guesses, so it rarely deletes its own admin

# A server that runs operations itself (thread queue), quickly, against simulated routers.
FAST_OPERATIONS = {
    "FLEXZONE_OPS_QUEUE": "thread",
    "FLEXZONE_OPS_POOL": "false",
    "FLEXZONE_OPS_BACKOFF": "0.05",
    "FLEXZONE_OPS_BACKOFF_MAX": "0.2",
    "FLEXZONE_OPS_MAX_ATTEMPTS": "2",
    "FLEXZONE_OPS_TOTAL_TIMEOUT": "20",
    "FLEXZONE_OPS_ROUTER_WAIT": "10",
    "FLEXZONE_OPS_SAVE_CONFIG": "each",
    "FLEXZONE_OPS_HEARTBEAT": "0.2",
    "FLEXZONE_OPS_STALE_AFTER": "5",
}
# A server started for a session shares the test database with every later test, whose operations
# and leases are not its own (the soak abandons operations and lets leases run out on purpose): its
# reaper and lease sweep would take them over, from a process that cannot even read those routers'
# passwords. No test here needs them, so they wait a day; so does the ledger's seal, which would write
# into tables a test is flushing (a TRUNCATE deadlocked with it) and seal other tests' rows.
IDLE_CHORES = {"FLEXZONE_OPS_REAP_EVERY": "86400", "FLEXZONE_OPS_LEASE_EVERY": "86400",
               "FLEXZONE_OPS_SETTLE_EVERY": "86400", "FLEXZONE_LEDGER_SEAL_EVERY": "86400"}

# The running servers' logs, shown when a client hangs (a test then fails with both sides' story).
SERVER_LOGS: list[Path] = []


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

    def issued(self, name: str) -> x509.Certificate:
        """`name`'s certificate, issued the first time it is asked for. Issuing again would replace the files
        `pair` names while an earlier test's principal keeps the first certificate's fingerprint."""
        if name not in self.certs:
            self.certs[name] = self.ca.issue(name)
        return self.certs[name]

    def pair(self, name: str) -> tuple[str, str]:
        directory = {"mallory": self.foreign, "stranger": self.foreign / "other"}.get(name, self.dir)
        return str(directory / f"{name}.pem"), str(directory / f"{name}.key")

    @property
    def ca_file(self) -> str:
        return str(self.dir / pki.CA_CERT)


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


@dataclass
class Server:
    url: str
    log: Path


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
        FLEXZONE_LEDGER_WITNESS=str(log.parent / "ledger-heads.jsonl"),  # its own: heads of this database only
        **env_overrides,
    )
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--bind", "127.0.0.1:0"],
            cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
        )
    try:
        yield process, wait_for_listening(process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_listening(process: subprocess.Popen, log: Path, timeout: float = 30.0) -> str:
    """The https:// URL gunicorn says in `log` it listens at, once a worker has loaded the application."""
    try:
        return wait_until_serving(log, lambda: process.poll() is None, timeout)
    except RuntimeError as exc:
        raise RuntimeError(f"gunicorn did not start: {exc}") from None


@dataclass
class ServedLab:
    """The cast's registry served by a server that runs operations, with both demo routers played by
    simulators on loopback."""

    server: Server
    demo: dict
    primary_sim: object
    remote_sim: object


def serve_the_demo(server: Server, cast: dict, sim_factory: Callable, secrets: Path, settings) -> ServedLab:
    """Play the demo's routers with simulators whose passwords go to `secrets`, the directory the server
    reads; this process takes the server's fast settings but never runs an operation itself."""
    for name, value in FAST_OPERATIONS.items():
        setattr(settings, name, _setting(value))
    settings.FLEXZONE_OPS_QUEUE = "manual"  # the server's threads run operations; never queue from this process
    settings.FLEXZONE_SECRETS_DIR = secrets
    primary, remote = play_the_demo(cast, sim_factory, secrets, command_timeout=3.0)
    return ServedLab(server, cast, primary, remote)


def _setting(value: str) -> object:
    if value in ("true", "false"):
        return value == "true"
    try:
        return int(value) if value.isdigit() else float(value)
    except ValueError:
        return value

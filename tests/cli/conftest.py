"""Fixtures for the CLI tests: the clients run as subprocesses against a real API over mutual TLS.

Reused: the session PKI and the cast of principals from tests/api/conftest.py, and the router
simulators from tests/routers/conftest.py. Our own server differs from the API tests' in one way
that matters: operations run (FLEXZONE_OPS_QUEUE=thread inside gunicorn) against simulated routers,
so `--add` really configures a router. Router secrets live in one directory for the whole session,
shared by the server and the per-test registry.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.config import write_config
from tests.api.conftest import ROOT, api_pki, cast, running_server  # noqa: F401 - fixtures
from tests.routers.conftest import sim_factory  # noqa: F401 - fixture
from tests.support.sims import wire

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


@pytest.fixture(scope="session")
def cli_secrets(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cli-secrets")


@pytest.fixture
def secrets_dir(cli_secrets, settings) -> Path:
    """Overrides the shared fixture: the server process reads the same directory as the test."""
    settings.FLEXZONE_SECRETS_DIR = cli_secrets
    return cli_secrets


@dataclass
class Server:
    url: str
    log: Path


# The running server's log, shown when a client hangs (a test then fails with both sides' story).
SERVER_LOGS: list[Path] = []


@pytest.fixture(scope="session")
def cli_server(django_db_setup, django_db_blocker, api_pki, cli_secrets, tmp_path_factory) -> Iterator[Server]:  # noqa: F811
    log = tmp_path_factory.mktemp("cli-server") / "gunicorn.log"
    SERVER_LOGS.append(log)
    try:
        with running_server(log, FLEXZONE_PKI_DIR=str(api_pki.dir), FLEXZONE_SECRETS_DIR=str(cli_secrets),
                            FLEXZONE_API_WORKERS="1", FLEXZONE_API_KEEPALIVE="5", FLEXZONE_API_MAX_WAIT="5",
                            **FAST_OPERATIONS, **IDLE_CHORES) as (_process, url):
            yield Server(url, log)
    finally:
        SERVER_LOGS.remove(log)


@dataclass
class Lab:
    server: Server
    demo: dict
    primary_sim: object
    remote_sim: object


@pytest.fixture
def lab(cli_server, cast, sim_factory, secrets_dir, settings) -> Iterator[Lab]:  # noqa: F811
    """The cast's registry with both demo routers played by simulators on loopback."""
    for name, value in FAST_OPERATIONS.items():
        setattr(settings, name, _setting(value))
    settings.FLEXZONE_OPS_QUEUE = "manual"  # the server's threads run operations; never queue from this process
    primary = sim_factory("mcdata_eclipse", telnet=("127.0.0.1", 0))
    remote = sim_factory("nishan_ips3000", telnet=("127.0.0.1", 0))
    wire(cast["primary_rtr"], primary.addresses["telnet"], secrets_dir, command_timeout=3.0)
    wire(cast["remote_rtr"], remote.addresses["telnet"], secrets_dir, command_timeout=3.0)
    yield Lab(cli_server, cast, primary, remote)


def _setting(value: str) -> object:
    if value in ("true", "false"):
        return value == "true"
    try:
        return int(value) if value.isdigit() else float(value)
    except ValueError:
        return value


@pytest.fixture
def home(tmp_path) -> Path:
    """An empty home directory, so no real ~/.flexzone/config.toml leaks into a test."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def config_for(tmp_path, api_pki) -> Callable[..., Path]:  # noqa: F811
    """`config_for(url, "alice")` writes a client configuration presenting that principal's certificate."""

    def make(url: str, name: str = "alice", ca: str | None = None) -> Path:
        cert, key = api_pki.pair(name)
        return write_config(tmp_path / f"{name}.toml", server=url, ca=ca or api_pki.ca_file, cert=cert, key=key)

    return make


@pytest.fixture
def run_cli(home) -> Callable[..., subprocess.CompletedProcess]:
    """Run `flexzone` or `flexzone-rtr` as a subprocess, the way a user does."""

    def run(program: str, *args: str, config: Path | None = None, env: dict | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
        module = {"flexzone": "cli.flexzone", "flexzone-rtr": "cli.rtr"}[program]
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("FLEXZONE_CONFIG", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
        environment["HOME"] = str(home)
        if config is not None:
            environment["FLEXZONE_CONFIG"] = str(config)
        environment.update(env or {})
        try:
            return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=environment,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            server_log = SERVER_LOGS[-1].read_text(errors="replace")[-6000:] if SERVER_LOGS else "(no server)"
            pytest.fail(f"{program} {' '.join(args)} still running after {timeout} s; its stderr:\n"
                        f"{exc.stderr}\nserver log:\n{server_log}")

    return run

"""Fixtures for the CLI tests: the clients run as subprocesses, the way a user runs them, against a real API
over mutual TLS (`api_server`, which queues operations, or `cli_lab`, whose server runs them against
simulated routers: tests/support/fixtures)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cli.config import write_config
from tests.support.servers import ROOT, SERVER_LOGS


@pytest.fixture
def home(tmp_path) -> Path:
    """An empty home directory, so no real ~/.flexzone/config.toml leaks into a test."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def config_for(tmp_path, api_pki) -> Callable[..., Path]:
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

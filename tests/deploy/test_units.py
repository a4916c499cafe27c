"""The deployment guide's files are the ones that run, so docs/deployment.md cannot drift from the code.

Without systemd: the API and a worker start from the units' own ExecStart lines and environment file,
a connect goes through them to simulated routers, and both stop on the units' KillSignal within their
TimeoutStopSec; the timers' services run; the alert rules name only metrics the service exports.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
import requests
import yaml
from prometheus_client.metrics import MetricWrapperBase

from access import audit
from api import metrics as api_metrics
from operations import metrics as ops_metrics
from registry.readiness import database_url
from serving import read_cache
from tests.support.servers import ROOT, wait_for_listening
from tests.support.sims import play_the_demo

DEPLOY = ROOT / "deploy"


def unit(name: str) -> dict[str, list[str]]:
    """A unit file's settings, every value of a repeated key in order (ExecStart of a oneshot)."""
    values: dict[str, list[str]] = defaultdict(list)
    for line in (DEPLOY / "systemd" / name).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            values[key.strip()].append(value.strip())
    return values


def environment_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


class Host:
    """This machine standing in for the guide's host: its paths mapped into a temporary directory and
    this checkout, the example values that name other hosts replaced, everything else as written."""

    def __init__(self, tmp: Path, pki_dir: Path, secrets: Path) -> None:
        self.paths = {"/opt/flexzone": str(ROOT), "/etc/flexzone/pki": str(pki_dir),
                      "/etc/flexzone/secrets": str(secrets), "/var/lib/flexzone": str(tmp / "lib"),
                      "/run/flexzone": str(tmp / "run")}
        written = environment_file(DEPLOY / "flexzone.env")
        here = {"DATABASE_URL": database_url(), "FLEXZONE_ALLOWED_HOSTS": "127.0.0.1",
                "FLEXZONE_API_BIND": "127.0.0.1:0"}
        assert set(here) <= set(written), "the environment file no longer sets what a host must set"
        self.env = {key: self.mapped(value) for key, value in {**written, **here}.items()}
        # systemd starts services with a clean environment: only what the file sets, and a PATH.
        self.process_env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "LANG": "C.UTF-8", **self.env}
        (tmp / "lib").mkdir()

    def mapped(self, text: str) -> str:
        for path, here in self.paths.items():
            text = text.replace(path, here)
        return text

    def command(self, line: str, instance: str = "1") -> list[str]:
        """An ExecStart line as systemd runs it: ${VAR} from the environment file, %i and %H."""
        line = self.mapped(line.replace("%i", instance).replace("%H", socket.gethostname()))
        return shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: self.env[m.group(1)], line))

    def start(self, name: str, log: Path) -> subprocess.Popen:
        settings = unit(name)
        assert settings["EnvironmentFile"] == ["/etc/flexzone/flexzone.env"]
        return subprocess.Popen(self.command(settings["ExecStart"][0]), env=self.process_env,
                                cwd=self.mapped(settings["WorkingDirectory"][0]), stdout=log.open("ab"),
                                stderr=subprocess.STDOUT, start_new_session=True)

    def run(self, name: str) -> None:
        settings = unit(name)
        assert settings["Type"] == ["oneshot"]
        for line in settings["ExecStart"]:
            done = subprocess.run(self.command(line), cwd=self.mapped(settings["WorkingDirectory"][0]),
                                  env=self.process_env, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, f"{name}: {line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def stop(name: str, process: subprocess.Popen) -> int:
    """Stop as systemd would: the unit's KillSignal to the process group, then wait TimeoutStopSec."""
    settings = unit(name)
    os.killpg(process.pid, getattr(signal, settings["KillSignal"][0]))
    try:
        return process.wait(timeout=float(settings["TimeoutStopSec"][0]))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise AssertionError(f"{name} did not stop within its TimeoutStopSec") from None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_units_serve_a_connect_and_stop_on_their_own_signal(cast, api_pki, sim_factory, secrets_dir,
                                                                   tmp_path):
    pki_dir = tmp_path / "pki"  # a copy: re-signing the CRL here leaves the session's alone
    shutil.copytree(api_pki.dir, pki_dir)
    host = Host(tmp_path, pki_dir, secrets_dir)
    play_the_demo(cast, sim_factory, secrets_dir, command_timeout=10.0)
    api_log, worker_log = tmp_path / "api.log", tmp_path / "worker.log"
    api = host.start("flexzone-api.service", api_log)
    worker = host.start("flexzone-worker@.service", worker_log)
    try:
        url = wait_for_listening(api, api_log)
        alice = requests.Session()
        alice.trust_env, alice.verify, alice.cert = False, str(pki_dir / "ca.pem"), api_pki.pair("alice")
        assert alice.get(f"{url}/api/health/", timeout=20).json()["status"] == "ok"
        body = {"site": "remote-site", "device_description": "XRAID1"}
        response = alice.post(f"{url}/api/connect/?wait=30", json=body, timeout=60)
        assert response.status_code == 200, response.text[:500]
        assert response.json()["state"] == "succeeded", (response.json()["error"], worker_log.read_text()[-3000:])
        assert stop("flexzone-worker@.service", worker) == 0, worker_log.read_text()[-3000:]
        assert stop("flexzone-api.service", api) == 0, api_log.read_text()[-3000:]
    finally:
        for process in (worker, api):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    crl = pki_dir / "crl.pem"
    before = crl.stat().st_mtime_ns
    host.run("flexzone-crl.service")
    assert crl.stat().st_mtime_ns != before
    host.run("flexzone-audit.service")
    assert (tmp_path / "lib" / "checkpoint.json").exists()


def test_every_timer_has_its_service_and_every_unit_its_environment_file():
    for timer in (DEPLOY / "systemd").glob("*.timer"):
        assert (timer.with_suffix(".service")).exists(), timer.name
        assert unit(timer.name)["OnCalendar"], timer.name
    for service in (DEPLOY / "systemd").glob("*.service"):
        assert unit(service.name)["EnvironmentFile"] == ["/etc/flexzone/flexzone.env"], service.name


@pytest.mark.django_db
def test_the_alert_rules_name_only_metrics_the_service_exports():
    exported = {metric._name for module in (ops_metrics, audit, read_cache)
                for metric in vars(module).values() if isinstance(metric, MetricWrapperBase)}
    exported |= {family.name for family in api_metrics.RegistryCollector().collect()}
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())["groups"][0]["rules"]
    assert rules
    for rule in rules:
        for name in re.findall(r"\bflexzone_\w+", rule["expr"]):
            assert re.sub(r"_(total|bucket|count|sum)$", "", name) in exported, f"{rule['alert']}: {name}"

"""The flexzone service in the lab: simulators at both sites, a lab registry, the engine at the primary site.

As in the reference testbed, the management server sits at the primary site and reaches every router
across the emulated WAN: an McData Eclipse simulator on the primary site's management address, a Nishan
IPS 3000 simulator on the remote site's, and the operations engine (netem.experiments.service_probe)
running inside the primary site's namespace. The registry is a dedicated PostgreSQL database
(`flexzone_lab_<prefix>`) reached over PostgreSQL's UNIX socket, created, migrated and loaded when the
service starts and dropped when it stops. Router passwords are generated per run and handed to the
engine as an environment variable (`secret_ref` env:...), never written anywhere.

`LabService.run()` returns the engine's own journal figures per operation: registry_ms (planning,
locks, journal), router_ms (waiting on the routers, WAN included), invocation_ms (the rest: session
handling, retries' back-off, verification bookkeeping) and total_ms.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from netem.experiments.base import json_lines, python_env

SOCKET_DIR = "/var/run/postgresql"
DB_ROLE = "postgres"
SIM_PORT = 2324  # 2323 is the router-only probe's simulator (mgmt.py), which may run beside it
USERNAME = "admin"
SECRET_ENV = "FLEXZONE_ROUTER_SECRET_LAB"
PLATFORMS = {"primary": "mcdata_eclipse", "remote": "nishan_ips3000"}


@dataclass(frozen=True)
class ServiceSettings:
    """How the service runs in an experiment; recorded with the results."""

    timing_scale: float = 0.05  # simulators' seed timing (Eclipse ~12 s to a prompt at 1.0)
    router_timeout: float = 30.0  # Router.connect_timeout / command_timeout
    max_attempts: int = 5  # FLEXZONE_OPS_MAX_ATTEMPTS
    backoff: float = 0.5  # FLEXZONE_OPS_BACKOFF
    total_timeout: float = 180.0  # FLEXZONE_OPS_TOTAL_TIMEOUT
    save_config: str = "each"  # a batched save would land inside the next operation's router time
    pool: bool = True  # pooled logged-in sessions, as the engine runs by default

    def ops_env(self) -> dict[str, str]:
        return {"FLEXZONE_OPS_MAX_ATTEMPTS": str(self.max_attempts), "FLEXZONE_OPS_BACKOFF": f"{self.backoff:g}",
                "FLEXZONE_OPS_BACKOFF_MAX": f"{max(self.backoff * 8, 1):g}",
                "FLEXZONE_OPS_TOTAL_TIMEOUT": f"{self.total_timeout:g}", "FLEXZONE_OPS_SAVE_CONFIG": self.save_config,
                "FLEXZONE_OPS_POOL": "1" if self.pool else "0", "FLEXZONE_OPS_ROUTER_WAIT": "30"}


def database_name(prefix: str) -> str:
    return "flexzone_lab_" + re.sub(r"[^a-z0-9_]", "_", prefix.lower())


def psql(sql: str, timeout: float = 60.0) -> None:
    """Run SQL as the postgres role over the UNIX socket (root may do that via peer or trust auth)."""
    import subprocess

    argv = ["psql", "-h", SOCKET_DIR, "-U", DB_ROLE, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qAtc", sql]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"psql failed ({sql}): {proc.stderr.strip()[-400:]}")


class LabService:
    """The service and its two routers in a running lab; a context manager that leaves nothing behind."""

    def __init__(self, lab: Any, settings: ServiceSettings | None = None) -> None:
        self.lab = lab
        self.settings = settings or ServiceSettings()
        self.database = database_name(lab.prefix)
        self.password = secrets.token_urlsafe(12)
        self.scratch = Path(tempfile.mkdtemp(prefix="fz-svc-"))
        self.sims: list[str] = []
        self.database_created = False

    @property
    def database_url(self) -> str:
        return f"postgres://{DB_ROLE}@{SOCKET_DIR.replace('/', '%2F')}/{self.database}"

    def env(self) -> dict[str, str]:
        return {"PYTHONPATH": python_env()["PYTHONPATH"], "DJANGO_SETTINGS_MODULE": "flexzone.settings",
                "DATABASE_URL": self.database_url, "FLEXZONE_OPS_QUEUE": "manual", SECRET_ENV: self.password,
                "FLEXZONE_SECRETS_DIR": str(self.scratch / "secrets"), **self.settings.ops_env()}

    def start(self) -> LabService:
        try:
            psql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            psql(f'CREATE DATABASE "{self.database}"')
            self.database_created = True
            for site, platform in PLATFORMS.items():
                name = f"svc-sim-{site}"
                self.lab.start_router_sim(site, platform, name=name, telnet_port=SIM_PORT,
                                          state_dir=self.scratch / name, args=[
                                              "--timing-scale", f"{self.settings.timing_scale:g}", "--username",
                                              USERNAME, f"--password={self.password}", "--seed", "7"])
                self.sims.append(name)
            self.lab.wait_listening("remote", SIM_PORT, timeout=20)
            proc = self._probe(["setup", "--spec", json.dumps(self.spec())], timeout=180)
            if '"loaded"' not in proc.stdout:
                raise RuntimeError(f"loading the lab registry failed (rc {proc.returncode}): {proc.stderr[-800:]}")
        except BaseException:
            self.stop()
            raise
        return self

    def spec(self) -> dict[str, Any]:
        sites = []
        for n, (site, platform) in enumerate(PLATFORMS.items(), start=1):
            where = self.lab.site(site)
            sites.append({"name": f"{site}-site", "display_name": "GSFC-DICEL1" if n == 1 else "DICE-REMOTE",
                          "netns": where.netns, "mgmt": where.mgmt_addr, "data": where.data_addr,
                          "router_port": 8 if n == 1 else 4, "router": f"{site}-rtr", "platform": platform,
                          "port": SIM_PORT})
        return {"sites": sites, "username": USERNAME, "secret_env": SECRET_ENV,
                "timeout": self.settings.router_timeout}

    def _probe(self, args: list[str], timeout: float, pool: bool | None = None) -> Any:
        extra = {} if pool is None else {"FLEXZONE_OPS_POOL": "1" if pool else "0"}
        env = [f"{k}={v}" for k, v in {**self.env(), **extra}.items()]
        argv = ["env", *env, sys.executable, "-m", "netem.experiments.service_probe", *args]
        return self.lab.run("primary", argv, check=False, timeout=timeout)

    def run(self, reps: int, *, warmup: bool = True, reconcile: bool = False, repair: bool = False,
            pool: bool | None = None, timeout: float | None = None,
            ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Operations through the engine at the primary site: (rows, reconcile report or None).

        `pool` overrides the settings' session pooling for this run (False: every operation logs in and out,
        as the reference system's server did for each invocation)."""
        args = ["run", "--reps", str(reps)]
        args += (["--warmup"] if warmup else []) + (["--reconcile"] if reconcile else [])
        args += ["--repair"] if repair else []
        if timeout is None:
            timeout = (3 * reps + 4) * self.settings.total_timeout + 60
        proc = self._probe(args, timeout=timeout, pool=pool)
        rows, report = json_lines(proc.stdout, "reconcile")
        if not rows and report is None:
            raise RuntimeError(f"the service probe produced nothing (rc {proc.returncode}): {proc.stderr[-800:]}")
        return rows, report

    def describe(self) -> dict[str, Any]:
        return {"service_site": "primary", "database": self.database, "database_via": f"unix socket {SOCKET_DIR}",
                "routers": {site: {"platform": p, "mgmt": self.lab.site(site).mgmt_addr, "port": SIM_PORT}
                            for site, p in PLATFORMS.items()},
                "settings": asdict(self.settings)}

    def stop(self) -> None:
        for name in self.sims:
            self.lab.stop(name)
        self.sims = []
        try:
            if self.database_created:
                psql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
                self.database_created = False
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> LabService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def phase_sum_ok(row: dict[str, Any], tolerance_ms: float = 1.0) -> bool:
    """registry + invocation + router == total (the engine's own bookkeeping; invocation is the remainder)."""
    return abs(row["registry_ms"] + row["invocation_ms"] + row["router_ms"] - row["total_ms"]) <= tolerance_ms

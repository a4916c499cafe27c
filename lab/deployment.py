"""flexzone as the lab starts it: from outside, through its public faces only.

A `Deployment` is what `make demo` would set up, on a database of the run's own: a temporary PostgreSQL
database (lab.database: created on DATABASE_URL's server, `manage.py migrate`d, dropped at the end), the
demo registry (`manage.py loaddemo`) and the demo PKI with its principals (`manage.py demo_pki`: root is
an admin, bob a viewer), `manage.py serve` (the REST API over mutual TLS) on this host's loopback, and
`manage.py worker` processes (the operations engine) wherever the lab puts them, a site's namespace
included. The lab talks to it with the `cli` package's REST client, as the `flexzone` command does.
Everything it writes (PKI, router passwords) lives in a scratch directory removed by `stop()`; the
processes' logs go where its process table keeps them (the scratch directory, or the lab's run directory when
the lab passes its own table).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from cli.client import Client
from cli.config import Config
from lab.database import TemporaryDatabase
from lab.procs import ProcessTable

ROOT = Path(__file__).resolve().parent.parent
# The settings a service process takes from the lab, never from the caller's environment.
OWN_VARIABLES = ("DATABASE_URL", "FLEXZONE_PKI_DIR", "FLEXZONE_SECRETS_DIR", "FLEXZONE_TLS_", "FLEXZONE_OPS_QUEUE",
                 "FLEXZONE_METRICS_DIR", "FLEXZONE_CONFIG")


# What `manage.py serve` logs: gunicorn's address, then each worker's line once it has loaded the
# application (serving/gunicorn_worker.py).
LISTENING = re.compile(r"Listening at: (https://[0-9.]+:\d+)")
SERVING = "Serving requests (pid: "


def wait_until_serving(log: Path, running: Callable[[], bool], timeout: float = 60.0) -> str:
    """The https:// URL a `manage.py serve` whose output goes to `log` serves at, once a worker has loaded
    the application: before that, the socket listens but a client's handshake hangs. Raises with the log's
    tail when the server stops (`running` turns false) or does not serve within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        found = LISTENING.search(text)
        if found and SERVING in text[found.end():]:
            return found.group(1)
        if not running():
            raise RuntimeError(f"manage.py serve stopped: {text.strip()[-1500:]}")
        if time.monotonic() >= deadline:
            raise RuntimeError(f"manage.py serve did not serve within {timeout:g} s: {text.strip()[-1500:]}")
        time.sleep(0.05)


class Deployment:
    """A flexzone service of one lab run; `start()` brings it up, `stop()` leaves nothing behind.

    `procs` tracks the service's processes (the lab's own table, so that `lab down` stops them after a
    crash); `env` adds settings (FLEXZONE_OPS_* and the like) for every service process.
    """

    def __init__(self, server: str, *, label: str = "run", fcip: bool = True, procs: ProcessTable | None = None,
                 env: Mapping[str, str] | None = None, serve_name: str = "fz-serve") -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="fz-lab-service-"))
        self.database = TemporaryDatabase(server, label)
        self.fcip = fcip
        self.procs = procs or ProcessTable(self.scratch)
        self.extra_env = dict(env or {})
        self.serve_name = serve_name
        self.url = ""
        self.running: list[str] = []

    @property
    def pki(self) -> Path:
        return self.scratch / "pki"

    @property
    def secrets(self) -> Path:
        return self.scratch / "secrets"

    def env(self, database_url: str | None = None, **extra: str) -> dict[str, str]:
        """The environment of a service process: the caller's, minus what the lab decides, plus the lab's."""
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(OWN_VARIABLES)}
        return {**inherited, "DATABASE_URL": database_url or self.database.url, "FLEXZONE_PKI_DIR": str(self.pki),
                "FLEXZONE_SECRETS_DIR": str(self.secrets), "FLEXZONE_OPS_QUEUE": "procrastinate",
                "FLEXZONE_LOG_LEVEL": os.environ.get("FLEXZONE_LOG_LEVEL", "WARNING"), **self.extra_env, **extra}

    def manage(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`python manage.py ARGS` on this host against the deployment's database; raises on failure."""
        proc = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env(), capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed (rc {proc.returncode}): "
                               f"{(proc.stderr or proc.stdout).strip()[-800:]}")
        return proc

    def start(self) -> Deployment:
        try:
            self.database.create()
            self.manage("loaddemo", *([] if self.fcip else ["--no-fcip"]))
            self.manage("demo_pki")
            self.url = self._serve()
        except BaseException:
            self.stop()
            raise
        return self

    def _serve(self, timeout: float = 60.0) -> str:
        """`manage.py serve` on a free loopback port; returns its URL once a worker serves."""
        log = self.procs.log_dir / f"{self.serve_name}.log"
        log.unlink(missing_ok=True)
        # No control socket: gunicorn 27 puts it at one path per user, which a demo server beside us would use.
        self.procs.start(self.serve_name, [sys.executable, "manage.py", "serve", "--bind", "127.0.0.1:0", "--",
                                           "--no-control-socket"], cwd=ROOT, env=self.env())
        self.running.append(self.serve_name)
        return wait_until_serving(log, lambda: self.procs.pid(self.serve_name) is not None, timeout)

    def spawn(self, name: str, args: Sequence[str], *, netns: str | None = None, database_url: str | None = None,
              **extra: str) -> None:
        """Start `python manage.py ARGS` as a service process named `name` (logs in procs' log directory), on
        this host or inside the network namespace `netns`, reaching the database at `database_url` (from a
        namespace: lab.database.socket_url) and with `extra` settings."""
        self.procs.start(name, [sys.executable, "manage.py", *args], netns=netns, cwd=ROOT,
                         env=self.env(database_url, **extra))
        self.running.append(name)

    def stop_process(self, name: str) -> None:
        self.procs.stop(name)
        if name in self.running:
            self.running.remove(name)

    def client(self, principal: str = "root", timeout: float = 60.0) -> Client:
        """A keep-alive REST client presenting `principal`'s certificate (root: admin; bob: viewer)."""
        if not self.url:
            raise RuntimeError("the service is not started")
        return Client(Config(server=self.url, ca=self.pki / "ca.pem", cert=self.pki / f"{principal}.pem",
                             key=self.pki / f"{principal}.key", timeout=timeout, source="the lab"))

    def password(self, router: str) -> Path:
        """The file holding a router's password, as `manage.py loaddemo` generated it (file:NAME secrets)."""
        return self.secrets / router

    def stop(self) -> None:
        """Stop every service process, drop the database, remove the scratch directory."""
        try:
            for name in reversed(self.running):
                self.procs.stop(name)
            self.running = []
        finally:
            try:
                self.database.drop()
            finally:
                shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> Deployment:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

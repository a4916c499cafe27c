"""A PostgreSQL cluster of a run's own: `initdb` in a temporary directory, served on a free loopback port
with trust authentication, taken down and up again on demand (`restart`), stopped and removed at the end.

The soak runs on one (`python -m bench soak --db-restarts`) so that it may restart the server under the
engine, which it must never do to a shared one; `make demo` keeps its cluster under .demo/pg with the
same set-up (`initdb_as_owner`). initdb and the server refuse to run as root: as root, both run as the
`postgres` account Debian's packages make, and the directory is that account's.
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

SUPERUSER = "flexzone"  # the cluster's superuser, as initdb names it


class NoCluster(RuntimeError):
    """No PostgreSQL binaries (or no account to run them as); the message says what to install."""


def bindir() -> Path | None:
    """The newest installed PostgreSQL's binaries (Debian's layout), or None."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda path: float(path.parts[-3]))
    return candidates[-1].parent if candidates else None


def owner() -> dict[str, Any]:
    """subprocess arguments running a command as the cluster's owner: this account, or `postgres` as root."""
    if os.geteuid() != 0:
        return {}
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        raise NoCluster("initdb refuses to run as root and there is no postgres account to run it as") from None
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def initdb_as_owner(binaries: Path, data: Path, run_as: dict[str, Any]) -> None:
    """A new cluster in `data` (its parent must exist and be the owner's): UTF-8, no locale, trust."""
    command = [str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
               "--no-locale"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **run_as)


def _free_port() -> int:
    """A free loopback port below Linux's ephemeral range (32768-60999 by default), so that no client's
    outgoing connection takes it while the server is down for a restart."""
    for port in random.sample(range(20000, 32000), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise NoCluster("no free loopback port between 20000 and 32000")


class PrivateCluster:
    """`with PrivateCluster() as cluster:` a running server at `cluster.url` (database `postgres`)."""

    def __init__(self, label: str = "flexzone") -> None:
        binaries = bindir()
        if binaries is None:
            raise NoCluster("no PostgreSQL binaries under /usr/lib/postgresql (apt-get install postgresql)")
        self.binaries, self.run_as = binaries, owner()
        self.directory = Path(tempfile.mkdtemp(prefix=f"{label}-pg-"))
        self.data, self.sockets, self.log = self.directory / "data", self.directory / "run", self.directory / "log"
        self.port = _free_port()
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def __enter__(self) -> PrivateCluster:
        try:
            self.sockets.mkdir()
            if self.run_as:
                for path in (self.directory, self.sockets):
                    os.chown(path, self.run_as["user"], self.run_as["group"])
            initdb_as_owner(self.binaries, self.data, self.run_as)
            self.start()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def start(self) -> None:
        """Start the server and wait until it takes connections (a crash recovery first, after `immediate`).
        fsync is off: the machine does not crash in a run, only the server stops, and the files it wrote
        are the kernel's; every commit is still written before it is acknowledged."""
        options = f"-k {self.sockets} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg_ctl("start", "-w", "-t", "60", "-l", str(self.log), "-o", options)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: `fast` ends every session and shuts down cleanly; `immediate` is a crash."""
        self._pg_ctl("stop", "-w", "-t", "60", "-m", mode)

    def restart(self, down_for: float, mode: str = "fast") -> None:
        """Take the server down (every connection ends), keep it down `down_for` s, start it again."""
        self.stop(mode)
        time.sleep(down_for)
        self.start()
        self.restarts += 1

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._pg_ctl("stop", "-w", "-t", "60", "-m", "immediate", check=False)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        done = subprocess.run([str(self.binaries / "pg_ctl"), "-D", str(self.data), *args], capture_output=True,
                              text=True, **self.run_as)
        if check and done.returncode != 0:
            reason = (done.stderr or done.stdout).strip()[-400:]
            raise RuntimeError(f"pg_ctl {args[0]} failed ({reason}); the server's log: {self.log}")

"""Processes the lab starts, tracked by PID files so `lab down` can stop them after a crash.

Each PID file holds the PID and the process start time (field 22 of /proc/PID/stat), so a stale file
never leads us to signal an unrelated process that reused the PID.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from lab.runner import in_netns


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after it are split from the last ')'.
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class ProcessTable:
    """Starts, finds and stops the lab's long-running processes by name."""

    def __init__(self, run_dir: Path) -> None:
        self.pid_dir = run_dir / "pids"
        self.log_dir = run_dir / "logs"
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: Sequence[str], *, netns: str | None = None, cwd: str | Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start argv (inside netns) with stdout/stderr in logs/<name>.log; refuses a name already running."""
        if self.pid(name) is not None:
            raise RuntimeError(f"lab process {name!r} is already running (pid {self.pid(name)})")
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(in_netns(netns, argv), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, cwd=cwd, env=dict(env) if env else None,
                                    start_new_session=True)
        started = None
        for _ in range(100):
            started = _start_time(proc.pid)
            if started is not None:
                break
            time.sleep(0.001)
        (self.pid_dir / f"{name}.pid").write_text(f"{proc.pid} {started}\n")
        self._children[name] = proc
        return proc

    def pid(self, name: str) -> int | None:
        """The PID of a running lab process, or None (a stale PID file is removed)."""
        path = self.pid_dir / f"{name}.pid"
        try:
            pid_text, started = path.read_text().split()
        except (OSError, ValueError):
            return None
        pid = int(pid_text)
        if _alive(pid) and _start_time(pid) == started:
            return pid
        self._reap(name)
        path.unlink(missing_ok=True)
        return None

    def names(self) -> list[str]:
        if not self.pid_dir.is_dir():
            return []
        return sorted(p.stem for p in self.pid_dir.glob("*.pid"))

    def signal(self, name: str, signum: int) -> bool:
        pid = self.pid(name)
        if pid is None:
            return False
        os.kill(pid, signum)
        return True

    def stop(self, name: str, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after timeout; the process, not its session, is what we signal."""
        pid = self.pid(name)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _alive(pid) and time.monotonic() < deadline:
                self._reap(name)
                time.sleep(0.02)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
                while _alive(pid) and time.monotonic() < deadline + 2:
                    self._reap(name)
                    time.sleep(0.02)
        self._reap(name)
        (self.pid_dir / f"{name}.pid").unlink(missing_ok=True)

    def stop_all(self) -> None:
        for name in self.names():
            self.stop(name)

    def _reap(self, name: str) -> None:
        proc = self._children.get(name)
        if proc is not None and proc.poll() is not None:
            del self._children[name]

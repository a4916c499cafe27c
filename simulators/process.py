"""Run a simulator as a child process (``python -m simulators``) and read its bound ports."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class SimProcess:
    """A ``python -m simulators`` child. ``start()`` returns {"telnet": (host, port), ...}."""

    def __init__(self, platform: str, *, state_dir: str | Path | None = None, telnet: str | None = None,
                 ssh: str | None = None, args: list[str] | None = None, python: str = sys.executable) -> None:
        self.platform = platform
        self.command = [python, "-m", "simulators", "--platform", platform]
        if telnet:
            self.command += ["--telnet", telnet]
        if ssh:
            self.command += ["--ssh", ssh]
        if state_dir is not None:
            self.command += ["--state", str(state_dir)]
        self.command += args or []
        self.process: subprocess.Popen[str] | None = None
        self.addresses: dict[str, tuple[str, int]] = {}

    def start(self, timeout: float = 20.0) -> dict[str, tuple[str, int]]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            self.command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.1)
            if ready:
                line = self.process.stdout.readline()
                if line:
                    info = json.loads(line)
                    self.addresses = {k: (v[0], v[1]) for k, v in info.items() if k in ("telnet", "ssh")}
                    return self.addresses
            if self.process.poll() is not None:
                break
        stderr = self.process.stderr.read() if self.process.stderr and self.process.poll() is not None else ""
        self.stop()
        raise RuntimeError(f"simulator did not start: {' '.join(self.command)}\n{stderr}")

    def stop(self, timeout: float = 10.0) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        return process.returncode

    def __enter__(self) -> SimProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

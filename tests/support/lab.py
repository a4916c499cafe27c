"""`python -m lab` run by the tests as a user runs it, and the network namespaces a lab leaves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lab.database import TEMPLATE_ENV

ROOT = Path(__file__).resolve().parents[2]


def run_lab(argv: list[str], tmp_path: Path, **env: str) -> LabRun:
    """`python -m lab ARGV` from the repository, with nothing of ours in the environment but `env`."""
    keep = {name: value for name, value in os.environ.items()
            if not name.startswith(("FLEXZONE_", "DATABASE_URL", "DJANGO_", "PYTEST_")) or name == TEMPLATE_ENV}
    env = {**keep, "FLEXZONE_SQLITE_PATH": str(tmp_path / "default.sqlite3"), "FLEXZONE_LAB_DIR": str(tmp_path / "run"),
           **env}
    return LabRun.run([sys.executable, "-m", "lab", *argv], env)


class LabRun(subprocess.CompletedProcess[str]):
    """A finished `python -m lab`, with its PID: the databases it makes carry it in their names (other tests,
    in other xdist workers, make and drop theirs meanwhile)."""

    pid: int

    @classmethod
    def run(cls, argv: list[str], env: dict[str, str], timeout: float = 240) -> LabRun:
        with subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as process:
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                raise
        done = cls(argv, process.returncode, stdout, stderr)
        done.pid = process.pid
        return done


def namespaces_with_prefix(prefix: str) -> list[str]:
    """The network namespaces named `prefix`-…, as `ip netns list` shows them."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"{prefix}-")]

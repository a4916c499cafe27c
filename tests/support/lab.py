"""`python -m lab` run by the tests as a user runs it, and the network namespaces a lab leaves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_lab(argv: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m lab ARGV` from the repository, with nothing of ours in the environment but `env`."""
    keep = {name: value for name, value in os.environ.items()
            if not name.startswith(("FLEXZONE_", "DATABASE_URL", "DJANGO_", "PYTEST_"))}
    env = {**keep, "FLEXZONE_SQLITE_PATH": str(tmp_path / "default.sqlite3"), "FLEXZONE_LAB_DIR": str(tmp_path / "run"),
           **env}
    return subprocess.run([sys.executable, "-m", "lab", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240)


def namespaces_with_prefix(prefix: str) -> list[str]:
    """The network namespaces named `prefix`-…, as `ip netns list` shows them."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"{prefix}-")]

"""The seam between the lab and the host: every command the lab runs goes through a Runner.

`Runner` executes for real; `RecordingRunner` only writes the commands down, which is how the
tc-netem backend is tested on a kernel that has no sch_netem.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field


class CommandError(RuntimeError):
    """A lab command failed; carries the command line and what it printed."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"{' '.join(self.argv)} -> rc {returncode}: {stderr.strip()}")


def in_netns(netns: str | None, argv: Sequence[str]) -> list[str]:
    """The command line that runs argv inside netns (`ip netns exec` execs, so the PID is argv's)."""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)


class Runner:
    """Runs commands on this host, optionally inside a network namespace."""

    def run(self, argv: Sequence[str], *, netns: str | None = None, check: bool = True, input: str | None = None,
            timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        full = in_netns(netns, argv)
        proc = subprocess.run(full, input=input, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise CommandError(full, proc.returncode, proc.stderr)
        return proc

    def ok(self, argv: Sequence[str], *, netns: str | None = None, input: str | None = None) -> bool:
        """True when the command succeeds; used for probes and best-effort cleanup."""
        try:
            return self.run(argv, netns=netns, check=False, input=input).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


@dataclass
class RecordingRunner(Runner):
    """Records command lines instead of running them; every command 'succeeds' with empty output."""

    commands: list[str] = field(default_factory=list)

    def run(self, argv: Sequence[str], *, netns: str | None = None, check: bool = True, input: str | None = None,
            timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        line = " ".join(in_netns(netns, argv))
        self.commands.append(line + (f" <<< {input.strip()}" if input else ""))
        return subprocess.CompletedProcess(in_netns(netns, argv), 0, "", "")

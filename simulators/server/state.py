"""What a simulated router keeps: its configuration, the transcript of its sessions and its SSH host key,
in its state directory (``--state DIR``) or, without one, in memory for the life of the object.

    state.json      running and saved configuration, written atomically after every change
    transcript.log  every session, one line per read or write, passwords masked
    ssh_host_key    generated on first start, so a client that trusted it keeps trusting it
    faults.json     the armed faults (simulators.faults)
"""

from __future__ import annotations

import collections
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import asyncssh

from routers.drivers.base import RouterLink
from simulators.faults import atomic_write
from simulators.personality import Personality, SimState

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
TRANSCRIPT_FILE = "transcript.log"
HOST_KEY_FILE = "ssh_host_key"
TRANSCRIPT_LINES = 20000  # kept in memory for transcript()
StateListener = Callable[[list[RouterLink]], None]


class StateStore:
    """One simulator's state directory (or none): configuration, transcript, host key, change listeners."""

    def __init__(self, directory: str | Path | None, platform: str) -> None:
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self.platform = platform
        self.personality: Personality | None = None
        self.listeners: list[StateListener] = []
        self._snapshot = ""
        self._transcript: collections.deque[str] = collections.deque(maxlen=TRANSCRIPT_LINES)
        self._ssh_key: asyncssh.SSHKey | None = None

    # --- configuration -------------------------------------------------------------------------
    def is_new(self) -> bool:
        """No configuration was kept yet: no state directory, or no state.json in it."""
        return self.directory is None or not (self.directory / STATE_FILE).exists()

    def load(self) -> SimState:
        if self.is_new():
            return SimState()
        data = json.loads((self.directory / STATE_FILE).read_text())  # type: ignore[operator]
        return SimState(running=data.get("running", {}), saved=data.get("saved", {}))

    def keep(self, personality: Personality, write: bool = False) -> None:
        """Follow `personality`'s state from now on; `write` stores it at once (a state given, not loaded)."""
        self.personality = personality
        self._snapshot = self.as_json()
        if write and self.directory is not None:
            atomic_write(self.directory / STATE_FILE, self._snapshot)

    def as_json(self) -> str:
        assert self.personality is not None
        state = self.personality.state
        return json.dumps({"running": state.running, "saved": state.saved}, indent=1, sort_keys=True)

    def copy(self) -> SimState:
        return SimState(**json.loads(self.as_json()))

    def changed(self) -> None:
        """Persist and tell the listeners if the configuration differs from the last one kept."""
        current = self.as_json()
        if current == self._snapshot:
            return
        self._snapshot = current
        if self.directory is not None:
            atomic_write(self.directory / STATE_FILE, current)
        assert self.personality is not None
        links = self.personality.links()
        for listener in list(self.listeners):
            try:
                listener(links)
            except Exception:  # noqa: BLE001 - a listener's bug must not take the device down
                log.exception("simulator %s: state listener failed", self.platform)

    # --- transcript ----------------------------------------------------------------------------
    def transcript_logger(self, session_id: int, transport: str) -> Callable[[str], None]:
        """A function that records one line of session `session_id`, stamped in UTC to the millisecond."""
        path = self.directory / TRANSCRIPT_FILE if self.directory is not None else None

        def log_line(text: str) -> None:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"
            entry = f"{stamp} s{session_id} {transport} {text!r}"
            self._transcript.append(entry)
            if path is not None:
                with path.open("a") as handle:
                    handle.write(entry + "\n")

        return log_line

    def transcript(self) -> str:
        return "\n".join(self._transcript)

    # --- SSH host key --------------------------------------------------------------------------
    def ssh_key(self) -> asyncssh.SSHKey:
        """The SSH host key: kept in the state directory (the same key across restarts), or made once
        per instance without one."""
        if self._ssh_key is not None:
            return self._ssh_key
        path = self.directory / HOST_KEY_FILE if self.directory is not None else None
        if path is not None and path.exists():
            self._ssh_key = asyncssh.read_private_key(str(path))
            return self._ssh_key
        self._ssh_key = asyncssh.generate_private_key("ssh-ed25519")
        if path is not None:
            self._ssh_key.write_private_key(str(path))
            path.chmod(0o600)
        return self._ssh_key

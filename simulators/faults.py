"""Fault knobs of a simulated router: what goes wrong, on which command, and how many times.

Three ways to set them, all with the same model (a list of ``Fault``):

* from code, on an in-process simulator: ``sim.faults = [Fault("drop_after_apply", count=1)]``
  or ``sim.add_fault("garble", match=r"^show")``;
* on the command line: ``--fault drop_after_apply,count=1`` (repeatable);
* on a running simulator in another process: write ``faults.json`` in its ``--state`` directory with
  ``write_faults(state_dir, [...])`` (or any atomic write of the same JSON). The simulator re-reads
  the file whenever its modification time changes, checked at every connection and every command,
  and writes back the remaining counts as faults fire, so "the next 1 mutating command" means
  exactly one command even across processes.

Kinds, and where they fire:

``refuse_login``        the password is refused (telnet: the login-failed message, then the
                        connection closes; SSH: authentication fails).
``stall_before_prompt`` after a correct password the prompt never comes (``seconds``: for that long,
                        then the session continues; default: until the client gives up).
``session_limit``       the connection is refused with the platform's session-limit message.
``drop_before_apply``   the connection closes after the command is echoed, before it runs.
``drop_after_apply``    the command runs and its change persists, then the connection closes before
                        the reply (the device did it; the client cannot know).
``stall_command``       the command is echoed and never answered (nor run); the session stays open.
``garble``              the command's output is corrupted on the wire (the prompt still follows).
``fragment``            the command's output and the next prompt arrive in 1-6 character pieces 5 ms
                        apart (TCP segmentation; a prompt or a CR LF split in two). Drivers must cope.
``zoning_locked``       a state, not an event: while it is armed another administrator holds the
                        fabric's zoning. Brocade FOS shows an open zoning transaction (token 0x5eed)
                        that no session can abort; Cisco MDS shows the enhanced-mode zone session lock
                        of every enhanced-mode VSAN held by user ``san-admin``, which ``clear zone
                        lock`` does not release. Zoning edits are refused meanwhile. Checking it never
                        spends a count (``count=0`` disarms it); clearing the fault releases it.

``match`` is a regular expression searched in the command line. Without it, ``drop_before_apply``
and ``drop_after_apply`` select configuration-changing commands only, the other command faults any
non-empty command. ``count`` is how many times the fault fires before it is
spent (``None``: every time). State faults ignore ``match`` and ``seconds``.

``zoning_locked`` is armed like the others: ``sim.faults = [Fault("zoning_locked")]``,
``--fault zoning_locked``, or ``python -m simulators.faults STATE_DIR zoning_locked`` on a running
simulator; clear it with ``sim.faults = []`` or ``python -m simulators.faults STATE_DIR``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

LOGIN_KINDS = ("refuse_login", "stall_before_prompt", "session_limit")
COMMAND_KINDS = ("drop_before_apply", "drop_after_apply", "stall_command", "garble", "fragment")
STATE_KINDS = ("zoning_locked",)  # conditions a personality asks about (FaultBook.peek); never fired
KINDS = LOGIN_KINDS + COMMAND_KINDS + STATE_KINDS
MUTATING_BY_DEFAULT = ("drop_before_apply", "drop_after_apply")
FAULTS_FILE = "faults.json"


@dataclass
class Fault:
    """One armed fault. See the module docstring for the kinds."""

    kind: str
    match: str | None = None
    count: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        self.kind = self.kind.replace("-", "_")
        if self.kind not in KINDS:
            raise ValueError(f"fault kind: must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.count is not None and (not isinstance(self.count, int) or self.count < 0):
            raise ValueError(f"fault count: must be a non-negative integer, got {self.count!r}")
        if self.match is not None:
            re.compile(self.match)

    def selects(self, line: str, mutating: bool) -> bool:
        if self.count == 0:
            return False
        if self.kind in LOGIN_KINDS or self.kind in STATE_KINDS:
            return True
        if self.match is not None:
            return re.search(self.match, line) is not None
        if self.kind in MUTATING_BY_DEFAULT:
            return mutating
        return bool(line.strip())


def parse_fault(text: str) -> Fault:
    """Parse the command-line form ``KIND[,count=N][,seconds=S][,match=REGEX]``.

    ``match`` must come last: everything after ``match=`` is the expression, commas included.
    """
    head, _, regex = text.partition(",match=")
    kind, *options = head.split(",")
    fields: dict[str, object] = {"kind": kind.strip()}
    for option in options:
        name, _, value = option.partition("=")
        if name == "count":
            fields["count"] = int(value)
        elif name == "seconds":
            fields["seconds"] = float(value)
        else:
            raise ValueError(f"fault option: unknown {name!r} in {text!r} (count=, seconds=, match=)")
    if regex:
        fields["match"] = regex
    return Fault(**fields)  # type: ignore[arg-type]


def faults_to_json(faults: list[Fault]) -> str:
    return json.dumps({"faults": [asdict(fault) for fault in faults]}, indent=1)


def faults_from_json(text: str) -> list[Fault]:
    data = json.loads(text) if text.strip() else {"faults": []}
    items = data["faults"] if isinstance(data, dict) else data
    return [Fault(**item) for item in items]


def atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_faults(state_dir: str | os.PathLike[str], faults: list[Fault]) -> None:
    """Arm faults on a simulator running in another process with ``--state state_dir``."""
    atomic_write(Path(state_dir) / FAULTS_FILE, faults_to_json(faults))


def read_faults(state_dir: str | os.PathLike[str]) -> list[Fault]:
    path = Path(state_dir) / FAULTS_FILE
    return faults_from_json(path.read_text()) if path.exists() else []


class FaultBook:
    """The armed faults of one simulator, optionally mirrored to ``faults.json`` in its state dir."""

    def __init__(self, faults: list[Fault] | None = None, state_dir: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._path = state_dir / FAULTS_FILE if state_dir else None
        self._mtime: int | None = None
        self._faults: list[Fault] = []
        if faults is not None or self._path is None:
            self.set(faults or [])
        else:
            self._reload()

    def set(self, faults: list[Fault]) -> None:
        with self._lock:
            self._faults = [Fault(**asdict(fault)) for fault in faults]
            self._store()

    def get(self) -> list[Fault]:
        with self._lock:
            self._reload()
            return [Fault(**asdict(fault)) for fault in self._faults]

    def take(self, kinds: tuple[str, ...], line: str = "", mutating: bool = False) -> Fault | None:
        """Return the first armed fault of one of `kinds` selecting `line`, spending one count."""
        with self._lock:
            self._reload()
            for fault in self._faults:
                if fault.kind in kinds and fault.selects(line, mutating):
                    fired = Fault(**asdict(fault))
                    if fault.count is not None:
                        fault.count -= 1
                        self._store()
                    return fired
            return None

    def peek(self, kind: str, line: str, mutating: bool) -> bool:
        """Whether a fault of `kind` would select `line` (without spending it)."""
        with self._lock:
            self._reload()
            return any(f.kind == kind and f.selects(line, mutating) for f in self._faults)

    def _reload(self) -> None:
        if self._path is None:
            return
        try:
            mtime = self._path.stat().st_mtime_ns
        except FileNotFoundError:
            if self._mtime is not None:
                self._faults, self._mtime = [], None
            return
        if mtime != self._mtime:
            try:
                self._faults = faults_from_json(self._path.read_text())
            except (ValueError, TypeError, KeyError):
                return  # a half-edited file by hand: keep the previous faults until it parses
            self._mtime = mtime

    def _store(self) -> None:
        if self._path is None:
            return
        atomic_write(self._path, faults_to_json(self._faults))
        self._mtime = self._path.stat().st_mtime_ns


def main(argv: list[str] | None = None) -> int:
    """``python -m simulators.faults STATE_DIR [FAULT ...]``: arm faults on a running simulator.

    With no FAULT the armed faults are cleared; ``--show`` prints them (remaining counts included).
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m simulators.faults", description=main.__doc__)
    parser.add_argument("state_dir", help="the simulator's --state directory")
    parser.add_argument("faults", nargs="*", metavar="KIND[,count=N][,seconds=S][,match=REGEX]")
    parser.add_argument("--show", action="store_true", help="print the armed faults and change nothing")
    args = parser.parse_args(argv)
    if args.show:
        print(faults_to_json(read_faults(args.state_dir)))
        return 0
    try:
        faults = [parse_fault(text) for text in args.faults]
    except (ValueError, re.error) as exc:
        parser.error(str(exc))
    write_faults(args.state_dir, faults)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

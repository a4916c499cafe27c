"""Follow an operation from 202 Accepted to its end, showing its phase and the time spent waiting.

On a terminal one line is redrawn in place (queued → connecting → on router → verifying, with
the elapsed time); otherwise, so logs stay readable, one plain line per phase change. Progress goes
to stderr so that stdout carries only the result (the table, or the JSON with --json).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from cli.client import Client
from cli.errors import OPERATION_FAILED, CliError

PHASES = ("queued", "connecting", "on_router", "verifying")
TERMINAL = ("succeeded", "failed", "rolled_back")
POLL_START, POLL_MAX = 0.1, 0.25
# After this long in `queued`, say so: no worker has taken the operation (none running, or it was lost).
QUEUED_TOO_LONG = 10.0
NO_WORKER = "no worker has picked it up yet"


def phase_label(phase: str) -> str:
    return phase.replace("_", " ")


class Progress:
    """Renders phase changes; `live` redraws one line (terminals), otherwise prints a line per change."""

    def __init__(self, stream: TextIO, live: bool, quiet: bool = False) -> None:
        self.stream, self.live, self.quiet = stream, live, quiet
        self.last_phase: str | None = None
        self.drawn = False
        self.warned = False

    def update(self, operation: dict, elapsed: float) -> None:
        if self.quiet:
            return
        phase = operation.get("phase") or "queued"
        stuck = operation.get("state") == "queued" and elapsed >= QUEUED_TOO_LONG
        if self.live:
            note = f"  ({NO_WORKER})" if stuck else ""
            self.stream.write(f"\r\x1b[K{self.strip(operation, phase)}  {elapsed:5.1f}s{note}")
            self.stream.flush()
            self.drawn = True
        elif stuck and not self.warned:
            self.stream.write(f"operation {operation.get('id')}: still queued after {elapsed:.0f}s; {NO_WORKER}\n")
            self.stream.flush()
            self.warned = True
        elif phase != self.last_phase and phase != "done":
            retries = retries_so_far(operation)
            note = f", {retries} retr{'y' if retries == 1 else 'ies'}" if retries > 0 else ""
            self.stream.write(f"operation {operation.get('id')}: {phase_label(phase)}{note} ({elapsed:.1f}s)\n")
            self.stream.flush()
        self.last_phase = phase

    @staticmethod
    def strip(operation: dict, phase: str) -> str:
        """'operation 12 add: queued ✓ → [connecting] → on router → verifying'."""
        current = PHASES.index(phase) if phase in PHASES else len(PHASES)
        parts = []
        for index, name in enumerate(PHASES):
            label = phase_label(name)
            if index < current:
                parts.append(f"{label} ✓")
            elif index == current:
                parts.append(f"[{label}]")
            else:
                parts.append(label)
        return f"operation {operation.get('id')} {operation.get('kind', '')}: " + " → ".join(parts)

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


def follow(client: Client, operation: dict, location: str | None, *, max_wait: float,
           progress: Progress) -> dict:
    """Poll the operation until it ends (or `max_wait` seconds pass); returns its last state."""
    path = location or operation.get("url") or f"/api/operations/{operation['id']}/"
    started = time.monotonic()
    interval = POLL_START
    try:
        while operation.get("state") not in TERMINAL:
            elapsed = time.monotonic() - started
            progress.update(operation, elapsed)
            if elapsed >= max_wait:
                progress.finish()
                raise still_running(operation, max_wait)
            time.sleep(min(interval, max(0.0, max_wait - elapsed)))
            interval = min(POLL_MAX, interval * 1.5)
            try:
                operation = client.get(path)
            except CliError as exc:
                exc.hint = (f"operation {operation.get('id')} was submitted and continues on the server; "
                            f"check it later with `flexzone --status {operation.get('id')}`")
                raise
        progress.update(operation, time.monotonic() - started)
    finally:
        progress.finish()
    return operation


def still_running(operation: dict, waited: float) -> CliError:
    number = operation.get("id")
    if operation.get("state") == "queued":
        return CliError(f"operation {number} is still queued after {waited:.0f} s: {NO_WORKER}",
                        "the service's operation workers are not running or lost it; tell its admin "
                        f"(`flexzone --status {number}` follows it)", OPERATION_FAILED)
    return CliError(f"operation {number} is still {operation.get('state')} "
                    f"({phase_label(operation.get('phase') or 'queued')}) after {waited:.0f} s",
                    f"it continues on the server; follow it with `flexzone --status {number}`", OPERATION_FAILED)


def make_progress(json_mode: bool, stream: TextIO | None = None) -> Progress:
    stream = stream or sys.stderr
    live = stream.isatty()
    # Scripts asking for JSON get no chatter, unless a person is watching the terminal.
    return Progress(stream, live=live, quiet=json_mode and not live)


def retries_so_far(operation: dict) -> int:
    """Router sessions beyond one per plan step. The journal counts every session an operation opened
    (one per step when nothing goes wrong), so only the excess is a retry."""
    steps = len((operation.get("plan") or {}).get("steps") or []) or 1
    return max(0, (operation.get("attempts") or 0) - steps)

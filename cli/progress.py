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


def phase_label(phase: str) -> str:
    return phase.replace("_", " ")


class Progress:
    """Renders phase changes; `live` redraws one line (terminals), otherwise prints a line per change."""

    def __init__(self, stream: TextIO, live: bool, quiet: bool = False) -> None:
        self.stream, self.live, self.quiet = stream, live, quiet
        self.last_phase: str | None = None
        self.drawn = False

    def update(self, operation: dict, elapsed: float) -> None:
        if self.quiet:
            return
        phase = operation.get("phase") or "queued"
        if self.live:
            self.stream.write(f"\r\x1b[K{self.strip(operation, phase)}  {elapsed:5.1f}s")
            self.stream.flush()
            self.drawn = True
        elif phase != self.last_phase and phase != "done":
            attempt = f", attempt {operation['attempts']}" if (operation.get("attempts") or 0) > 1 else ""
            self.stream.write(f"operation {operation.get('id')}: {phase_label(phase)}{attempt} ({elapsed:.1f}s)\n")
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
                raise CliError(
                    f"operation {operation.get('id')} is still {operation.get('state')} "
                    f"({phase_label(operation.get('phase') or 'queued')}) after {max_wait:.0f} s",
                    f"it continues on the server; follow it with `flexzone --status {operation.get('id')}`",
                    OPERATION_FAILED,
                )
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


def make_progress(json_mode: bool, stream: TextIO | None = None) -> Progress:
    stream = stream or sys.stderr
    live = stream.isatty()
    # Scripts asking for JSON get no chatter, unless a person is watching the terminal.
    return Progress(stream, live=live, quiet=json_mode and not live)

"""Fixtures of real switch output layouts (README.md here): how to read one.

Each ``*/*.txt`` is a header of ``# key: value`` lines (a value continued on indented ``#`` lines) naming
its ``command``, its public ``source`` and its ``layout``, then a ``# ---`` line, then the reply exactly
as the switch prints it (tabs, trailing spaces and all) with names, WWNs and addresses of our own.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parent
FIXTURES = sorted(ROOT.glob("*/*.txt"))


def load(path: Path) -> tuple[dict[str, str], str]:
    """A fixture's header fields and its body."""
    text = path.read_text()
    head, _, body = text.partition("# ---\n")
    fields: dict[str, str] = {}
    key = ""
    for line in head.splitlines():
        if line.startswith("# ") and ":" in line and not line.startswith("#  "):
            key, _, value = line[2:].partition(":")
            fields[key.strip()] = value.strip()
        elif key:
            fields[key] += " " + line.lstrip("# ").strip()
    return fields, body


def body_of(relative: str) -> str:
    return load(ROOT / relative)[1]


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))

"""The user guide and the pages it links: which files they are, and the shell lines they show."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A fenced block a reader would paste into a shell; a bare ``` block is a diagram or output.
SHELL_FENCE = re.compile(r"^[ \t]*```(?:sh|bash|shell|console)[ \t]*\n(.*?)^[ \t]*```", re.S | re.M)


def guide_documents(root: Path = ROOT) -> list[Path]:
    """README.md, then the pages under docs/ in name order."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def shell_lines(text: str) -> list[str]:
    """The lines of the text's shell blocks, stripped, with backslash continuations joined."""
    lines: list[str] = []
    for block in SHELL_FENCE.findall(text):
        pending = ""
        for line in block.splitlines():
            line = line.strip()
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            lines.append(pending + line)
            pending = ""
        if pending:
            lines.append(pending.strip())
    return [line for line in lines if line]

"""The lab report: one Markdown file with every experiment's table and plots, in the run's folder."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netem.experiments.base import Outcome


def write_report(folder: Path, outcomes: Sequence[Outcome], environment: dict[str, Any], *, command: str = "",
                 extra_sections: Sequence[tuple[str, str]] = ()) -> Path:
    """Write folder/report.md linking each outcome's plots (paths relative to the report)."""
    lines = ["# flexzone lab report", "",
             f"Generated {datetime.now(UTC).isoformat(timespec='seconds')}" + (f" by `{command}`" if command else "")
             + ".", ""]
    lines += ["## Environment", "", "| key | value |", "|---|---|"]
    for key in ("where", "backend", "kernel", "profile", "tcp_congestion_control_default", "tcp_wmem"):
        if key in environment:
            lines.append(f"| {key} | `{environment[key]}` |")
    lines.append("")
    lines += ["## Contents", ""]
    for outcome in outcomes:
        mark = "" if outcome.valid else " (incomplete or invalid, see notes)"
        lines.append(f"- [{outcome.title}](#{outcome.name}){mark}")
    for title, _ in extra_sections:
        lines.append(f"- {title}")
    lines.append("")
    for outcome in outcomes:
        lines += [f'<a id="{outcome.name}"></a>', f"## {outcome.title}", ""]
        if outcome.command:
            lines += [f"Command: `{outcome.command}`", ""]
        lines += [f"Raw data: `{_rel(outcome.folder, folder)}/` (CSV and JSON).", ""]
        for plot in outcome.plots:
            lines += [f"![{plot.stem}]({_rel(plot, folder)})", ""]
        if outcome.table:
            lines += [outcome.table, ""]
        for note in outcome.notes:
            lines.append(f"- {note}")
        if outcome.skipped:
            lines.append(f"- Skipped to stay within the time budget ({len(outcome.skipped)}): "
                         + ", ".join(outcome.skipped[:12]) + (" ..." if len(outcome.skipped) > 12 else ""))
        lines.append("")
    for title, body in extra_sections:
        lines += [f"## {title}", "", body, ""]
    path = folder / "report.md"
    path.write_text("\n".join(lines))
    (folder / "environment.json").write_text(json.dumps(environment, indent=1, default=str))
    return path


def _rel(path: Path, base: Path) -> str:
    return os.path.relpath(path, base)

"""The lab report: one Markdown file with every experiment's table and plots, in the run's folder."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lab.experiments.base import Outcome

METHOD = """\
**Method.** Block transfers are xdd-style passes (fio's nbd engine against nbdkit, MB = 10^6 bytes).
Cache effects are removed: the initiator is a user-space NBD client (no page cache), the target's medium is
RAM with no cache in front (nbdkit `memory`), the local-disk baseline uses O_DIRECT, and every extent is
written before it is read (reads lag writes). `target direct` is fio next to nbdkit (no WAN, no routers): the
raw speed of the target. The raw link rate is one iperf3 TCP stream between the sites with the default
congestion control, sampled at the start of each experiment. A measurement during which the delay emulator
fell behind is marked invalid in the raw data.
`latency` and `loss` time real flexzone operations: the operations engine runs in the primary site's
namespace (registry in PostgreSQL over its UNIX socket) and drives simulated routers at both sites across
the emulated WAN; each operation's registry / invocation / router split comes from the engine's journal.
`sites` does the same across five sites with a router each (iFCP and FCIP platforms), every site asking for
every other site's array at once, then moves blocks over each connected path on its own."""


def write_report(folder: Path, outcomes: Sequence[Outcome], environment: dict[str, Any], *, command: str = "",
                 first_sections: Sequence[tuple[str, str]] = (),
                 extra_sections: Sequence[tuple[str, str]] = ()) -> Path:
    """Write folder/report.md linking each outcome's plots (paths relative to the report); `first_sections`
    (title, Markdown) come before the experiments' own, `extra_sections` after them."""
    lines = ["# flexzone lab report", "",
             f"Generated {datetime.now(UTC).isoformat(timespec='seconds')}" + (f" by `{command}`" if command else "")
             + ".", ""]
    lines += ["## Environment", "", "| key | value |", "|---|---|"]
    for key in ("where", "backend", "kernel", "profile", "tcp_congestion_control_default", "tcp_wmem"):
        if key in environment:
            lines.append(f"| {key} | `{environment[key]}` |")
    if environment.get("raw_link_mb_s_samples"):
        lines.append(f"| raw link samples (MB/s) | {environment['raw_link_mb_s_samples']} |")
    lines += ["", METHOD, ""]
    lines += ["## Contents", ""]
    for title, _ in first_sections:
        lines.append(f"- {title}")
    for outcome in outcomes:
        mark = "" if outcome.valid else " (incomplete or invalid, see notes)"
        lines.append(f"- [{outcome.title}](#{outcome.name}){mark}")
    for title, _ in extra_sections:
        lines.append(f"- {title}")
    lines.append("")
    for title, body in first_sections:
        lines += [f"## {title}", "", body, ""]
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

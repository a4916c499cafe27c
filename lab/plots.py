"""PNG plots for the lab's experiments (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen before pyplot is imported
from matplotlib.ticker import FuncFormatter  # noqa: E402


@dataclass
class Series:
    """One line: x and y values, optional (low, high) error bars, and a style hint."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    style: str = "-o"


@dataclass
class Panel:
    """One set of axes: series plus horizontal reference lines (raw link rate, raw target speed)."""

    title: str
    series: list[Series]
    references: Mapping[str, float] = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = "MB/s (10^6 B/s)"
    logx: bool = True
    logy: bool = False
    byte_ticks: bool = True


def byte_label(value: float, _pos: int | None = None) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= scale:
            return f"{value / scale:g}{unit}"
    return f"{value:g}"


REFERENCE_STYLES = [":", "--", "-."]


def figure(path: Path, panels: Sequence[Panel], title: str = "", columns: int = 2) -> Path:
    """Draw the panels side by side (wrapping after `columns`) into a PNG at path."""
    count = len(panels)
    cols = min(columns, count) or 1
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.4 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for s in panel.series:
            if s.low is not None and s.high is not None:
                yerr = [[max(0.0, y - lo) for y, lo in zip(s.y, s.low, strict=True)],
                        [max(0.0, hi - y) for y, hi in zip(s.y, s.high, strict=True)]]
                ax.errorbar(s.x, s.y, yerr=yerr, fmt=s.style, capsize=3, label=s.label, markersize=4)
            else:
                ax.plot(s.x, s.y, s.style, label=s.label, markersize=4)
        for i, (label, value) in enumerate(panel.references.items()):
            if value and value > 0:
                ax.axhline(value, linestyle=REFERENCE_STYLES[i % len(REFERENCE_STYLES)], color="grey",
                           linewidth=1.2, label=f"{label} ({value:.0f} MB/s)")
        if panel.logx:
            ax.set_xscale("log", base=2)
        if panel.logy:
            ax.set_yscale("log")
        if panel.byte_ticks:
            ax.xaxis.set_major_formatter(FuncFormatter(byte_label))
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.set_ylim(bottom=0 if not panel.logy else None)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[count:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

"""The report's comparison with the seed: what NASA Goddard's DICE Management Framework (2007) published beside
what this run measured, the same quantity in the same units, with the ratio.

The seed's figures live here and nowhere else (`SEED`), each with its unit and where in the seed it comes
from; a quantity for which the seed gave no number says so instead of holding one. This run's figures are
read back from the raw data each experiment wrote into its folder (latency.json, loss.json, transfer.json,
effective.json), valid measurements only, so the table needs nothing but a results folder.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.experiments.base import Outcome, markdown_table, size_label

PAPER = "DICE Management Framework, 2007"
NOT_MEASURED = "not measured in this run"
COMPARED = "Compared with the seed"  # the report section's title


@dataclass(frozen=True)
class SeedFigure:
    """One quantity as the seed published it: `low` alone, or the range `low`..`high`; `low` None: no number.
    `bound` "≥" or "≤": the seed gives only a bound on this quantity (its login is only part of its router time)."""

    quantity: str
    unit: str
    low: float | None
    source: str  # where in the seed
    high: float | None = None
    lower_is_better: bool = False  # times
    shown: str = ""  # the seed's own wording of the number, when it says more than the number ("< 20")
    bound: str = ""

    def text(self) -> str:
        if self.low is None:
            return "not published"
        if self.shown:
            return self.shown
        return f"{self.low:g}" + ("" if self.high is None else f"–{self.high:g}")


SEED: dict[str, SeedFigure] = {
    "op_total": SeedFigure("operation time (add), total", "s", 20.0, shown="~20 (< 20)", lower_is_better=True,
                           source=f"{PAPER}, operation time (Figures 11–13): under 20 s"),
    # The seed gives the login alone (~12 s of the ~20): its router time is at least that, and what is left
    # for registry and invocation at most the other ~8 s (which also holds its configuration commands).
    "op_router": SeedFigure("… its router part", "s", 12.0, shown="≥ 12 (its telnet login alone)", bound="≥",
                            lower_is_better=True,
                            source=f"{PAPER}, operation time (Figures 11–13): ~12 s of it the telnet login to "
                                   "the McData Eclipse"),
    "op_rest": SeedFigure("… the rest: registry + invocation", "s", 8.0, shown="≤ 8 (the total less the login)",
                          bound="≤", lower_is_better=True,
                          source=f"{PAPER}, operation time (Figures 11–13): the total less the login"),
    "success_at_4": SeedFigure("operation success at 4 % packet loss", "%", 100.0,
                               source=f"{PAPER}, operation success vs packet loss (Figure 14)"),
    "loss_limit": SeedFigure("highest packet loss with 100 % success", "%", 4.0,
                             source=f"{PAPER}, operation success vs packet loss (Figure 14): 100 % up to 4 %"),
    "san_write": SeedFigure("block transfer rate over the extended SAN, write", "MB/s", 70.0, high=80.0,
                            source=f"{PAPER}, block transfer rate over the extended SAN: 70–80 MB/s"),
    "san_read": SeedFigure("block transfer rate over the extended SAN, read", "MB/s", 70.0, high=80.0,
                           source=f"{PAPER}, block transfer rate over the extended SAN: 70–80 MB/s"),
    "effective_write": SeedFigure("effective rate at the largest file size measured, write", "MB/s", None,
                                  source=f"{PAPER}, effective transfer rate vs file size, link setup and "
                                         "teardown counted (Figure 15): a plot, no number given"),
    "effective_read": SeedFigure("effective rate at the largest file size measured, read", "MB/s", None,
                                 source=f"{PAPER}, effective transfer rate vs file size, link setup and "
                                        "teardown counted (Figure 15): a plot, no number given"),
}


@dataclass(frozen=True)
class Measured:
    """This run's figure for one quantity: `value` None when not measured (`condition` says why)."""

    value: float | None
    condition: str  # which experiment, under which condition, how summarised
    at_least: bool = False  # a lower bound: no measured point went past it
    shown: str = ""  # instead of the number
    incomparable: str = ""  # why a ratio would mislead, e.g. simulated routers faster than the seed's


def missing(reason: str) -> Measured:
    return Measured(None, reason)


def _num(value: float, unit: str = "") -> str:
    if unit == "%" and value == int(value):
        return f"{value:g}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:#.3g}"


def ratio(seed: SeedFigure, ours: Measured) -> str:
    """How many times better flexzone is (seed / flexzone for times, flexzone / seed otherwise): above 1,
    flexzone is better. A range in the seed gives a range of ratios, a bound on either side a bound."""
    if seed.low is None:
        return "— (the seed published no number)"
    if ours.value is None:
        return "—"
    if ours.incomparable:
        return f"— ({ours.incomparable})"
    bounds = [seed.low] if seed.high is None else [seed.high, seed.low]
    if seed.lower_is_better:
        if ours.value <= 0:
            return "—"
        ratios = [b / ours.value for b in reversed(bounds)]
    else:
        ratios = [ours.value / b for b in bounds]
    text = "–".join(f"{r:.2f}" for r in ratios) + "×"
    flip = {"≥": "≤", "≤": "≥", "": ""}
    # A bound on the numerator bounds the ratio the same way, one on the denominator the other way.
    from_seed = seed.bound if seed.lower_is_better else flip[seed.bound]
    from_ours = flip["≥" if ours.at_least else ""] if seed.lower_is_better else ("≥" if ours.at_least else "")
    sides = {from_seed, from_ours} - {""}
    if len(sides) > 1:
        return "— (bounds on both sides)"
    return f"{sides.pop()} {text}" if sides else text


def _timing(scale: float) -> str:
    """Why a time measured on simulated routers is no match for the seed's, or "" when it is."""
    return "" if scale == 1 else f"routers simulated at {scale:g} × the seed's timing"


def operation_time(data: dict[str, Any]) -> dict[str, Measured]:
    """Add at the lowest round trip measured, per-operation sessions (the seed's server logged in for each
    invocation): median total, router part and the rest (registry + invocation) from the engine's journal."""
    rows = [r for r in data["rows"] if r["kind"] == "add" and r["state"] == "succeeded" and r.get("valid", True)
            and r.get("sessions", "per-operation") == "per-operation" and r.get("links", "iFCP") == "iFCP"]
    if not rows:
        return dict.fromkeys(("op_total", "op_router", "op_rest"),
                             missing("latency: no valid successful iFCP add, per-operation sessions"))
    rtt = min(r["rtt_ms"] for r in rows)
    chosen = [r for r in rows if r["rtt_ms"] == rtt]
    scale = data["plan"]["service"]["timing_scale"]
    where = (f"latency: iFCP add at {rtt:g} ms RTT, per-operation sessions, median of {len(chosen)}; routers at "
             f"{scale:g} × the seed's timing")

    def seconds(phases: tuple[str, ...]) -> float:
        return statistics.median(sum(r[p] for p in phases) for r in chosen) / 1000

    return {"op_total": Measured(seconds(("total_ms",)), where, incomparable=_timing(scale)),
            "op_router": Measured(seconds(("router_ms",)), where + "; router_ms: login, commands and save",
                                  incomparable=_timing(scale)),
            "op_rest": Measured(seconds(("registry_ms", "invocation_ms")), where + "; registry_ms + invocation_ms")}


def success_under_loss(data: dict[str, Any]) -> dict[str, Measured]:
    """Success at 4 % loss, and the highest loss before the first measured point below 100 % success."""
    points = sorted((p for p in data["points"] if p.get("valid", True) and p["ops"]), key=lambda p: p["loss_pct"])
    plan = data["plan"]
    how = (f"each way, {plan['rtt_ms']:g} ms RTT, add/list/remove, routers at {plan['service']['timing_scale']:g} × "
           "the seed's timing")
    if not points:
        return dict.fromkeys(("success_at_4", "loss_limit"), missing("loss: no valid point"))
    at_4 = next((p for p in points if p["loss_pct"] == 4), None)
    if at_4 is None:
        losses = ", ".join(f"{p['loss_pct']:g}" for p in points)
        result = {"success_at_4": missing(f"loss: 4 % not among the valid points, {losses} %")}
    else:
        result = {"success_at_4": Measured(100 * at_4["success_rate"],
                                           f"loss: 4 % {how}; {at_4['ok']} of {at_4['ops']} operations succeeded")}
    whole = [p for p in points if p["ok"] == p["ops"]]
    first_short = next((p for p in points if p["ok"] < p["ops"]), None)
    if first_short is not None:
        whole = [p for p in whole if p["loss_pct"] < first_short["loss_pct"]]
    if not whole:
        assert first_short is not None
        result["loss_limit"] = Measured(None, f"loss: {how}; the lowest point, {first_short['loss_pct']:g} %, had "
                                              f"{100 * first_short['success_rate']:.0f} %", shown="none measured")
    elif first_short is None:
        result["loss_limit"] = Measured(whole[-1]["loss_pct"], f"loss: {how}; every valid point up to "
                                                               f"{whole[-1]['loss_pct']:g} % succeeded", at_least=True)
    else:
        result["loss_limit"] = Measured(whole[-1]["loss_pct"], f"loss: {how}; the next point, "
                                                               f"{first_short['loss_pct']:g} %, had "
                                                               f"{100 * first_short['success_rate']:.0f} %")
    return result


def block_rate(data: dict[str, Any]) -> dict[str, Measured]:
    """Sequential transfers through the SAN path: the largest record measured and, with it, the largest extent
    (the seed's rate is of large requests; a run whose budget ended before the largest extent got its large
    records is not compared on small ones)."""
    result = {}
    for op in ("write", "read"):
        rows = [r for r in data["rows"] if r["path"] == "san" and r["pattern"] == "sequential" and r["op"] == op
                and r.get("valid", True)]
        if not rows:
            result[f"san_{op}"] = missing(f"transfer: no valid sequential SAN {op}")
            continue
        record = max(r["record_bytes"] for r in rows)
        size = max(r["size_bytes"] for r in rows if r["record_bytes"] == record)
        chosen = [r for r in rows if r["size_bytes"] == size and r["record_bytes"] == record]
        result[f"san_{op}"] = Measured(
            statistics.fmean(r["mb_per_s"] for r in chosen),
            f"transfer: SAN path, sequential {op}s, {size_label(size)} extent, {size_label(record)} records, "
            f"mean of {len(chosen)}; WAN {chosen[0]['profile']}, raw link {data['link_mb_s']:.0f} MB/s")
    return result


def effective_rate(data: dict[str, Any]) -> dict[str, Measured]:
    """The effective rate (setup and teardown counted) at the largest file size measured."""
    plan = data["plan"]
    setup = ("configured" if plan.get("setup_s") is not None
             else f"measured, routers at {plan['timing_scale']:g} × the seed's timing")
    result = {}
    for op in ("write", "read"):
        rows = [r for r in data["rows"] if r["op"] == op and r.get("valid", True)]
        if not rows:
            result[f"effective_{op}"] = missing(f"effective: no valid {op}")
            continue
        size = max(r["size_bytes"] for r in rows)
        chosen = [r for r in rows if r["size_bytes"] == size]
        result[f"effective_{op}"] = Measured(
            statistics.median(r["effective_mb_s"] for r in chosen),
            f"effective: {size_label(size)}, median of {len(chosen)}; setup {data['setup_s']:.2f} s + teardown "
            f"{data['teardown_s']:.2f} s counted ({setup}); WAN {chosen[0]['profile']}")
    return result


READERS: dict[str, Callable[[dict[str, Any]], dict[str, Measured]]] = {
    "latency": operation_time, "loss": success_under_loss, "transfer": block_rate, "effective": effective_rate}
FROM = {"op_total": "latency", "op_router": "latency", "op_rest": "latency", "success_at_4": "loss",
        "loss_limit": "loss", "san_write": "transfer", "san_read": "transfer", "effective_write": "effective",
        "effective_read": "effective"}


def measured(outcomes: Sequence[Outcome]) -> dict[str, Measured]:
    """This run's figure for every quantity in SEED, read from the raw data of the outcomes' folders."""
    found: dict[str, Measured] = {}
    by_name = {o.name: o for o in outcomes}
    for name, read in READERS.items():
        outcome = by_name.get(name)
        raw = outcome.folder / f"{name}.json" if outcome else None
        if outcome is None:
            reason = f"{name} did not run"
        elif raw is None or not raw.exists():
            reason = f"{name} failed, see its section"
        else:
            found.update(read(json.loads(Path(raw).read_text())))
            continue
        found.update({key: missing(reason) for key, source in FROM.items() if source == name})
    return found


def comparison(outcomes: Sequence[Outcome]) -> str:
    """The report's section "Compared with the seed" (Markdown): one table and where the seed says so."""
    ours = measured(outcomes)
    rows = []
    for key, seed in SEED.items():
        mine = ours[key]
        shown = mine.shown or (NOT_MEASURED if mine.value is None
                               else ("≥ " if mine.at_least else "") + _num(mine.value, seed.unit))
        rows.append([seed.quantity, seed.unit, seed.text(), shown, mine.condition, ratio(seed, mine)])
    sources = list(dict.fromkeys(seed.source.removeprefix(f"{PAPER}, ") for seed in SEED.values()))
    return "\n".join([
        "The seed is NASA Goddard's DICE Management Framework (2007), the design flexzone follows: its figures "
        "as published; flexzone's from this run's raw data (valid measurements only), in the same units "
        "(flexzone's MB = 10^6 bytes, as everywhere in the lab). **× better**: seed / flexzone for times, "
        "flexzone / seed otherwise, so above 1 flexzone does better.",
        "",
        markdown_table(["quantity", "unit", "seed", "flexzone", "flexzone measured as", "× better"], rows),
        "",
        "- The router part is the simulators' doing: they keep the seed's timing (about 12 s to log in to the "
        "Eclipse, 2.7 s per configuration command) times the scale shown, so the total and the router part are "
        "compared only at scale 1. The seed gives its login alone: its router part is at least that, and its "
        "registry + invocation at most the rest of its total, which also holds its configuration commands; the "
        "ratios say so (≥, ≤).",
        "- flexzone's loss is applied to each direction of the WAN (the percentage is per direction).",
        f"- Where in the seed ({PAPER}) each figure comes from:",
        *(f"  - {source}" for source in sources),
    ])

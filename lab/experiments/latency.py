"""`latency`: add / list / remove time and its registry / invocation / router split vs WAN round trip
(the paper's Figures 11-13).

The flexzone service runs at the primary site (lab.experiments.service: the operations engine, `manage.py
worker`, in the primary namespace, the REST API and the registry's PostgreSQL database on this host), once
per pair of routers (`links`): iFCP, an Eclipse simulator at the primary site and a Nishan simulator at the
remote site; FCIP, a Brocade FOS simulator at the primary site and a Cisco MDS simulator at the remote site,
both over SSH, east-site asking for an array at west-site. For each round trip (0,
20, 40, 80, 160 ms; half of it each way) the lab asks the API for add / list / remove operations (connect,
lsifcp of the remote router, disconnect) and records the journal's own split from each operation's JSON:
registry_ms (planning, locks, journal), router_ms (waiting on the routers; the WAN's round trips land
here), invocation_ms (the remainder: session handling, retries, bookkeeping) and total_ms. With pooled
sessions each point starts with an untimed `list` of each router that logs the engine's session pool in
(its rows are kept, marked warm-up).

The router-only probe of before (the drivers from the primary site, a fresh session per operation, no
service) still runs beside it when the plan asks for it (`router_probe_reps`), as a cross-check.
A point the emulator spoiled is measured once more when the budget allows (the first attempt's reason is
kept as `remeasured_after`); one still spoiled is marked invalid.

Round trips: each operation's row carries the turns each router's simulator counted during it
(`<site>_turns`, `<site>_login_turns`; simulators.roundtrips), and the results put the WAN router's median
beside the least its commands need (a second table, latency-round-trips.csv, `round_trips` in the JSON).
The login turns are what each new session paid before its first command: telnet's login dialogue, an SSH
session's set-up (netmiko's prompt read and terminal settings, the driver's `terminal dont-ask`), and the
logout sent alone at the session's end; so with a session per operation every operation carries them,
and pooled sessions pay them once, in the warm-up (and at shutdown).
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from lab.experiments.base import Bench, Budget, Outcome, Progress, markdown_table, write_csv, write_json
from lab.experiments.service import PLATFORMS, FcipLabService, LabService, ServiceSettings
from simulators.roundtrips import least

OPS = ("add", "list", "remove")
PHASES = ("registry_ms", "invocation_ms", "router_ms")
WAN_SITE = "remote"  # the service runs at the primary site: only the remote router is across the WAN
ROUND_TRIP_HEADER = ["sessions", "op", "router", "WAN round trips", "login's", "least", "over least", "n"]
# Each pair of routers the experiment measures, by what their links are: the demo's iFCP gateways (Eclipse at
# primary, Nishan across the WAN) and its FCIP switches (FOS at primary, MDS across the WAN, over SSH).
SERVICES: dict[str, type[LabService]] = {"iFCP": LabService, "FCIP": FcipLabService}


@dataclass(frozen=True)
class Plan:
    rtts_ms: tuple[float, ...]
    repetitions: int
    service: ServiceSettings = field(default_factory=ServiceSettings)
    budget_s: float = 150
    router_probe_reps: int = 0
    # "per-operation": every operation logs in and out (the reference system's server did so for each
    # invocation); "pooled": flexzone's default, sessions stay logged in between operations.
    sessions: tuple[str, ...] = ("per-operation",)
    links: tuple[str, ...] = ("iFCP", "FCIP")  # keys of SERVICES

    @property
    def target_bytes(self) -> int:
        return 1 << 20


QUICK = Plan(rtts_ms=(0, 40, 160), repetitions=3, service=ServiceSettings(timing_scale=0.05), budget_s=300)
FULL = Plan(rtts_ms=(0, 20, 40, 80, 160), repetitions=10, service=ServiceSettings(timing_scale=0.2),
            budget_s=3600, router_probe_reps=5, sessions=("per-operation", "pooled"))


def _profile(rtt_ms: float) -> Any:
    from lab.profiles import Impairment, LinkProfile

    return LinkProfile.symmetric(f"rtt{rtt_ms:g}", Impairment(delay_ms=rtt_ms / 2))


def fit_slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a + b x; returns (a, b)."""
    if len(xs) < 2:
        return (ys[0] if ys else 0.0), 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b


def _estimate(plan: Plan, rtt: float, probe: bool) -> float:
    # ~5 router round trips per router step, two routers per add/remove, plus the simulators' own timing; the
    # router-only probe runs with the first links' points only.
    per_op = 0.6 + 30 * plan.service.timing_scale + 20 * rtt / 1000
    return (len(plan.sessions) * plan.repetitions * len(OPS) * per_op + 4
            + (plan.router_probe_reps * 3 * (1 + 24 * rtt / 1000) if probe else 0))


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    lab = getattr(bench, "lab", None)
    if lab is None:
        raise RuntimeError("latency needs the lab (root, --where lab): delay is emulated between namespaces")
    budget = Budget(plan.budget_s, learn=True)
    estimates = {links: [_estimate(plan, rtt, probe=links == plan.links[0]) for rtt in plan.rtts_ms]
                 for links in plan.links}
    progress = Progress([each for links in plan.links for each in estimates[links]], out, label="latency ")
    rows: list[dict[str, Any]] = []
    probe_rows: list[dict[str, Any]] = []
    warmups: list[dict[str, Any]] = []  # each pooled point's first lists, which log the pool in
    points: list[dict[str, Any]] = []
    skipped = budget.skipped
    service_info: dict[str, Any] = {}
    try:
        for links in plan.links:
            with SERVICES[links](lab, plan.service) as service:
                service_info[links] = service.describe()
                for i, rtt in enumerate(plan.rtts_ms):
                    if not budget.admit(estimates[links][i], f"{links} rtt {rtt:g} ms", progress, kind=links):
                        continue
                    progress.step(f"{links}, RTT {rtt:g} ms: {plan.repetitions} x add/list/remove through the "
                                  f"service ({', '.join(plan.sessions)} sessions)")
                    # Re-impairing (never clearing) between points: see commands.py on the fallback after clear().
                    lab.impair("primary", "remote", _profile(rtt))
                    spoiled: list[str] = []
                    for attempt in (1, 2):  # a point the emulator spoiled is measured once more if the budget allows
                        point_rows, point_warmups, valid, reasons, details = _measure_point(lab, service, plan, rtt)
                        if valid or attempt == 2 or not budget.again(estimates[links][i], links):
                            break
                        spoiled += reasons
                    rows += point_rows
                    warmups += point_warmups
                    if plan.router_probe_reps and links == plan.links[0]:
                        probe_rows += _router_probe(lab, plan, rtt)
                    points.append({"links": links, "rtt_ms": rtt, "valid": valid, "health": reasons,
                                   "emulator": details, "remeasured_after": spoiled})
                    budget.done()
                    progress.finished()
    finally:
        lab.clear()
    return _write(bench, plan, folder, rows, warmups, probe_rows, points, skipped, command, service_info)


def _measure_point(lab: Any, service: LabService, plan: Plan, rtt: float) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]], bool, list[str], dict[str, Any]]:
    """Every session mode's operations at one RTT, in one emulator health window."""
    rows: list[dict[str, Any]] = []
    warmups: list[dict[str, Any]] = []
    with lab.measurement() as health:
        for sessions in plan.sessions:
            pooled = sessions == "pooled"
            result, _ = service.run(plan.repetitions, warmup=pooled, pool=pooled)
            for row in result:
                (warmups if row["rep"] == 0 else rows).append(
                    {"links": service.links, "wan_router": service.platforms[WAN_SITE], "rtt_ms": rtt,
                     "sessions": sessions, "op": row["kind"], "ok": row["state"] == "succeeded",
                     "seconds": row["total_ms"] / 1000, **row})
    valid, reasons = point_health(health, rtt)
    for row in rows + warmups:
        row.update(valid=valid, health="; ".join(reasons))
    return rows, warmups, valid, reasons, dict(health.details)


def point_health(health: Any, rtt_ms: float) -> tuple[bool, list[str]]:
    """The emulator's verdict on a point. At RTT 0 no delay emulator is needed, and the fallback backend
    says "not running" for a hop whose emulator an earlier profile started and a zero delay stopped
    (lab/backends.py, FallbackBackend.end_window); that alone does not spoil a zero-delay point."""
    if rtt_ms != 0:
        return bool(health.valid), list(health.reasons)
    reasons = [r for r in health.reasons if not r.endswith("delay emulator is not running")]
    return bool(health.valid) or not reasons, reasons


def _router_probe(lab: Any, plan: Plan, rtt: float) -> list[dict[str, Any]]:
    """The drivers alone (no service), a fresh session per operation, against a fresh remote simulator."""
    from lab.experiments.mgmt import RemoteRouter, Session, probe

    session = Session(platform="nishan_ips3000", timing_scale=plan.service.timing_scale)
    with RemoteRouter(lab, session, name="latency-probe-sim") as router:
        result, _ = probe(lab, router, plan.router_probe_reps)
    return [{"rtt_ms": rtt, **row} for row in result]


def medians(rows: list[dict[str, Any]], key: str, value: float, op: str,
            sessions: str | None = None, links: str | None = None) -> dict[str, float] | None:
    """Median of each phase and of the total over the successful operations of one point."""
    chosen = [r for r in rows if r[key] == value and r["kind"] == op and r["state"] == "succeeded"
              and (sessions is None or r.get("sessions") == sessions)
              and (links is None or r.get("links", "iFCP") == links)]
    if not chosen:
        return None
    return {p: statistics.median(r[p] for r in chosen) for p in (*PHASES, "total_ms")} | {"n": len(chosen)}


def round_trips(rows: list[dict[str, Any]], sessions_modes: tuple[str, ...], saves: bool = False
                ) -> list[dict[str, Any]]:
    """Per WAN router, session mode and operation: the median turns the WAN router's simulator counted (its
    commands' and its logins'), beside the least the operation's commands need there (simulators.roundtrips),
    the save's included for a change when the configuration is saved after each (`saves`)."""
    def router(row: dict[str, Any]) -> str:
        return row.get("wan_router", PLATFORMS[WAN_SITE])

    found = []
    for platform in dict.fromkeys(map(router, rows)):
        for sessions, op in ((s, o) for s in sessions_modes for o in OPS):
            chosen = [r for r in rows if r.get("sessions") == sessions and r["kind"] == op and router(r) == platform
                      and r["state"] == "succeeded" and f"{WAN_SITE}_turns" in r]
            if not chosen:
                continue
            login = statistics.median(int(r[f"{WAN_SITE}_login_turns"]) for r in chosen)
            turns = statistics.median(int(r[f"{WAN_SITE}_turns"]) for r in chosen)
            floor = least(platform, op) + (least(platform, "save") if saves and op != "list" else 0)
            found.append({"sessions": sessions, "op": op, "router": platform, "turns": turns, "login_turns": login,
                          "least": floor, "over_least": turns - floor, "n": len(chosen)})
    return found


def round_trip_report(found: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The round trips as a table and one note per WAN router and session mode."""
    table = markdown_table(ROUND_TRIP_HEADER, [[f["sessions"], f["op"], f["router"], f["turns"], f["login_turns"],
                                                f["least"], f["over_least"], f["n"]] for f in found])
    notes = []
    for router, sessions in dict.fromkeys((f["router"], f["sessions"]) for f in found):
        parts = [f"{f['op']} {f['turns']:g} (least {f['least']}; login {f['login_turns']:g} more)"
                 for f in found if f["sessions"] == sessions and f["router"] == router]
        notes.append(f"WAN round trips per operation ({sessions} sessions), the turns the remote router's simulator "
                     f"({router}) counted, median: {'; '.join(parts)}. Not counted: TCP's, telnet's and SSH's own "
                     "handshakes.")
    return table, notes


def _write(bench: Bench, plan: Plan, folder: Path, rows: list[dict[str, Any]], warmups: list[dict[str, Any]],
           probe_rows: list[dict[str, Any]], points: list[dict[str, Any]], skipped: list[str], command: str,
           service: dict[str, Any]) -> Outcome:
    write_csv(folder / "latency.csv", rows)
    if warmups:
        write_csv(folder / "latency-warmup.csv", warmups)
    if probe_rows:
        write_csv(folder / "latency-router-probe.csv", probe_rows)
    summary = []
    table = []
    notes = []
    measured = dict.fromkeys(p.get("links", "iFCP") for p in points)
    for links, sessions, op in ((k, s, o) for k in measured for s in plan.sessions for o in OPS):
        totals = []
        mine = [r for r in rows if r.get("links", "iFCP") == links and r["kind"] == op and r["sessions"] == sessions]
        for rtt in [p["rtt_ms"] for p in points if p.get("links", "iFCP") == links]:
            m = medians(rows, "rtt_ms", rtt, op, sessions, links)
            fails = sum(1 for r in mine if r["rtt_ms"] == rtt and r["state"] != "succeeded")
            if m:
                summary.append({"links": links, "sessions": sessions, "op": op, "rtt_ms": rtt, **m, "failures": fails})
                totals.append((rtt, m["total_ms"]))
                table.append([links, sessions, op, f"{rtt:g}", m["registry_ms"], m["invocation_ms"], m["router_ms"],
                              m["total_ms"], m["n"], fails])
            else:
                table.append([links, sessions, op, f"{rtt:g}", "-", "-", "-", "-", 0, fails])
        if len(totals) >= 2:
            a, b = fit_slope([x for x, _ in totals], [y for _, y in totals])
            notes.append(f"{links} {op} ({sessions} sessions): {a:.0f} ms + {b:.1f} ms per ms of RTT "
                         f"(= {b:.1f} WAN round trips per operation).")
    write_csv(folder / "latency-summary.csv", summary)
    trips = round_trips(rows, plan.sessions, saves=plan.service.save_config == "each")
    if trips:
        write_csv(folder / "latency-round-trips.csv", trips)
    trips_table, trips_notes = round_trip_report(trips)
    notes += trips_notes
    write_json(folder / "latency.json", {"plan": asdict(plan), "environment": bench.environment(),
                                         "service": service, "points": points, "summary": summary, "rows": rows,
                                         "round_trips": trips, "router_probe_rows": probe_rows, "skipped": skipped})
    plots = [_stacked_plot(folder / "latency.png", summary, plan)]
    if probe_rows:
        plots.append(_probe_plot(folder / "latency-router-probe.png", probe_rows))
    notes.append("Split from the engine's journal (registry_ms + invocation_ms + router_ms = total_ms): the WAN's "
                 "round trips land in router_ms, since the engine counts the time it waits on a router there. "
                 f"Sessions: {', '.join(plan.sessions)} (per-operation: every operation logs in to each router "
                 "and out again, as the reference system's server did per invocation; pooled: flexzone's default, "
                 "logged in by each point's warm-up lists, kept in latency-warmup.csv); list: lsifcp of the remote "
                 f"router through the API; configuration saved {plan.service.save_config}; simulator timing scale "
                 f"{plan.service.timing_scale:g}.")
    again = [f"{p['rtt_ms']:g} ms" for p in points if p.get("remeasured_after")]
    if again:
        notes.append(f"Measured twice because the emulator spoiled the first attempt: {', '.join(again)} "
                     "(reasons in the JSON, remeasured_after).")
    invalid = sum(1 for p in points if not p["valid"])
    if invalid:
        notes.append(f"{invalid} points were spoiled by the emulator (marked invalid): "
                     + "; ".join(f"{p['rtt_ms']:g} ms: {', '.join(p['health'])}" for p in points if not p["valid"]))
    failed = sum(1 for r in rows if r["state"] != "succeeded")
    if failed:
        notes.append(f"{failed} operations did not succeed (see latency.csv, column error).")
    return Outcome("latency", "Operation time and its registry / invocation / router split vs WAN latency "
                   "(Figures 11-13)", folder, command,
                   markdown_table(["links", "sessions", "op", "RTT ms", "registry ms", "invocation ms", "router ms",
                                   "total ms", "n", "failures"], table) + ("\n\n" + trips_table if trips else ""),
                   plots, notes, skipped, valid=not invalid and bool(rows))


def _stacked_plot(path: Path, summary: list[dict[str, Any]], plan: Plan) -> Path:
    import matplotlib.pyplot as plt

    import lab.plots  # noqa: F401 - selects matplotlib's Agg backend

    colors = {"registry_ms": "#4477aa", "invocation_ms": "#ddaa33", "router_ms": "#bb5566"}
    modes = list(dict.fromkeys((s.get("links", "iFCP"), s["sessions"]) for s in summary))
    modes = modes or [("iFCP", "per-operation")]
    fig, axes = plt.subplots(len(modes), len(OPS), figsize=(5.2 * len(OPS), 4.2 * len(modes)), squeeze=False)
    for row_axes, (links, sessions) in zip(axes, modes, strict=True):
        for ax, op in zip(row_axes, OPS, strict=True):
            cells = [s for s in summary if s["op"] == op and s["sessions"] == sessions
                     and s.get("links", "iFCP") == links]
            labels = [f"{s['rtt_ms']:g}" for s in cells]
            bottom = [0.0] * len(cells)
            for phase in PHASES:
                heights = [s[phase] for s in cells]
                ax.bar(labels, heights, bottom=bottom, color=colors[phase], label=phase.removesuffix("_ms"))
                bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
            ax.set_title(f"{links} {op} (median), {sessions} sessions")
            ax.set_xlabel("WAN round trip (ms)")
            ax.set_ylabel("ms")
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle("Operation time split vs RTT (service at primary; iFCP: Eclipse + Nishan, FCIP: FOS + MDS; "
                 f"timing scale {plan.service.timing_scale:g})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _probe_plot(path: Path, probe_rows: list[dict[str, Any]]) -> Path:
    from lab.plots import Panel, Series, figure

    series = []
    for op in OPS:
        rtts = sorted({r["rtt_ms"] for r in probe_rows})
        ys = [statistics.median([r["seconds"] for r in probe_rows if r["op"] == op and r["rtt_ms"] == x and r["ok"]]
                                or [float("nan")]) for x in rtts]
        series.append(Series(op, rtts, ys))
    return figure(path, [Panel("router-only probe (fresh session per operation)", series, {}, xlabel="RTT (ms)",
                               ylabel="seconds", logx=False, byte_ticks=False)], "Drivers alone vs RTT", columns=1)

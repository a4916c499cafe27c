"""`sites`: every site connects to a device of every other site at once, across a WAN of several sites.

The testbed grows to five site namespaces, each with its own router simulator, a platform mix: an McData
Eclipse at `primary` and Nishan IPS 3000s at `remote` and `site3` (iFCP gateways, telnet), a Brocade FOS
switch at `site4` and a Cisco MDS at `site5` (FCIP, SSH). The demo registry (`loaddemo`, FCIP sites
included) names four of them; the run adds `distant-site` with its router and array, and an array at
`west-site`, through the API as an admin would. Every path between two sites has impairments of its own:
`near` between most, `far` to and from the distant site (site3), so one site is far away.

The engine runs in the primary site's namespace (as in `latency` and `loss`) with several workers, and the
lab asks for all N x (N - 1) connects at the same moment, one client thread each: site A asks for the
array of site B (`POST /api/connect/`). The planner refuses what no router could carry, and says why: an
iFCP gateway and an FCIP switch do not speak to each other, and an FCIP tunnel port peers with one gateway
only. Those pairs are reported as refused, with the reason. Then registry and routers must agree
(reconcile, report only); then, path by path, block transfers (fio over NBD, as `transfer` does) run from
site A's host through A's router to B's router and B's array, each data-path relay open only while the
registry, in agreement with the routers, holds that link up; then all links are disconnected at once and
agreement is checked again. Per path: connect and disconnect time (the journal's total and router part,
and the client's wall time) and the write / read rate.
"""

from __future__ import annotations

import re
import secrets
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cli.client import Client
from cli.errors import CliError
from lab.experiments.base import (
    ROOT,
    Bench,
    Budget,
    Outcome,
    Progress,
    markdown_table,
    python_env,
    relay_argv,
    wait_listening,
    write_csv,
    write_json,
)
from lab.experiments.service import SIM_PORT, WEST_ARRAY, LabService, ServiceSettings, add_array
from lab.plots import Panel, Series, figure
from lab.profiles import Impairment, LinkProfile
from lab.xdd import NbdTarget, SitePlace, XddRun, nbd_uri, xdd_nbd

MIB = 1 << 20
STORAGE_PORT = 10900  # beside the other experiments' NBD ports (10809, 10810), which may be in use
PATH_PORT_BASE = 11000  # site A's relay towards site B listens on PATH_PORT_BASE + B's index


@dataclass(frozen=True)
class SiteRole:
    """A lab site as the registry knows it: its site, router and platform, and the array it shares."""

    lab_site: str
    site: str
    router: str
    platform: str
    device: str
    # Made by the run through the API (the demo registry lacks them): the site with its router, the device.
    new_site: dict[str, Any] | None = None
    new_device: dict[str, Any] | None = None


SITES = (
    SiteRole("primary", "primary-site", "primary-rtr", "mcdata_eclipse", "XRAID1"),
    SiteRole("remote", "remote-site", "remote-rtr", "nishan_ips3000", "XRAID2"),
    SiteRole("site3", "distant-site", "distant-rtr", "nishan_ips3000", "DISTANT-ARRAY1",
             new_site={"display_name": "DICE-DISTANT", "msan_id": 5, "router_port": 6,
                       "description": "A distant iFCP site, the far end of the lab"},
             new_device={"device_id": "distant-array1", "description": "DISTANT-ARRAY1",
                         "wwn": "20:00:00:04:53:00:05:a5", "zone": 5, "zone_description": "Distant shared storage",
                         "owner_site": "distant-site"}),
    SiteRole("site4", "east-site", "east-rtr", "brocade_fos", "EAST-ARRAY1"),
    SiteRole("site5", "west-site", "west-rtr", "cisco_mds", WEST_ARRAY["description"], new_device=WEST_ARRAY),
)


@dataclass(frozen=True)
class Plan:
    near: Impairment  # each way, between every two sites but the distant one
    far: Impairment  # each way, to and from the distant site
    distant: str = "site3"
    size_bytes: int = 16 * MIB  # per path and direction
    record_bytes: int = 1 * MIB
    time_limit_s: float = 5.0
    concurrency: int = 4  # the engine's workers
    service: ServiceSettings = field(default_factory=ServiceSettings)
    budget_s: float = 300

    @property
    def target_bytes(self) -> int:
        return 1 << 20

    def profile(self, a: str, b: str) -> Impairment:
        return self.far if self.distant in (a, b) else self.near


QUICK = Plan(near=Impairment(delay_ms=10), far=Impairment(delay_ms=40),
             service=ServiceSettings(timing_scale=0.05, router_timeout=15, total_timeout=120), budget_s=300)
FULL = Plan(near=Impairment(delay_ms=10), far=Impairment(delay_ms=80, loss_pct=0.5), size_bytes=256 * MIB,
            time_limit_s=30, service=ServiceSettings(timing_scale=0.2, router_timeout=30, total_timeout=300),
            budget_s=1800)


class SitesService(LabService):
    """The service with a router at every site of `SITES`, the engine at the primary site."""

    platforms = {role.lab_site: role.platform for role in SITES}
    fcip = True

    def __init__(self, lab: Any, settings: ServiceSettings, concurrency: int) -> None:
        super().__init__(lab, settings)
        self.concurrency = concurrency
        self.roles = {role.lab_site: role for role in SITES}
        self.local = threading.local()

    def registry_names(self, site: str) -> tuple[str, str]:
        role = self.roles[site]
        return role.site, role.router

    def prepare_registry(self, client: Client) -> None:
        assert self.deployment is not None
        for role in SITES:
            where = self.lab.site(role.lab_site)
            if role.new_site is not None:
                client.request("POST", "/api/sites/", body={
                    "name": role.site, **role.new_site, "management_ip": where.mgmt_addr, "data_ip": where.data_addr})
                password = self.deployment.password(role.router)
                password.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                password.write_text(secrets.token_urlsafe(18) + "\n")
                password.chmod(0o600)
                client.request("POST", "/api/routers/", body={
                    "name": role.router, "site": role.site, "platform": role.platform, "transport": "telnet",
                    "host": where.mgmt_addr, "port": SIM_PORT, "username": "admin",
                    "secret_ref": f"file:{role.router}"})
            if role.new_device is not None:
                add_array(client, role.new_device, shareable=True)
        # Every other site asks for each array at once: they are shared (a device that is not is locked by
        # the first site that connects it, and the others are refused until it lets go).
        devices = {d["description"]: d for d in client.get_all("/api/devices/")}
        for role in SITES:
            if not devices[role.device]["shareable"]:
                client.request("PATCH", f"/api/devices/{devices[role.device]['id']}/", body={"shareable": True})

    def thread_client(self) -> Client:
        """A REST client of this thread's own (a keep-alive session is not shared between threads)."""
        client = getattr(self.local, "client", None)
        if client is None:
            assert self.deployment is not None
            client = self.local.client = self.deployment.client("root", timeout=self.settings.total_timeout + 60)
        return client

    def path_operation(self, kind: str, a: SiteRole, b: SiteRole, deadline: float) -> dict[str, Any]:
        """Site a asks for (add) or gives up (remove) site b's array; one row, as LabService.operation's."""
        path = "/api/connect/" if kind == "add" else "/api/disconnect/"
        started = time.perf_counter()
        row: dict[str, Any] = {"kind": kind, "from": a.lab_site, "to": b.lab_site, "site": a.site, "device": b.device}
        try:
            op = self._submit(path, {"site": a.site, "device_description": b.device}, deadline,
                             client=self.thread_client())
        except CliError as exc:
            refused = exc.status is not None and 400 <= exc.status < 500
            return {**row, "state": "refused" if refused else "error", "attempts": 0, "error": exc.message[:400],
                    "total_ms": None, "router_ms": None, "wall_ms": (time.perf_counter() - started) * 1000}
        return {**row, "state": op["state"], "attempts": op["attempts"], "error": (op["error"] or "")[:400],
                "total_ms": op["total_ms"], "router_ms": op["router_ms"],
                "wall_ms": (time.perf_counter() - started) * 1000}

    def up_links(self) -> set[tuple[str, str]]:
        """(requesting site, device) of every link the registry holds up."""
        assert self.client is not None
        return {(link["site"], link["device"]) for link in self.client.get_all("/api/links/", params={"state": "up"})}


def run(bench: Bench, plan: Plan, folder: Path, out: TextIO | None = None, command: str = "") -> Outcome:
    out = out or sys.stderr
    lab = getattr(bench, "lab", None)
    if lab is None:
        raise RuntimeError("sites needs the lab (root, --where lab): its paths are emulated between namespaces")
    wanted = [role.lab_site for role in SITES]
    if list(lab.sites)[:len(wanted)] != wanted:
        raise RuntimeError(f"sites needs a lab with the sites {', '.join(wanted)} (python -m lab up --sites "
                           f"{len(wanted)}); this one has {', '.join(lab.sites)}")
    budget = Budget(plan.budget_s)
    pairs = [(a, b) for a in SITES for b in SITES if a is not b]
    progress = Progress([60, 20, 2 * plan.time_limit_s * len(pairs) / 2, 30], out, label="sites ")
    touched = _impair(lab, plan)
    rows: list[dict[str, Any]] = []
    transfers: list[dict[str, Any]] = []
    agreement: dict[str, Any] = {}
    try:
        with SitesService(lab, plan.service, plan.concurrency) as service:
            deadline = time.monotonic() + max(budget.left(), 60)
            progress.step(f"{len(pairs)} connects at once")
            rows += _all_at_once(service, "add", pairs, deadline)
            progress.step("agreement after the connects")
            agreement["after_connect"] = _agreement(service, deadline)
            progress.step("per-path transfers")
            connected = [(a, b) for a, b in pairs if _row(rows, "add", a, b)["state"] == "succeeded"]
            transfers = _transfers(lab, bench, plan, service, connected, budget)
            progress.step(f"{len(connected)} disconnects at once")
            rows += _all_at_once(service, "remove", connected, deadline)
            agreement["after_disconnect"] = _agreement(service, deadline)
            progress.finished()
    finally:
        for a, b in touched:
            lab.impair(a, b, LinkProfile.symmetric("none", Impairment()))
    return _outcome(plan, folder, command, pairs, rows, transfers, agreement, budget.skipped)


def _impair(lab: Any, plan: Plan) -> list[tuple[str, str]]:
    names = [role.lab_site for role in SITES]
    touched = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            imp = plan.profile(a, b)
            lab.impair(a, b, LinkProfile.symmetric(f"{a}-{b}", imp))
            touched.append((a, b))
    return touched


def _all_at_once(service: SitesService, kind: str, pairs: list[tuple[SiteRole, SiteRole]],
                 deadline: float) -> list[dict[str, Any]]:
    """Every pair's operation submitted at the same moment, one client thread each."""
    if not pairs:
        return []
    start = threading.Barrier(len(pairs))

    def one(pair: tuple[SiteRole, SiteRole]) -> dict[str, Any]:
        service.thread_client()  # its TLS session first, so that the barrier releases requests, not handshakes
        start.wait(timeout=60)
        return service.path_operation(kind, *pair, deadline)

    with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
        return list(pool.map(one, pairs))


def _agreement(service: SitesService, deadline: float) -> dict[str, Any]:
    report = service.agreement(deadline, final_links=False)  # reconcile read every router already
    return {key: report[key] for key in ("state", "readable", "agree", "drift", "reconcile_ms", "error")}


def _transfers(lab: Any, bench: Bench, plan: Plan, service: SitesService,
               connected: list[tuple[SiteRole, SiteRole]], budget: Budget) -> list[dict[str, Any]]:
    """Write then read each connected path's extent, from site A's host to site B's array, one path at a time."""
    rows: list[dict[str, Any]] = []
    names: list[str] = []
    targets: list[NbdTarget] = []
    links_dir = service.scratch / "links"
    links_dir.mkdir(exist_ok=True)
    try:
        for owner in {b.lab_site: b for _, b in connected}.values():
            where = lab.site(owner.lab_site)
            place = SitePlace(lab, owner.lab_site)
            targets.append(NbdTarget(place, where.storage_addr, STORAGE_PORT, plan.size_bytes,
                                     name=f"sites-nbd-{owner.lab_site}").start())
            names.append(_relay(lab, place, f"sites-in-{owner.lab_site}", f"{where.data_addr}:{STORAGE_PORT}",
                                f"{where.storage_addr}:{STORAGE_PORT}", None))
        up = service.up_links()
        for a, b in connected:
            link = links_dir / f"{a.lab_site}-{b.lab_site}"
            link.write_text("up" if (a.site, b.device) in up else "down")
            port = PATH_PORT_BASE + lab.site(b.lab_site).index
            names.append(_relay(lab, SitePlace(lab, a.lab_site), f"sites-path-{a.lab_site}-{b.lab_site}",
                                f"{lab.site(a.lab_site).data_addr}:{port}",
                                f"{lab.site(b.lab_site).data_addr}:{STORAGE_PORT}", link))
        for a, b in connected:
            rows += _transfer(lab, bench, plan, a, b, up, budget)
    finally:
        for name in names:
            lab.stop(name)
        for target in targets:
            target.stop()
    return rows


def _relay(lab: Any, place: SitePlace, name: str, listen: str, target: str, link: Path | None) -> str:
    argv = relay_argv(listen, target)
    if link is not None:
        argv += ["--link", f"file:{link}"]
    place.spawn(name, argv, cwd=ROOT, env=python_env())
    if link is None or link.read_text() == "up":
        wait_listening(place, int(listen.rsplit(":", 1)[1]))
    return name


def _transfer(lab: Any, bench: Bench, plan: Plan, a: SiteRole, b: SiteRole, up: set[tuple[str, str]],
              budget: Budget) -> list[dict[str, Any]]:
    base = {"from": a.lab_site, "to": b.lab_site, "device": b.device,
            "rtt_ms": 2 * plan.profile(a.lab_site, b.lab_site).delay_ms}
    if (a.site, b.device) not in up:
        return [{**base, "op": op, "mb_per_s": None, "valid": False,
                 "error": "the registry does not hold this link up"} for op in ("write", "read")]
    uri = nbd_uri(lab.site(a.lab_site).data_addr, PATH_PORT_BASE + lab.site(b.lab_site).index)
    rows = []
    for op in ("write", "read"):
        if budget.left() < plan.time_limit_s + 5:
            rows.append({**base, "op": op, "mb_per_s": None, "valid": False, "error": "over the time budget"})
            budget.skipped.append(f"{a.lab_site}->{b.lab_site} {op}")
            continue
        run_ = XddRun(op, plan.record_bytes, plan.size_bytes, time_limit_s=plan.time_limit_s)
        spoiled = ""
        for attempt in (1, 2):  # a pass the emulator spoiled is measured once more, its reason kept
            failure = ""
            with bench.measurement() as health:
                try:
                    result = xdd_nbd(SitePlace(lab, a.lab_site), uri, run_)
                except Exception as exc:  # noqa: BLE001 - one path's failure is its row; the others still run
                    failure = f"{type(exc).__name__}: {str(exc)[:300]}"
            reasons = path_reasons(health.reasons, a.lab_site, b.lab_site)
            if failure:
                # A dead or overrun emulator on the path explains a refused or cut connection.
                row = {**base, "op": op, "mb_per_s": None, "valid": False, "error": "; ".join([failure, *reasons]),
                       "remeasured_after": spoiled}
                break
            row = {**base, "op": op, "mb_per_s": result.mb_per_s, "bytes": result.bytes, "seconds": result.seconds,
                   "valid": not reasons, "error": "; ".join(reasons), "remeasured_after": spoiled}
            if not reasons or attempt == 2 or budget.left() < plan.time_limit_s + 5:
                break
            spoiled = "; ".join(reasons)
        rows.append(row)
    return rows


def path_reasons(reasons: list[str], a: str, b: str) -> list[str]:
    """The emulator's complaints that concern the path a <-> b: those about its two hops ("a>b: ...") and
    those about no hop in particular. A hop the transfer did not cross (another pair of sites, idle) may fall
    behind without touching this measurement."""
    ours = (f"{a}>{b}:", f"{b}>{a}:")
    return [r for r in reasons if r.startswith(ours) or not re.match(r"[\w-]+>[\w-]+:", r)]


def _row(rows: list[dict[str, Any]], kind: str, a: SiteRole, b: SiteRole) -> dict[str, Any]:
    return next(r for r in rows if r["kind"] == kind and r["from"] == a.lab_site and r["to"] == b.lab_site)


def _seconds(value: float | None) -> Any:
    return "-" if value is None else round(value / 1000, 2)


def _rate(transfers: list[dict[str, Any]], a: SiteRole, b: SiteRole, op: str) -> Any:
    found = [t for t in transfers if t["from"] == a.lab_site and t["to"] == b.lab_site and t["op"] == op]
    if not found or found[0]["mb_per_s"] is None:
        return "-"
    return round(found[0]["mb_per_s"], 1) if found[0]["valid"] else f"{found[0]['mb_per_s']:.1f} (invalid)"


def _outcome(plan: Plan, folder: Path, command: str, pairs: list[tuple[SiteRole, SiteRole]],
             rows: list[dict[str, Any]], transfers: list[dict[str, Any]], agreement: dict[str, Any],
             skipped: list[str]) -> Outcome:
    write_csv(folder / "sites.csv", rows)
    write_csv(folder / "sites-transfers.csv", transfers)
    write_json(folder / "sites.json", {"plan": asdict(plan), "sites": [asdict(role) for role in SITES],
                                       "operations": rows, "transfers": transfers, "agreement": agreement,
                                       "skipped": skipped})
    table = []
    refused: dict[str, list[str]] = {}
    for a, b in pairs:
        add = _row(rows, "add", a, b)
        if add["state"] == "refused":
            refused.setdefault(refusal(add["error"]), []).append(f"{a.lab_site} -> {b.lab_site}")
            continue
        remove = next((r for r in rows if r["kind"] == "remove" and r["from"] == a.lab_site
                       and r["to"] == b.lab_site), {})
        table.append([f"{a.lab_site} -> {b.lab_site}", f"{a.platform} / {b.platform}",
                      2 * plan.profile(a.lab_site, b.lab_site).delay_ms, add["state"], _seconds(add["total_ms"]),
                      _seconds(add["router_ms"]), _seconds(add["wall_ms"]), remove.get("state", "-"),
                      _seconds(remove.get("total_ms")), _rate(transfers, a, b, "write"),
                      _rate(transfers, a, b, "read")])
    header = ["path (site -> array's site)", "routers", "path RTT ms", "connect", "connect s", "its router s",
              "waited s", "disconnect", "disconnect s", "write MB/s", "read MB/s"]
    succeeded = [r for r in rows if r["kind"] == "add" and r["state"] == "succeeded"]
    plots = [_plot(folder, plan, rows, transfers)] if succeeded else []
    tables = [markdown_table(header, table)]
    if refused:
        tables.append("Refused by the planner, as they should be (the answer's own words are in sites.csv):\n\n"
                      + markdown_table(["why", "pairs (site -> array's site)"],
                                       [[why, ", ".join(which)] for why, which in refused.items()]))
    agree = {when: report.get("agree") for when, report in agreement.items()}
    notes = [
        f"{len(SITES)} sites: " + ", ".join(f"{r.lab_site} = {r.site} ({r.platform})" for r in SITES) + ". "
        f"Paths: {_describe(plan.near)} each way between sites, {_describe(plan.far)} to and from {plan.distant}; "
        "the engine runs at primary, so each operation's router sessions cross primary's paths to both routers.",
        f"All {len(pairs)} connects were submitted at the same moment ({plan.concurrency} engine workers); "
        f"{len(succeeded)} succeeded and {sum(map(len, refused.values()))} were refused by the planner, each for a "
        "reason a real fabric has (table above): an iFCP gateway and an FCIP switch do not speak to each other, and "
        "an FCIP tunnel port peers with one gateway. Every array is shared (the run marks it so), so no site's "
        "lock keeps another out.",
        f"Transfers: {plan.size_bytes // MIB} MiB written then read per path, {plan.record_bytes // MIB} MiB "
        f"records, one path at a time, time limit {plan.time_limit_s:g} s per pass.",
        "Registry and routers agree after the connects: "
        f"{_yes(agree.get('after_connect'))}; after the disconnects: {_yes(agree.get('after_disconnect'))}.",
    ]
    if succeeded:
        times = [r["total_ms"] / 1000 for r in succeeded]
        notes.append(f"Connect time over the paths: median {statistics.median(times):.2f} s, max {max(times):.2f} s.")
    failed = [r for r in rows if r["state"] not in ("succeeded", "refused")]
    notes += [f"FAILED {r['kind']} {r['from']} -> {r['to']}: {r['state']}: {r['error']}" for r in failed]
    valid = (bool(succeeded) and not failed and all(agree.values()) and len(agree) == 2
             and all(t["valid"] for t in transfers))
    return Outcome("sites", "Several sites: every site to every other site's array, at once", folder, command,
                   "\n\n".join(tables), plots, notes, skipped, valid=valid)


REFUSALS = (("different protocols", "iFCP gateway and FCIP switch: different protocols"),
            ("peers with one gateway", "the FCIP tunnel port already peers with another site's gateway"),
            ("is locked by", "the array is locked by another site"))


def refusal(message: str) -> str:
    """The planner's refusal in a few words, for grouping the refused pairs (the message itself otherwise)."""
    return next((short for marker, short in REFUSALS if marker in message), message)


def _describe(imp: Impairment) -> str:
    text = f"{imp.delay_ms:g} ms"
    return text + (f", {imp.loss_pct:g} % loss" if imp.loss_pct else "")


def _yes(value: Any) -> str:
    return {True: "yes", False: "**no**"}.get(value, "not checked")


def _plot(folder: Path, plan: Plan, rows: list[dict[str, Any]], transfers: list[dict[str, Any]]) -> Path:
    ok = [r for r in rows if r["kind"] == "add" and r["state"] == "succeeded"]
    rtt = {(r["from"], r["to"]): 2 * plan.profile(r["from"], r["to"]).delay_ms for r in ok}
    by_rtt = sorted(ok, key=lambda r: rtt[(r["from"], r["to"])])
    panels = [Panel("connect time per path (all submitted at once)", [
        Series("journal total", [rtt[(r["from"], r["to"])] for r in by_rtt], [r["total_ms"] / 1000 for r in by_rtt],
               style="o"),
        Series("its router part", [rtt[(r["from"], r["to"])] for r in by_rtt], [r["router_ms"] / 1000 for r in by_rtt],
               style="s")], xlabel="path RTT (ms)", ylabel="seconds", logx=False, byte_ticks=False)]
    series = []
    for op, style in (("write", "o"), ("read", "s")):
        kept = [t for t in transfers if t["op"] == op and t["mb_per_s"] is not None]
        series.append(Series(op, [t["rtt_ms"] for t in kept], [t["mb_per_s"] for t in kept], style=style))
    panels.append(Panel("transfer rate per path", series, xlabel="path RTT (ms)", logx=False, byte_ticks=False))
    return figure(folder / "sites.png", panels, f"{len(SITES)} sites, every path at once")

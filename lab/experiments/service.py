"""The flexzone service in the lab: simulators at both sites, the engine at the primary site, driven over REST.

As in the reference testbed, the management server sits at the primary site and reaches every router
across the emulated WAN: an McData Eclipse simulator on the primary site's management address, a Nishan
IPS 3000 simulator on the remote site's, and the operations engine (`manage.py worker`) running inside
the primary site's namespace. The rest of the service is started from outside as a user would
(lab.deployment): a temporary PostgreSQL database of its own, the demo registry and PKI loaded by
`manage.py loaddemo` and `manage.py demo_pki`, and `manage.py serve`, the REST API over mutual TLS, on this
host's loopback. The lab then uses that API as the admin principal (root): it moves the demo sites and
routers onto the lab's addresses and simulator ports, and asks for every operation there. The API and the
database stay on this host (the worker reaches PostgreSQL over its UNIX socket), so only the engine's
router sessions cross the WAN. Router passwords are the ones `loaddemo` generated (file:NAME secrets in the
run's scratch directory), which the simulators read with --password-file.

`LabService.run()` returns the engine's own journal figures per operation, as the API's operation JSON
carries them: registry_ms (planning, locks, journal), router_ms (waiting on the routers, WAN included:
they are worked at once, so it is the slowest router's time), invocation_ms (the rest: session handling,
retries' back-off, verification bookkeeping) and total_ms; listed_router_ms is the listed (WAN)
router's own time (the result's router_ms_each); wall_ms is what the client waited (REST, queue and the
operation). The operations are what a user asks for: `add` and `remove` are /api/connect/ and
/api/disconnect/ (`flexzone --add/--remove`), `list` is the V1 lsifcp through /api/invoke/ on the
remote router (`flexzone-rtr --lsifcp`), the router across the WAN.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

from cli.client import Client, json_body
from cli.errors import CliError
from lab.database import server_url
from lab.deployment import Deployment
from simulators.roundtrips import read_round_trips, turns_between

SIM_PORT = 2324  # 2323 is the router-only probe's simulator (mgmt.py), which may run beside it
USERNAME = "admin"  # the demo routers' user (manage.py loaddemo)
PLATFORMS = {"primary": "mcdata_eclipse", "remote": "nishan_ips3000"}  # the demo's: primary-rtr, remote-rtr
SSH_PLATFORMS = ("brocade_fos", "cisco_mds")  # the FCIP switches are managed over SSH, the iFCP gateways telnet
REQUESTER = "primary-site"
DEVICE = "XRAID2"  # owned by the remote site: an add configures both routers, the remote one across the WAN
LISTED = "remote-rtr"
WORKER = "svc-worker"
TERMINAL = ("succeeded", "failed", "rolled_back")


@dataclass(frozen=True)
class ServiceSettings:
    """How the service runs in an experiment; recorded with the results."""

    timing_scale: float = 0.05  # simulators' seed timing (Eclipse ~12 s to a prompt at 1.0)
    router_timeout: float = 30.0  # Router.connect_timeout / command_timeout
    max_attempts: int = 5  # FLEXZONE_OPS_MAX_ATTEMPTS
    backoff: float = 0.5  # FLEXZONE_OPS_BACKOFF
    total_timeout: float = 180.0  # FLEXZONE_OPS_TOTAL_TIMEOUT
    save_config: str = "each"  # a batched save would land inside the next operation's router time
    pool: bool = True  # pooled logged-in sessions, as the engine runs by default

    def ops_env(self) -> dict[str, str]:
        return {"FLEXZONE_OPS_MAX_ATTEMPTS": str(self.max_attempts), "FLEXZONE_OPS_BACKOFF": f"{self.backoff:g}",
                "FLEXZONE_OPS_BACKOFF_MAX": f"{max(self.backoff * 8, 1):g}",
                "FLEXZONE_OPS_TOTAL_TIMEOUT": f"{self.total_timeout:g}", "FLEXZONE_OPS_SAVE_CONFIG": self.save_config,
                "FLEXZONE_OPS_POOL": "1" if self.pool else "0", "FLEXZONE_OPS_ROUTER_WAIT": "30",
                # An operation's answer is waited for in one request (?wait=) when it can be.
                "FLEXZONE_API_MAX_WAIT": f"{self.total_timeout + 30:g}"}


class LabService:
    """The service and its two routers in a running lab; a context manager that leaves nothing behind.

    `platforms` (lab site -> simulated platform) and `registry_names` say which routers run where and which
    registry site and router each one is; `fcip` loads the demo's FCIP sites too; `concurrency` is the
    engine's (one operation at a time by default, so that each one's round trips are its own)."""

    platforms: dict[str, str] = PLATFORMS
    fcip = False
    concurrency = 1
    links = "iFCP"  # what the routers of `platforms` join with, as the results label the run
    requester, device, listed = REQUESTER, DEVICE, LISTED  # add/remove: requester asks for device; list: listed

    def __init__(self, lab: Any, settings: ServiceSettings | None = None) -> None:
        self.lab = lab
        self.settings = settings or ServiceSettings()
        self.deployment: Deployment | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="fz-svc-"))
        self.sims: list[str] = []
        self.worker_pool: bool | None = None  # the running worker's session pooling, None: no worker
        self.worker_url: str | None = None  # the database as the worker in the primary site reaches it
        self.client: Client | None = None

    @property
    def database(self) -> str:
        return self.deployment.database.name if self.deployment else ""

    def start(self) -> Self:
        try:
            deployment = self.deployment = Deployment(server_url(), label=self.lab.prefix, fcip=self.fcip,
                                                      procs=self.lab.procs, env=self.settings.ops_env(),
                                                      serve_name="svc-serve")
            self.worker_url = deployment.database.socket_url()
            if self.worker_url is None:
                raise RuntimeError("the engine in the primary site reaches PostgreSQL over its UNIX socket, and "
                                   "DATABASE_URL names a server that is not on this host (or whose socket is not in "
                                   "/var/run/postgresql, /run/postgresql or /tmp)")
            deployment.start()
            self._start_worker(self.settings.pool)  # early: it is up by the first operation
            self.client = deployment.client("root", timeout=self.settings.total_timeout + 60)
            self.prepare_registry(self.client)
            for site, platform in self.platforms.items():
                name = f"svc-sim-{site}"
                ssh = platform in SSH_PLATFORMS
                self.lab.start_router_sim(site, platform, name=name, telnet_port=None if ssh else SIM_PORT,
                                          ssh_port=SIM_PORT if ssh else None, state_dir=self.scratch / name, args=[
                                              "--timing-scale", f"{self.settings.timing_scale:g}", "--username",
                                              USERNAME, "--password-file",
                                              str(deployment.password(self.registry_names(site)[1])), "--seed", "7",
                                              # a fabric switch carries other hosts' zoning, as a real one does
                                              *(["--production-zoning"] if ssh else [])])
                self.sims.append(name)
            for site in self.platforms:
                self.lab.wait_listening(site, SIM_PORT, timeout=20)
            self._move_registry_into_the_lab(self.client)
        except BaseException:
            self.stop()
            raise
        return self

    def registry_names(self, site: str) -> tuple[str, str]:
        """The registry site and router a lab site's simulator stands for (the demo's names by default)."""
        return f"{site}-site", f"{site}-rtr"

    def prepare_registry(self, client: Client) -> None:
        """Registry entries the run needs beyond the demo's (none here), made through the API before the
        simulators start (a router made here has its password file by then)."""

    def _move_registry_into_the_lab(self, client: Client) -> None:
        """The demo's sites and routers on the lab's addresses, as an admin changes them through the API; an
        SSH router's host key is the one its simulator generated, read from its state directory and trusted
        as an admin would after comparing it (`manage.py routers trust`)."""
        sites = {s["name"]: s for s in client.get_all("/api/sites/")}
        routers = {r["name"]: r for r in client.get_all("/api/routers/")}
        for site, platform in self.platforms.items():
            where = self.lab.site(site)
            site_name, router_name = self.registry_names(site)
            client.request("PATCH", f"/api/sites/{sites[site_name]['id']}/",
                           body={"management_ip": where.mgmt_addr, "data_ip": where.data_addr})
            body: dict[str, Any] = {"host": where.mgmt_addr, "port": SIM_PORT, "username": USERNAME,
                                    "connect_timeout": self.settings.router_timeout,
                                    "command_timeout": self.settings.router_timeout}
            if platform in SSH_PLATFORMS:
                body["ssh_host_key"] = simulator_host_key(self.scratch / f"svc-sim-{site}")
            client.request("PATCH", f"/api/routers/{routers[router_name]['id']}/", body=body)

    def _start_worker(self, pool: bool) -> None:
        """A fresh `manage.py worker` in the primary site (a fresh session pool, as each run had its own)."""
        assert self.deployment is not None
        self.deployment.stop_process(WORKER)
        self.deployment.spawn(WORKER, ["worker", "--concurrency", str(self.concurrency)],
                              netns=self.lab.site("primary").netns, database_url=self.worker_url,
                              FLEXZONE_OPS_POOL="1" if pool else "0")
        self.worker_pool = pool

    def run(self, reps: int, *, warmup: bool = True, reconcile: bool = False, repair: bool = False,
            pool: bool | None = None, timeout: float | None = None,
            ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Operations through the service: (rows, reconcile report or None).

        `pool` overrides the settings' session pooling for this run (False: every operation logs in and out,
        as the reference system's server did for each invocation). A pooled run starts with a fresh worker,
        so its warm-up (a `list` of each router, reported as rep 0) logs the pool in; `timeout` bounds the
        whole run."""
        assert self.client is not None
        pooled = self.settings.pool if pool is None else pool
        if pooled or self.worker_pool != pooled:
            self._start_worker(pooled)
        if timeout is None:
            timeout = (3 * reps + 4) * self.settings.total_timeout + 60
        deadline = time.monotonic() + timeout
        rows = ([self.operation("list", 0, deadline, router=self.registry_names(site)[1]) for site in self.platforms]
                if warmup else [])
        for rep in range(1, reps + 1):
            for kind in ("add", "list", "remove"):
                rows.append(self.operation(kind, rep, deadline))
        report = None
        if reconcile:
            report = self.agreement(deadline)
            if repair and not report["agree"]:
                op = self._submit("/api/reconcile/", {"repair": True, "policy": "registry"}, deadline)
                report["repair"] = {"state": op["state"], "error": (op["error"] or "")[:300], "result": op["result"]}
                report["after_repair"] = self.agreement(deadline)
        return rows, report

    def operation(self, kind: str, rep: int, deadline: float, router: str | None = None) -> dict[str, Any]:
        """One operation asked for over REST (`list`: of `router`). A request the API refused (a 4xx answer)
        is a row too, state "refused", its wall time counted as registry time (the planner refused it); one
        that got no answer, a 5xx, or lost its operation while following it is state "error", its wall time
        counted only as the total, so that neither passes for the service's own time."""
        asked = {"site": self.requester, "device_description": self.device}
        path, body = {"add": ("/api/connect/", asked), "remove": ("/api/disconnect/", asked),
                      "list": ("/api/invoke/", {"router": router or self.listed, "command": "lsifcp"})}[kind]
        turns_before = self.round_trips()
        started = time.perf_counter()
        try:
            op = self._submit(path, body, deadline)
        except CliError as exc:
            wall = (time.perf_counter() - started) * 1000
            refused = exc.status is not None and 400 <= exc.status < 500
            return {"kind": kind, "rep": rep, "state": "refused" if refused else "error", "attempts": 0,
                    "error": exc.message[:300], "registry_ms": wall if refused else 0.0, "invocation_ms": 0.0,
                    "router_ms": 0.0, "listed_router_ms": 0.0, "total_ms": wall, "wall_ms": wall,
                    **self.turns_since(turns_before)}
        return {"kind": kind, "rep": rep, "state": op["state"], "attempts": op["attempts"],
                "error": (op["error"] or "")[:300], "registry_ms": op["registry_ms"],
                "invocation_ms": op["invocation_ms"], "router_ms": op["router_ms"], "total_ms": op["total_ms"],
                # The WAN router's own time: an operation's routers are worked at once, and its router_ms
                # is the slowest one's, which may be the near router's.
                "listed_router_ms": ((op.get("result") or {}).get("router_ms_each") or {}).get(self.listed,
                                                                                              op["router_ms"]),
                "wall_ms": (time.perf_counter() - started) * 1000, **self.turns_since(turns_before)}

    def round_trips(self) -> dict[str, dict[str, Any]]:
        """Each site's simulator's client turns so far (simulators.roundtrips), from its state directory."""
        return {site: read_round_trips(self.scratch / f"svc-sim-{site}") for site in self.platforms}

    def turns_since(self, before: dict[str, dict[str, Any]]) -> dict[str, int]:
        """The turns each router took since `before` (one operation runs at a time: the worker has one
        thread), as row fields: `<site>_turns` the commands', `<site>_login_turns` those of the sessions it
        opened (telnet's login dialogue, an SSH session's set-up)."""
        now = self.round_trips()
        fields = {}
        for site in self.platforms:
            taken = turns_between(before[site], now[site])
            fields[f"{site}_turns"], fields[f"{site}_login_turns"] = taken["commands"], taken["login"]
        return fields

    def _submit(self, path: str, body: dict[str, Any], deadline: float, client: Client | None = None
                ) -> dict[str, Any]:
        """POST an operation, waiting for its end in the request (?wait=), then by re-reading it if need be
        (with `client`, a thread's own, or the service's)."""
        client = client or self.client
        assert client is not None
        wait = max(1.0, min(self.settings.total_timeout + 30, deadline - time.monotonic()))
        op = json_body(client.request("POST", path, params={"wait": f"{wait:.0f}"}, body=body, timeout=wait + 30))
        while op["state"] not in TERMINAL:
            if time.monotonic() > deadline:
                raise TimeoutError(f"operation {op['id']} ({path}) did not end within the run's time limit")
            time.sleep(0.2)
            op = client.get(op["url"])
        return op

    def agreement(self, deadline: float, tries: int = 3, final_links: bool = True) -> dict[str, Any]:
        """Reconcile (report only) and say whether registry and routers agree; retried, since it crosses the WAN.
        `final_links` also records what each router lists afterwards."""
        last: dict[str, Any] = {}
        for _ in range(tries):
            op = self._submit("/api/reconcile/", {"repair": False}, deadline)
            routers = (op["result"] or {}).get("routers", {})
            drift = {name: {key: report.get(key, []) for key in ("missing", "extra", "mismatched", "unresolved")}
                     for name, report in routers.items()}
            readable = op["state"] == "succeeded" and all("error" not in r for r in routers.values())
            last = {"state": op["state"], "error": (op["error"] or "")[:300], "readable": readable, "drift": drift,
                    "agree": readable and not any(v for d in drift.values() for v in d.values()),
                    "reconcile_ms": op["total_ms"]}
            if readable:
                break
        if final_links:
            last["final_links"] = self._final_links(deadline)
        return last

    def _final_links(self, deadline: float) -> Any:
        """What each router holds now (lsifcp on each, through the API)."""
        links: dict[str, Any] = {}
        for site in self.platforms:
            router = self.registry_names(site)[1]
            try:
                op = self._submit("/api/invoke/", {"router": router, "command": "lsifcp"}, deadline)
            except (CliError, TimeoutError) as exc:
                return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            if op["state"] != "succeeded":  # under heavy loss the read-back itself may fail: say so
                return {"error": f"{router}: {(op['error'] or op['state'])[:200]}"}
            links[router] = sorted([link["port"], link["zone"], link["remote_ip"], link.get("state")]
                                   for link in op["result"]["links"])
        return links

    def describe(self) -> dict[str, Any]:
        return {"service_site": "primary", "engine": "manage.py worker in the primary site's namespace",
                "api": "manage.py serve on this host's loopback, used as admin principal root",
                "database": self.database, "database_via": "unix socket (worker), DATABASE_URL's server (API)",
                "links": self.links, "requester": self.requester, "device": self.device,
                "list": f"lsifcp on {self.listed} through /api/invoke/",
                "routers": {site: {"platform": p, "mgmt": self.lab.site(site).mgmt_addr, "port": SIM_PORT}
                            for site, p in self.platforms.items()},
                "settings": asdict(self.settings)}

    def stop(self) -> None:
        try:
            for name in self.sims:
                self.lab.stop(name)
            self.sims = []
            if self.client is not None:
                self.client.session.close()
                self.client = None
        finally:
            try:
                if self.deployment is not None:
                    self.deployment.stop()
                self.worker_pool = None
            finally:
                shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FcipLabService(LabService):
    """The same, on the demo's FCIP pair: a Brocade FOS switch at the primary site (east-site, east-rtr) and a
    Cisco MDS at the remote one (west-site, west-rtr), both over SSH; east-site asks for an array the run adds
    at west-site, so an add zones east-site's initiators with it on both switches and builds the tunnel."""

    platforms = {"primary": "brocade_fos", "remote": "cisco_mds"}
    fcip = True
    links = "FCIP"
    requester, device, listed = "east-site", "WEST-ARRAY1", "west-rtr"
    NAMES = {"primary": ("east-site", "east-rtr"), "remote": ("west-site", "west-rtr")}

    def registry_names(self, site: str) -> tuple[str, str]:
        return self.NAMES[site]

    def prepare_registry(self, client: Client) -> None:
        add_array(client, WEST_ARRAY)


# The array the FCIP runs add at west-site (the demo gives that site hosts, no array).
WEST_ARRAY: dict[str, Any] = {"device_id": "west-array1", "description": "WEST-ARRAY1",
                              "wwn": "50:00:09:72:08:1a:f2:06", "zone": 6, "zone_description": "West FCIP storage",
                              "owner_site": "west-site"}


def add_array(client: Client, array: dict[str, Any], shareable: bool = False) -> None:
    """An array and its zone, added through the API as an admin would."""
    device = dict(array)
    zone = {"zone_id": device["zone"], "description": device.pop("zone_description")}
    client.request("POST", "/api/zones/", body=zone)
    client.request("POST", "/api/devices/", body={**device, "shareable": shareable})


def simulator_host_key(state_dir: Path, timeout: float = 20.0) -> str:
    """The public SSH host key ("<type> <base64>") a simulator keeps in its state directory."""
    import asyncssh

    path = state_dir / "ssh_host_key"
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no SSH host key in {state_dir} after {timeout:g} s")
        time.sleep(0.05)
    key = asyncssh.read_private_key(str(path))
    return " ".join(key.export_public_key("openssh").decode().split()[:2])


def phase_sum_ok(row: dict[str, Any], tolerance_ms: float = 1.0) -> bool:
    """registry + invocation + router == total (the engine's own bookkeeping; invocation is the remainder)."""
    return abs(row["registry_ms"] + row["invocation_ms"] + row["router_ms"] - row["total_ms"]) <= tolerance_ms

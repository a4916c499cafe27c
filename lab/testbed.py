"""The lab testbed: one network namespace per site, a WAN namespace between them, veth pairs.

```
 <prefix>-primary  fzs1 198.18.1.2/24 ---- fzw1 198.18.1.1/24 \
 <prefix>-remote   fzs2 198.18.2.2/24 ---- fzw2 198.18.2.1/24 -- <prefix>-wan (ip_forward=1, impairments)
 <prefix>-site3    fzs3 198.18.3.2/24 ---- fzw3 198.18.3.1/24 /
```

Every address is in 198.18.0.0/15 (RFC 2544 benchmarking space); sites only have a route to
198.18.0.0/15 via the WAN, never a default route, and only the WAN namespace forwards. Both ends of each
veth are created directly inside their namespaces, so nothing of the lab exists in the host namespace
and deleting the namespaces removes every interface, rule and qdisc. Offloads (TSO/GSO/GRO) are off on
every lab veth: with them on, a dropped "packet" is a 64 KB super-packet of ~15 segments.

Each site also carries the service addresses experiments bind to: the router's management address
(.10), its data-path address (.11), a storage target (.20) and a host (.30).

State (sites, backend, applied profiles) is kept in the run dir (`.lab/<prefix>/` in the repository by
default, or $FLEXZONE_LAB_DIR/<prefix>/, or exactly the directory given) together with PID files and logs
of every process the lab starts.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lab.backends import Backend, FallbackBackend, Health, Hop, TcNetemBackend, probe
from lab.procs import ProcessTable
from lab.profiles import Impairment, LinkProfile
from lab.runner import Runner, in_netns

LAB_NET = ipaddress.ip_network("198.18.0.0/15")
DEFAULT_PREFIX = "fzlab"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUN_DIR = REPO_ROOT / ".lab"
OFFLOADS = ["tso", "off", "gso", "off", "gro", "off"]


@dataclass(frozen=True)
class Site:
    """A site of the lab: its namespace, its link to the WAN and its service addresses."""

    name: str
    index: int
    netns: str

    def _host(self, n: int) -> str:
        return f"198.18.{self.index}.{n}"

    @property
    def subnet(self) -> str:
        return f"198.18.{self.index}.0/24"

    @property
    def gateway(self) -> str:
        return self._host(1)

    @property
    def addr(self) -> str:
        return self._host(2)

    @property
    def mgmt_addr(self) -> str:
        return self._host(10)

    @property
    def data_addr(self) -> str:
        return self._host(11)

    @property
    def storage_addr(self) -> str:
        return self._host(20)

    @property
    def host_addr(self) -> str:
        return self._host(30)

    @property
    def addresses(self) -> list[str]:
        return [self.addr, self.mgmt_addr, self.data_addr, self.storage_addr, self.host_addr]

    @property
    def site_if(self) -> str:
        return f"fzs{self.index}"

    @property
    def wan_if(self) -> str:
        return f"fzw{self.index}"


def site_names(count: int) -> list[str]:
    """primary, remote, site3, site4, ..."""
    if not 2 <= count <= 250:
        raise ValueError("a lab has between 2 and 250 sites")
    return ["primary", "remote", *(f"site{i}" for i in range(3, count + 1))]


class Lab:
    """A running (or to-be-started) testbed; all methods are safe to call again."""

    def __init__(self, prefix: str = DEFAULT_PREFIX, run_dir: Path | str | None = None,
                 runner: Runner | None = None) -> None:
        self.prefix = prefix
        # One run dir per prefix by default, so bringing up a second lab never stops the first one's processes.
        base = Path(os.environ.get("FLEXZONE_LAB_DIR") or DEFAULT_RUN_DIR)
        self.run_dir = Path(run_dir) if run_dir else base / prefix
        self.runner = runner or Runner()
        self.procs = ProcessTable(self.run_dir)
        self.sites: dict[str, Site] = {}
        self.backend_name = ""
        self.capabilities: dict[str, Any] = {}
        self.profiles: dict[str, dict[str, Any]] = {}
        self._backend: Backend | None = None
        self._load()

    # -- state ------------------------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.run_dir / "state.json"

    @property
    def wan_netns(self) -> str:
        return f"{self.prefix}-wan"

    def _load(self) -> None:
        try:
            state = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return
        if state.get("prefix") != self.prefix:
            return
        self.sites = {s["name"]: Site(**s) for s in state["sites"]}
        self.backend_name = state["backend"]
        self.capabilities = state.get("capabilities", {})
        self.profiles = state.get("profiles", {})

    def _save(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        state = {"prefix": self.prefix, "sites": [asdict(s) for s in self.sites.values()],
                 "backend": self.backend_name, "capabilities": self.capabilities, "profiles": self.profiles}
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        os.replace(tmp, self.state_path)

    def our_namespaces(self) -> list[str]:
        """Namespaces on this host that belong to this lab (by name prefix)."""
        out = self.runner.run(["ip", "netns", "list"]).stdout
        names = [line.split()[0] for line in out.splitlines() if line.strip()]
        return sorted(n for n in names if n.startswith(f"{self.prefix}-"))

    @property
    def is_up(self) -> bool:
        if not self.sites:
            return False
        wanted = {self.wan_netns, *(s.netns for s in self.sites.values())}
        return wanted <= set(self.our_namespaces())

    # -- lifecycle --------------------------------------------------------------------------------
    def up(self, sites: int | Sequence[str] = 2, backend: str | None = None) -> Lab:
        """Create the testbed (or leave it as it is if it already has exactly these sites)."""
        names = site_names(sites) if isinstance(sites, int) else list(sites)
        if len(set(names)) != len(names) or len(names) < 2:
            raise ValueError(f"need at least two distinct site names, got {names}")
        if self.is_up and list(self.sites) == names and (backend is None or backend == self.backend_name):
            return self
        self.down()
        caps = probe(self.runner, f"{self.prefix}-probe")
        self.capabilities = asdict(caps)
        self.backend_name = backend or caps.backend
        self.sites = {name: Site(name, i, f"{self.prefix}-{name}") for i, name in enumerate(names, start=1)}
        self.profiles = {}
        self._save()
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        self._save()
        return self

    def _build(self) -> None:
        run = self.runner.run
        wan = self.wan_netns
        run(["ip", "netns", "add", wan])
        self._namespace_defaults(wan, forward=True)
        for site in self.sites.values():
            run(["ip", "netns", "add", site.netns])
            self._namespace_defaults(site.netns, forward=False)
            run(["ip", "link", "add", site.site_if, "netns", site.netns, "type", "veth", "peer", "name", site.wan_if,
                 "netns", wan])
            run(["ip", "addr", "add", f"{site.gateway}/24", "dev", site.wan_if], netns=wan)
            for addr in site.addresses:
                run(["ip", "addr", "add", f"{addr}/24", "dev", site.site_if], netns=site.netns)
            for netns, ifname in ((site.netns, site.site_if), (wan, site.wan_if)):
                run(["ethtool", "-K", ifname, *OFFLOADS], netns=netns)
                run(["ip", "link", "set", ifname, "up"], netns=netns)
            # Deliberately no default route: only the lab's /15 is reachable, via the WAN.
            run(["ip", "route", "add", str(LAB_NET), "via", site.gateway, "src", site.addr], netns=site.netns)
        self.backend.prepare(self.hops())
        self.procs.pid_dir.mkdir(parents=True, exist_ok=True)

    def _namespace_defaults(self, netns: str, *, forward: bool) -> None:
        run = self.runner.run
        run(["ip", "link", "set", "lo", "up"], netns=netns)
        run(["sysctl", "-qw", f"net.ipv4.ip_forward={int(forward)}"], netns=netns)
        # No IPv6 in the lab: nothing link-local, nothing that could find a way out.
        run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], netns=netns, check=False)
        run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], netns=netns, check=False)

    def down(self) -> None:
        """Stop every lab process and delete every lab namespace, also after a crash.

        Processes started through `spawn` are stopped by their PID files; anything else still running
        inside one of this lab's namespaces (started by hand with `lab exec`, or by a crashed caller) is
        found with `ip netns pids` and stopped by PID too, since deleting a namespace does not end them.
        """
        self.procs.stop_all()
        namespaces = self.our_namespaces()
        self._stop_namespace_processes(namespaces)
        for netns in namespaces:
            self.runner.ok(["ip", "netns", "del", netns])
        for leftover in ("state.json", "state.tmp"):
            (self.run_dir / leftover).unlink(missing_ok=True)
        for path in self.run_dir.glob("emu-*.json"):
            path.unlink(missing_ok=True)
        self.sites = {}
        self.profiles = {}
        self.backend_name = ""
        self._backend = None

    def _stop_namespace_processes(self, namespaces: list[str], timeout: float = 5.0) -> None:
        def pids() -> set[int]:
            found: set[int] = set()
            for netns in namespaces:
                out = self.runner.run(["ip", "netns", "pids", netns], check=False).stdout
                found |= {int(pid) for pid in out.split() if pid.isdigit()}
            return found - {os.getpid()}

        remaining = pids()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in remaining:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + timeout
            while remaining and time.monotonic() < deadline:
                time.sleep(0.05)
                remaining = pids()
            if not remaining:
                return

    # -- impairments ------------------------------------------------------------------------------
    @property
    def backend(self) -> Backend:
        if self._backend is None:
            if self.backend_name == TcNetemBackend.name:
                self._backend = TcNetemBackend(self.runner, self.wan_netns)
            elif self.backend_name == FallbackBackend.name:
                fallback = FallbackBackend(self.runner, self.wan_netns, self.procs, self.run_dir)
                fallback.loss = {hop: self._applied(hop).loss_pct for hop in self.hops()}
                self._backend = fallback
            else:
                raise RuntimeError("the lab is not up (no backend chosen)")
        return self._backend

    def hops(self) -> list[Hop]:
        """Every direction between every pair of sites."""
        return [Hop(a.name, b.name, a.index, b.index, a.wan_if, b.wan_if, a.subnet)
                for a in self.sites.values() for b in self.sites.values() if a is not b]

    def hop(self, src: str, dst: str) -> Hop:
        for hop in self.hops():
            if (hop.src, hop.dst) == (src, dst):
                return hop
        raise KeyError(f"no sites {src!r} and {dst!r} in this lab ({', '.join(self.sites)})")

    def _applied(self, hop: Hop) -> Impairment:
        data = self.profiles.get(hop.name)
        return Impairment.from_dict(data) if data else Impairment()

    def impair(self, a: str, b: str, profile: LinkProfile) -> None:
        """Apply a profile between sites a and b (forward acts on a -> b); works while traffic flows."""
        self._require_up()
        for hop, imp in ((self.hop(a, b), profile.forward), (self.hop(b, a), profile.reverse)):
            self.backend.apply(hop, imp)
            self.profiles[hop.name] = imp.to_dict()
        self._save()

    def clear(self) -> None:
        """Remove every impairment (and stop the delay emulators)."""
        self._require_up()
        for hop in self.hops():
            self.backend.apply(hop, Impairment())
            self.profiles.pop(hop.name, None)
        self._save()

    @contextlib.contextmanager
    def measurement(self) -> Iterator[Health]:
        """Bracket a measurement; afterwards the yielded Health says whether the emulation held up."""
        self.backend.begin_window()
        health = Health()
        try:
            yield health
        finally:
            result = self.backend.end_window()
            health.valid, health.reasons, health.details = result.valid, result.reasons, result.details

    # -- running things in sites --------------------------------------------------------------------
    def site(self, name: str) -> Site:
        try:
            return self.sites[name]
        except KeyError:
            raise KeyError(f"no site {name!r} in this lab ({', '.join(self.sites) or 'lab is down'})") from None

    def run(self, site: str, argv: Sequence[str], *, check: bool = True, timeout: float = 60.0,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command to completion inside a site's namespace (`wan` names the WAN namespace)."""
        return self.runner.run(argv, netns=self._netns(site), check=check, timeout=timeout, input=input)

    def spawn(self, name: str, site: str, argv: Sequence[str], *, cwd: str | Path | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start a long-running process (a router simulator, nbdkit, iperf3 -s) in a site, tracked by name."""
        self._require_up()
        return self.procs.start(name, argv, netns=self._netns(site), cwd=cwd, env=env)

    def stop(self, name: str) -> None:
        self.procs.stop(name)

    def wait_listening(self, site: str, port: int, timeout: float = 10.0) -> None:
        """Wait until something listens on a TCP port inside a site."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.run(site, ["ss", "-Hltn", f"sport = :{port}"], check=False).stdout.strip():
                return
            time.sleep(0.05)
        raise TimeoutError(f"nothing listens on port {port} in {site} after {timeout} s")

    def start_router_sim(self, site: str, platform: str, *, name: str | None = None, telnet_port: int | None = 23,
                         ssh_port: int | None = None, state_dir: Path | None = None, args: Sequence[str] = (),
                         timeout: float = 20.0) -> dict[str, Any]:
        """Start a router simulator (`python -m simulators`) on the site's management address.

        Returns the simulator's ready line ({"platform", "pid", "telnet": [host, port], ...}).
        """
        where = self.site(site)
        name = name or f"sim-{site}"
        argv = [sys.executable, "-m", "simulators", "--platform", platform]
        if telnet_port is not None:
            argv += ["--telnet", f"{where.mgmt_addr}:{telnet_port}"]
        if ssh_port is not None:
            argv += ["--ssh", f"{where.mgmt_addr}:{ssh_port}"]
        argv += ["--state", str(state_dir or self.run_dir / "sims" / name), *args]
        log = self.procs.log_dir / f"{name}.log"
        log.unlink(missing_ok=True)
        self.spawn(name, site, argv, cwd=REPO_ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
                if line.startswith("{") and '"pid"' in line:
                    return json.loads(line)
            if self.procs.pid(name) is None:
                break
            time.sleep(0.05)
        text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        self.stop(name)
        raise RuntimeError(f"router simulator {name} did not start:\n{text}")

    def command(self, site: str, argv: Sequence[str]) -> list[str]:
        """The host command line that runs argv inside a site, for callers that manage the process."""
        return in_netns(self._netns(site), argv)

    def _netns(self, site: str) -> str:
        return self.wan_netns if site == "wan" else self.site(site).netns

    def _require_up(self) -> None:
        if not self.sites:
            raise RuntimeError("the lab is not up; run `lab up` first")

    # -- reporting --------------------------------------------------------------------------------
    def environment(self) -> dict[str, Any]:
        """What every result must record: backend, kernel, tools and TCP congestion control."""
        def read(argv: list[str], netns: str | None = None) -> str:
            proc = self.runner.run(argv, netns=netns, check=False)
            return proc.stdout.strip() or proc.stderr.strip()

        first = next(iter(self.sites.values()), None)
        netns = first.netns if first and self.is_up else None
        return {
            "backend": self.backend_name,
            "kernel": platform.release(),
            "iproute2": read(["ip", "-V"]),
            "tcp_congestion_control_default": read(["sysctl", "-n", "net.ipv4.tcp_congestion_control"], netns),
            "tcp_congestion_control_allowed": read(["sysctl", "-n", "net.ipv4.tcp_allowed_congestion_control"],
                                                   netns),
            "tcp_wmem": read(["sysctl", "-n", "net.ipv4.tcp_wmem"], netns),
            "capabilities": self.capabilities,
        }

    def _emulator_totals(self) -> dict[str, Any]:
        """The delay emulators' counters since they started (from their last stats dump, at most 1 s old)."""
        totals = {}
        for path in sorted(self.run_dir.glob("emu-*.stats.json")):
            try:
                stats = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            total = stats["total"]
            totals[path.name.removesuffix(".stats.json")] = {
                key: round(total[key], 3) for key in ("seen", "released", "dropped_burst", "dropped_queue", "max_held",
                                                      "late_ms_mean", "late_ms_max", "ingress_ms_max")}
        return totals

    def status(self) -> dict[str, Any]:
        running = {name: self.procs.pid(name) for name in self.procs.names()}
        return {
            "prefix": self.prefix,
            "run_dir": str(self.run_dir),
            "up": self.is_up,
            "backend": self.backend_name,
            "sites": {s.name: {"netns": s.netns, "addr": s.addr, "mgmt": s.mgmt_addr, "data": s.data_addr,
                               "storage": s.storage_addr, "host": s.host_addr} for s in self.sites.values()},
            "profiles": {hop: Impairment.from_dict(data).describe() for hop, data in self.profiles.items()},
            "processes": {name: pid for name, pid in running.items() if pid is not None},
            "emulators": self._emulator_totals(),
            "namespaces": self.our_namespaces(),
        }

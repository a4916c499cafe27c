"""What every block-transfer experiment shares: the bench (target, routers' relays, places), results, progress.

A bench offers four ways to reach storage, named as they appear in every CSV and plot:

* `target`     - fio next to nbdkit (the storage site, no WAN, no routers): the raw speed of the target;
* `san`        - fio on the primary site's host, through router A's data-path relay, the WAN, router B's
                 relay, to nbdkit at the remote site: the SAN extension;
* `san-tls`    - the same with the router-to-router hop in TLS;
* `local-disk` - fio with O_DIRECT on a file of this host's disk: the local baseline.

`LabBench` builds this inside the lab's namespaces (root; impairments apply between the routers);
`LoopbackBench` builds it on 127.0.0.1 with no emulated WAN (no root; the `make demo` case and a fallback).
Every rate is reported beside the raw TCP rate of the link (iperf3) and the raw speed of the target.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from lab.xdd import NBD_PORT, LocalPlace, NbdTarget, Place, SitePlace, free_port, iperf3_local, nbd_uri

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RESULTS = ROOT / "lab-results"
PATHS = ("target", "san", "san-tls", "local-disk")
TLS_PORT = NBD_PORT + 1


@dataclass
class _AlwaysValid:
    valid: bool = True
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


class Bench:
    """Storage reachable by several paths; subclasses build it on loopback or in the lab."""

    where = "?"

    def __init__(self) -> None:
        self.uris: dict[str, str] = {}
        self.places: dict[str, Place] = {}
        self.host: Place = LocalPlace()
        self.target: NbdTarget | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="fz-bench-", dir=os.environ.get("FLEXZONE_SCRATCH")))
        self.profile = "none"
        self._link_mb_s: float | None = None
        self.link_samples: list[float] = []

    def uri(self, path: str) -> str:
        return self.uris[path]

    def place(self, path: str) -> Place:
        return self.places.get(path, self.host)

    def raw_link_mb_s(self) -> float:
        """Raw TCP goodput between the sites in MB/s, measured now (each experiment takes its own sample, so
        its rates sit beside a link rate of the same moment: on a shared 2-vCPU machine it moves a lot)."""
        self._link_mb_s = self._measure_link()
        self.link_samples.append(round(self._link_mb_s, 3))
        return self._link_mb_s

    def _measure_link(self) -> float:
        raise NotImplementedError

    def environment(self) -> dict[str, Any]:
        return {"where": self.where, "profile": self.profile, "kernel": os.uname().release,
                "tcp_congestion_control_default": _read("/proc/sys/net/ipv4/tcp_congestion_control"),
                "raw_link_mb_s_samples": self.link_samples}

    @contextlib.contextmanager
    def measurement(self) -> Iterator[Any]:
        yield _AlwaysValid()

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def relay_argv(listen: str, target: str, *, tls: str | None = None, cert_dir: Path | None = None) -> list[str]:
    argv = [sys.executable, "-m", "lab.datapath", "--listen", listen, "--target", target, "--link", "up",
            "--exit-with-parent"]
    if tls:
        assert cert_dir is not None
        argv += [f"--tls-{tls}", "--tls-cert", str(cert_dir / "datapath-cert.pem"),
                 "--tls-key", str(cert_dir / "datapath-key.pem")]
    return argv


def python_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def wait_listening(place: Place, port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if place.run(["ss", "-Hltn", f"sport = :{port}"], timeout=10).stdout.strip():
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} at {place.label} after {timeout} s")


class LoopbackBench(Bench):
    """Everything on 127.0.0.1: nbdkit, two relays (plain and TLS pairs). No emulated WAN."""

    where = "loopback"

    def __init__(self, target_bytes: int) -> None:
        super().__init__()
        from lab.datapath import throwaway_certificate

        host = self.host
        assert isinstance(host, LocalPlace)
        try:
            self.target = NbdTarget(host, "127.0.0.1", free_port(), target_bytes, name="xdd-nbdkit").start()
            certs = self.scratch / "certs"
            throwaway_certificate(certs)
            ports = {name: free_port() for name in ("b", "a", "b-tls", "a-tls")}
            storage = f"127.0.0.1:{self.target.port}"
            specs = [("relay-b", ports["b"], storage, None), ("relay-a", ports["a"], f"127.0.0.1:{ports['b']}", None),
                     ("relay-b-tls", ports["b-tls"], storage, "listen"),
                     ("relay-a-tls", ports["a-tls"], f"127.0.0.1:{ports['b-tls']}", "upstream")]
            for name, port, target, tls in specs:
                host.spawn(name, relay_argv(f"127.0.0.1:{port}", target, tls=tls, cert_dir=certs), cwd=ROOT,
                           env=python_env())
            for _, port, _, _ in specs:
                wait_listening(host, port)
        except BaseException:
            self.close()
            raise
        self.uris = {"target": self.target.uri, "san": nbd_uri("127.0.0.1", ports["a"]),
                     "san-tls": nbd_uri("127.0.0.1", ports["a-tls"])}

    def _measure_link(self) -> float:
        return iperf3_local("127.0.0.1", seconds=1)

    def close(self) -> None:
        host = self.host
        if isinstance(host, LocalPlace):
            host.stop_all()
        if self.target is not None:
            self.target.stop()
        super().close()


class LabBench(Bench):
    """The lab: nbdkit on the remote site's storage address, relays on both routers' data-path addresses."""

    where = "lab"

    def __init__(self, lab: Any, target_bytes: int, profile: str = "none", *, data_path: bool = True) -> None:
        """`data_path=False`: only the lab and its profile (for the management experiments, latency and loss)."""
        super().__init__()
        from lab.datapath import throwaway_certificate
        from lab.profiles import Impairment, LinkProfile

        self.lab = lab
        self.owned = not lab.is_up
        self.names: list[str] = []
        try:
            if self.owned:
                lab.up(2)
            primary, remote = lab.site("primary"), lab.site("remote")
            self.primary, self.remote = SitePlace(lab, "primary"), SitePlace(lab, "remote")
            self.profile = profile
            if profile != "none":
                lab.impair("primary", "remote", LinkProfile.symmetric(profile, Impairment.parse(profile)))
            if not data_path:
                return
            self.target = NbdTarget(self.remote, remote.storage_addr, NBD_PORT, target_bytes,
                                    name="xdd-nbdkit").start()
            certs = self.scratch / "certs"
            throwaway_certificate(certs)
            storage = f"{remote.storage_addr}:{NBD_PORT}"
            specs = [
                ("xdd-relay-b", self.remote, f"{remote.data_addr}:{NBD_PORT}", storage, None),
                ("xdd-relay-a", self.primary, f"{primary.data_addr}:{NBD_PORT}", f"{remote.data_addr}:{NBD_PORT}",
                 None),
                ("xdd-relay-b-tls", self.remote, f"{remote.data_addr}:{TLS_PORT}", storage, "listen"),
                ("xdd-relay-a-tls", self.primary, f"{primary.data_addr}:{TLS_PORT}",
                 f"{remote.data_addr}:{TLS_PORT}", "upstream"),
            ]
            for name, place, listen, target, tls in specs:
                place.spawn(name, relay_argv(listen, target, tls=tls, cert_dir=certs), cwd=ROOT, env=python_env())
                self.names.append(name)
            for _, place, listen, _, _ in specs:
                wait_listening(place, int(listen.rsplit(":", 1)[1]))
        except BaseException:
            self.close()
            raise
        self.uris = {"target": self.target.uri, "san": nbd_uri(primary.data_addr, NBD_PORT),
                     "san-tls": nbd_uri(primary.data_addr, TLS_PORT)}
        self.places = {"target": self.remote, "san": self.primary, "san-tls": self.primary}

    def _measure_link(self) -> float:
        from lab.measure import iperf3

        cc = _read("/proc/sys/net/ipv4/tcp_congestion_control") or "reno"
        # The system's default congestion control: fio's NBD connections use it too.
        result = iperf3(self.lab, "primary", "remote", seconds=3, cc=cc, port=5299)
        return result.mbit / 8

    def environment(self) -> dict[str, Any]:
        env = self.lab.environment()
        env.update({"where": self.where, "profile": self.profile, "raw_link_mb_s_samples": self.link_samples})
        return env

    @contextlib.contextmanager
    def measurement(self) -> Iterator[Any]:
        with self.lab.measurement() as health:
            yield health

    def close(self) -> None:
        for name in self.names:
            self.lab.stop(name)
        if self.target is not None:
            self.target.stop()
        try:
            if self.owned:
                self.lab.down()
            elif self.profile != "none":
                self.lab.clear()
        finally:
            super().close()


def open_bench(where: str, target_bytes: int, *, lab: Any = None, profile: str = "none",
               data_path: bool = True) -> Bench:
    """`lab` (root, namespaces) or `loopback`; `auto` picks the lab when running as root."""
    if where == "auto":
        where = "lab" if os.geteuid() == 0 and shutil.which("ip") else "loopback"
    if where == "loopback":
        if profile != "none":
            raise ValueError("impairment profiles need the lab (run as root with --where lab)")
        return LoopbackBench(target_bytes)
    if lab is None:
        from lab.testbed import Lab

        lab = Lab()
    return LabBench(lab, target_bytes, profile, data_path=data_path)


# --- results, progress, budget --------------------------------------------------------------------------


def results_folder(name: str, root: Path | None = None) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    folder = (root or DEFAULT_RESULTS) / f"{stamp}-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        path.write_text("")
        return
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, default=str))


class Progress:
    """One line per step: done/total, a text bar, elapsed time and an ETA scaled by how estimates held up."""

    def __init__(self, estimates: Sequence[float], out: TextIO | None = None, label: str = "") -> None:
        self.estimates = list(estimates)
        self.done = 0
        self.start = time.monotonic()
        self.spent_estimate = 0.0
        self.out = out or sys.stderr
        self.label = label

    def eta(self) -> float:
        remaining = sum(self.estimates[self.done:])
        elapsed = time.monotonic() - self.start
        scale = elapsed / self.spent_estimate if self.spent_estimate > 0 else 1.0
        return remaining * min(max(scale, 0.2), 5.0)

    def step(self, text: str) -> None:
        total = len(self.estimates)
        width = 20
        filled = int(width * self.done / total) if total else width
        bar = "#" * filled + "." * (width - filled)
        elapsed = time.monotonic() - self.start
        print(f"{self.label}[{bar}] {self.done + 1}/{total} {_clock(elapsed)} elapsed, ETA {_clock(self.eta())}  "
              f"{text}", file=self.out, flush=True)

    def finished(self) -> None:
        if self.done < len(self.estimates):
            self.spent_estimate += self.estimates[self.done]
        self.done += 1


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


@dataclass
class Budget:
    """A wall-clock bound for a whole experiment: cells that would not fit are skipped and recorded.

    With `learn`, cells run one after another, each from its admission to `done()`, and their estimates
    are scaled by how the cells of the same kind run so far held up: the time they took over their
    estimates, with a margin (LEARN_MARGIN), never below LEARN_FLOOR. A kind with none run yet takes the
    other kinds' ratio with a larger margin, never above 1. A formula about twice too high then no longer
    skips cells that would have fitted."""

    seconds: float
    start: float = field(default_factory=time.monotonic)
    skipped: list[str] = field(default_factory=list)
    learn: bool = False
    held: dict[str, list[float]] = field(default_factory=dict)  # kind -> [seconds taken, seconds estimated]
    running: list[Any] | None = None  # the cell admitted and not done: [kind, its estimates, admitted at]

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.start)

    def scale(self, kind: str = "") -> float:
        """What this kind's estimates are multiplied by."""
        if not self.learn:
            return 1.0
        taken, estimated = self.held.get(kind, (0.0, 0.0))
        if estimated > 0:
            return max(LEARN_FLOOR, LEARN_MARGIN * taken / estimated)
        estimated = sum(seconds for _, seconds in self.held.values())
        if estimated <= 0:
            return 1.0
        return min(1.0, max(LEARN_FLOOR, LEARN_MARGIN_NEW * sum(taken for taken, _ in self.held.values()) / estimated))

    def allows(self, estimate: float, kind: str = "") -> bool:
        return estimate * self.scale(kind) <= self.left()

    def admit(self, estimate: float, name: str, progress: Progress, kind: str = "") -> bool:
        """Whether a cell estimated at `estimate` s fits; one that does not is recorded as skipped."""
        self.done()
        if self.allows(estimate, kind):
            self.running = [kind, estimate, time.monotonic()]
            return True
        self.skipped.append(name)
        progress.finished()
        return False

    def again(self, estimate: float, kind: str = "") -> bool:
        """Whether the running cell may be measured once more: its scaled estimate, or what its first
        measurement took if that was more, fits what is left. If so, its estimate counts twice."""
        if self.running is None:
            return self.allows(estimate, kind)
        if max(estimate * self.scale(kind), time.monotonic() - self.running[2]) > self.left():
            return False
        self.running[1] += estimate
        return True

    def done(self) -> None:
        """The running cell has ended: what it took is learnt."""
        if self.running is not None:
            kind, estimate, admitted = self.running
            held = self.held.setdefault(kind, [0.0, 0.0])
            held[0] += time.monotonic() - admitted
            held[1] += estimate
            self.running = None


LEARN_FLOOR = 0.25  # the least a learning Budget scales an estimate by
LEARN_MARGIN = 1.25  # on the ratio learnt from cells of the same kind
LEARN_MARGIN_NEW = 1.5  # on the ratio of the other kinds, for a kind with no cell run yet


@dataclass
class Outcome:
    """What an experiment hands to the report: where its files are and what to show."""

    name: str
    title: str
    folder: Path
    command: str
    table: str
    plots: list[Path]
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    valid: bool = True


def json_lines(text: str, summary_key: str) -> tuple[list[dict[str, Any]], Any]:
    """A probe's output: one JSON record per line, the one holding `summary_key` being its summary.

    Lines that are not JSON (a library's warning) are ignored. Returns (records, summary or None).
    """
    records, summary = [], None
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if summary_key in record:
            summary = record[summary_key]
        else:
            records.append(record)
    return records, summary


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if not isinstance(value, float):
            return str(value)
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.3g}"

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def size_label(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def measured(bench: Bench, step: Callable[[], Any]) -> tuple[Any, bool, list[str]]:
    """Run a measurement inside the emulator's health window; retry once if the emulator spoiled it."""
    for attempt in (1, 2):
        failure: Exception | None = None
        with bench.measurement() as health:
            try:
                value = step()
            except Exception as exc:  # noqa: BLE001 - re-raised below, with what the window saw
                failure = exc
        if failure is not None:
            if health.reasons:
                # A dead or overrun emulator explains a refused or cut connection better than fio can.
                failure.add_note("the emulated WAN in that window: " + "; ".join(health.reasons))
            raise failure
        if health.valid or attempt == 2:
            return value, bool(health.valid), list(health.reasons)
    raise AssertionError("unreachable")


def xdd(bench: Bench, path: str, run: Any, expected_mb_s: float = 1.0) -> Any:
    """One xdd-style pass over a path of the bench (`local-disk` uses the bench's scratch file)."""
    from lab.xdd import xdd_local, xdd_nbd

    expected = max(expected_mb_s, 0.05) * 1e6 / 4
    if path == "local-disk":
        return xdd_local(bench.host, bench.scratch / "local-disk.dat", run, expected_bytes_per_s=expected)
    return xdd_nbd(bench.place(path), bench.uri(path), run, expected_bytes_per_s=expected)

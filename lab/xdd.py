"""xdd-style block transfers: fio's nbd engine against an nbdkit target, reported in MB/s (10^6 B/s) as xdd does.

xdd is not packaged anywhere we can install, so its methodology is reproduced with fio (Debian's
fio is built with libnbd: `fio --enghelp` lists the `nbd` engine). An `XddRun` maps the xdd options we use onto fio:

    xdd -op read|write            fio --rw=read|write            (-seek random: randread|randwrite)
    xdd -blocksize B -reqsize R   fio --bs=B*R                   (we give the request ("record") size directly)
    xdd -mbytes M                 fio --size=M MiB
    xdd -passes P                 P fio invocations (per-pass numbers, like xdd's TARGET_PASS rows)
    xdd -queuedepth Q             fio --iodepth=Q
    xdd -timelimit S              fio --runtime=S (without --time_based: the pass ends at S or at M bytes)

How cache effects are removed, so that no rate is a cache's rate:
* the initiator has no cache at all: fio's nbd engine is a user-space NBD client (libnbd), so there is
  no kernel block device and no page cache between fio and the wire (fio's --direct is meaningless
  for it);
* the target is nbdkit's `memory` plugin: its medium *is* RAM, with no faster layer in front that
  could serve part of a data set (no read cache to hit or miss), or the `file` plugin with
  `cache=none` (nbdkit drops the pages it touched from the page cache after each request);
* the local-disk baseline uses fio's psync engine with --direct=1 (O_DIRECT), bypassing the page cache;
* reads lag writes: every extent is written (pre-filled) before it is read, so reads return data that
  was really stored and never the sparse zeros an unwritten nbdkit region returns without touching
  memory.

Two fio pitfalls handled here: fio prints "fio: connected to NBD server" on stdout before its JSON, and
after a time limit it still drains the I/O in flight (iodepth x record size), which at 160 ms / 4 % loss
took minutes; the subprocess timeout therefore allows runtime + in-flight bytes at a pessimistic rate.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

MIB = 1 << 20
NBD_PORT = 10809
WORST_CASE_BYTES_PER_S = 50_000  # for drain timeouts: 0.4 Mbit/s, below the research's worst reno cell


class Place(Protocol):
    """Where a tool runs: this host (loopback) or a lab site's namespace."""

    label: str

    def run(self, argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[str]: ...

    def spawn(self, name: str, argv: Sequence[str], *, cwd: str | Path | None = None,
              env: dict[str, str] | None = None) -> None: ...

    def stop(self, name: str) -> None: ...


class LocalPlace:
    """Runs on this host; children are tracked by name and stopped by PID."""

    label = "host"

    def __init__(self) -> None:
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    def run(self, argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def spawn(self, name: str, argv: Sequence[str], *, cwd: str | Path | None = None,
              env: dict[str, str] | None = None) -> None:
        if name in self.children and self.children[name].poll() is None:
            raise RuntimeError(f"{name} is already running")
        # stdin from /dev/null and a new session: nbdkit was seen to exit when a launching shell went away.
        self.children[name] = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL, cwd=cwd, env=env,
                                               start_new_session=True)

    def stop(self, name: str) -> None:
        proc = self.children.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def stop_all(self) -> None:
        for name in list(self.children):
            self.stop(name)


class SitePlace:
    """Runs inside one site of a lab (lab.testbed.Lab), through the lab's process table."""

    def __init__(self, lab: Any, site: str) -> None:
        self.lab = lab
        self.site = site
        self.label = site

    def run(self, argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
        return self.lab.run(self.site, list(argv), check=False, timeout=timeout)

    def spawn(self, name: str, argv: Sequence[str], *, cwd: str | Path | None = None,
              env: dict[str, str] | None = None) -> None:
        self.lab.stop(name)
        self.lab.spawn(name, self.site, list(argv), cwd=cwd, env=env)

    def stop(self, name: str) -> None:
        self.lab.stop(name)


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (for the loopback setup; lab addresses use fixed ports)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# --- the target ----------------------------------------------------------------------------------------


@dataclass
class NbdTarget:
    """An nbdkit server: `memory` (RAM medium, sparse) or `file` with cache=none."""

    place: Place
    host: str
    port: int = NBD_PORT
    size_bytes: int = 1 << 30
    backend: str = "memory"
    path: Path | None = None
    name: str = "nbdkit"
    pidfile: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fz-nbdkit-")) / "nbdkit.pid")

    @property
    def uri(self) -> str:
        return nbd_uri(self.host, self.port)

    def argv(self) -> list[str]:
        base = ["nbdkit", "-f", "--exit-with-parent", "-P", str(self.pidfile), "-i", self.host, "-p", str(self.port)]
        if self.backend == "memory":
            return [*base, "memory", f"size={self.size_bytes}"]
        if self.backend == "file":
            if self.path is None:
                raise ValueError("the file backend needs a path")
            with open(self.path, "ab") as f:
                f.truncate(self.size_bytes)
            return [*base, "file", f"file={self.path}", "cache=none"]
        raise ValueError(f"unknown nbdkit backend {self.backend!r} (memory, file)")

    def start(self, timeout: float = 15.0) -> NbdTarget:
        self.pidfile.unlink(missing_ok=True)
        self.place.spawn(self.name, self.argv())
        deadline = time.monotonic() + timeout
        # nbdkit writes the pidfile once it accepts connections.
        while not self.pidfile.exists() or not self.pidfile.read_text().strip():
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"nbdkit did not become ready on {self.host}:{self.port} within {timeout} s")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.place.stop(self.name)
        self.pidfile.unlink(missing_ok=True)
        shutil.rmtree(self.pidfile.parent, ignore_errors=True)

    def __enter__(self) -> NbdTarget:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def nbd_uri(host: str, port: int) -> str:
    return f"nbd://[{host}]:{port}/" if ":" in host else f"nbd://{host}:{port}/"


# --- one xdd-style run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class XddRun:
    """One xdd pass: an operation over `size_bytes` in `record_bytes` requests at a queue depth."""

    op: str  # read | write
    record_bytes: int
    size_bytes: int
    pattern: str = "sequential"  # sequential | random
    queue_depth: int = 1
    time_limit_s: float | None = None
    offset_bytes: int = 0
    clients: int = 1  # xdd -targets N: N jobs, each with its own NBD connection and its own extent

    def __post_init__(self) -> None:
        if self.op not in ("read", "write"):
            raise ValueError(f"op must be read or write, got {self.op!r}")
        if self.pattern not in ("sequential", "random"):
            raise ValueError(f"pattern must be sequential or random, got {self.pattern!r}")
        if self.record_bytes <= 0 or self.size_bytes < self.record_bytes or self.size_bytes % self.record_bytes:
            raise ValueError("size must be a positive multiple of the record size")

    @property
    def rw(self) -> str:
        return self.op if self.pattern == "sequential" else f"rand{self.op}"

    def fio_options(self) -> list[str]:
        opts = [f"--rw={self.rw}", f"--bs={self.record_bytes}", f"--size={self.size_bytes}",
                f"--iodepth={self.queue_depth}", f"--offset={self.offset_bytes}"]
        if self.pattern == "random":
            # A fresh random order each run, every block still touched once per pass (fio's random map).
            opts.append("--randrepeat=0")
        if self.time_limit_s:
            opts.append(f"--runtime={self.time_limit_s:g}")
        if self.clients > 1:
            opts += [f"--numjobs={self.clients}", "--group_reporting", f"--offset_increment={self.size_bytes}"]
        return opts

    @property
    def total_bytes(self) -> int:
        return self.size_bytes * self.clients

    def timeout(self, expected_bytes_per_s: float = WORST_CASE_BYTES_PER_S) -> float:
        """Subprocess timeout: the pass (or its limit) plus draining what is in flight at a pessimistic rate."""
        body = self.time_limit_s or self.total_bytes / max(expected_bytes_per_s, 1.0)
        in_flight = self.clients * self.queue_depth * self.record_bytes / WORST_CASE_BYTES_PER_S
        return body + in_flight + 30.0


@dataclass
class XddResult:
    """What fio measured for one pass, in xdd's units (MB = 10^6 bytes, latency in ms)."""

    op: str
    pattern: str
    record_bytes: int
    size_bytes: int
    queue_depth: int
    bytes: int
    seconds: float
    mb_per_s: float
    iops: float
    latency_ms: float
    latency_p99_ms: float
    wall_s: float
    truncated: bool
    clients: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FioError(RuntimeError):
    """fio failed or printed something that is not its JSON report."""


def parse_fio_json(text: str, op: str) -> dict[str, Any]:
    """The `read` or `write` section of fio's JSON, skipping the NBD engine's chatter before it."""
    start = text.find("{")
    if start < 0:
        raise FioError(f"fio printed no JSON: {text[-300:]!r}")
    try:
        report = json.loads(text[start:])
    except ValueError as exc:
        raise FioError(f"fio JSON did not parse: {exc}: {text[start:start + 300]!r}") from None
    job = report["jobs"][0]
    if job.get("error"):
        raise FioError(f"fio job error {job['error']}")
    return job[op]


def result_from_section(run: XddRun, section: dict[str, Any], wall_s: float) -> XddResult:
    io_bytes = int(section["io_bytes"])
    runtime_s = section["runtime"] / 1000.0
    clat = section.get("clat_ns", {})
    pcts = clat.get("percentile") or {}
    p99 = pcts.get("99.000000", 0)
    # bw_bytes is B/s over the job's runtime (ms resolution): for very short passes use bytes / runtime only
    # when runtime is known, else fall back to the wall clock.
    mb_s = section["bw_bytes"] / 1e6 if section.get("bw_bytes") else (io_bytes / wall_s / 1e6 if wall_s else 0.0)
    return XddResult(run.op, run.pattern, run.record_bytes, run.size_bytes, run.queue_depth, io_bytes,
                     runtime_s, mb_s, float(section.get("iops", 0.0)), clat.get("mean", 0.0) / 1e6, p99 / 1e6,
                     wall_s, io_bytes < run.total_bytes, run.clients)


def fio_nbd_argv(run: XddRun, uri: str, name: str = "xdd") -> list[str]:
    return ["fio", f"--name={name}", "--ioengine=nbd", f"--uri={uri}", *run.fio_options(), "--output-format=json"]


def fio_local_argv(run: XddRun, path: Path, name: str = "xdd-local") -> list[str]:
    """The local-disk baseline: the same pass on a file with O_DIRECT (psync engine)."""
    return ["fio", f"--name={name}", "--ioengine=psync", "--direct=1", f"--filename={path}", *run.fio_options(),
            "--output-format=json"]


def run_fio(place: Place, argv: list[str], run: XddRun, *, expected_bytes_per_s: float | None = None) -> XddResult:
    """Run one fio pass at a place and return its xdd-style result."""
    started = time.monotonic()
    timeout = run.timeout(expected_bytes_per_s or WORST_CASE_BYTES_PER_S)
    try:
        proc = place.run(argv, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise FioError(f"fio did not finish within {timeout:.0f} s: {' '.join(argv)}") from None
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise FioError(f"fio rc {proc.returncode}: {proc.stderr.strip()[-400:]} {proc.stdout[-200:]}")
    return result_from_section(run, parse_fio_json(proc.stdout, run.op), wall)


def xdd_nbd(place: Place, uri: str, run: XddRun, **kw: Any) -> XddResult:
    return run_fio(place, fio_nbd_argv(run, uri), run, **kw)


def xdd_local(place: Place, path: Path, run: XddRun, **kw: Any) -> XddResult:
    return run_fio(place, fio_local_argv(run, path), run, **kw)


def prefill(place: Place, uri: str | None, size_bytes: int, *, path: Path | None = None) -> XddResult:
    """Write the whole extent once with large records, so later reads return stored data (reads lag writes)."""
    record = MIB if size_bytes % MIB == 0 else 4096
    run = XddRun("write", record, size_bytes, queue_depth=4)
    return xdd_local(place, path, run) if path is not None else xdd_nbd(place, uri or "", run)


# --- the raw TCP rate beside every result --------------------------------------------------------------


def iperf3_local(host: str = "127.0.0.1", seconds: float = 2.0) -> float:
    """Raw TCP goodput on loopback in MB/s (10^6 B/s): the 'link' of the loopback setup."""
    port = free_port(host)
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", host, "-p", str(port)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        # Wait for the listener without connecting to it: iperf3 -1 would take a probe as its one client.
        while not subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout.strip():
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("iperf3 server did not start")
            time.sleep(0.05)
        proc = subprocess.run(["iperf3", "-c", host, "-p", str(port), "-t", f"{seconds:g}", "-J"],
                              capture_output=True, text=True, timeout=seconds + 30)
        report = json.loads(proc.stdout)
        if "error" in report:
            raise RuntimeError(f"iperf3: {report['error']}")
        return report["end"]["sum_received"]["bits_per_second"] / 8 / 1e6
    finally:
        if server.poll() is None:
            server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


def scratch_file(directory: str | Path | None = None) -> Path:
    """A file for the local-disk baseline on a real filesystem (O_DIRECT needs one: not tmpfs)."""
    root = Path(directory) if directory else Path(os.environ.get("FLEXZONE_SCRATCH", tempfile.gettempdir()))
    root.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="fz-xdd-", suffix=".dat", dir=root)
    os.close(fd)
    return Path(name)

"""`python -m bench api`: GET requests per second over mutual TLS against the server's ceiling, and
what a full handshake costs.

By default it is self-contained: a throw-away PKI in a temporary directory, a viewer principal of
every site registered for the run (and deleted after), 20 links and 20 operations when the database
has none (deleted after), and two servers on free loopback ports, started by
`manage.py serve` with the same configuration (serving.gunicorn_conf: gthread, mutual TLS, CRL in the
handshake): flexzone against the run's database (the demo registry loaded into it when it has no
sites), and the ceiling, the same gunicorn serving a bare WSGI app with only the app swapped
(bench/api_ceiling.py). The same client times both in the
same run, in alternating slices so that machine noise hits both alike; `api_ceiling_ratio` is
flexzone's keep-alive requests/s on /api/sites/ over the ceiling's, `links_ceiling_ratio` and
`operations_ceiling_ratio` the same for a filtered page of each list (UNCACHED: lists the read cache
never keeps; the lists' path serves a page it kept while the database's generations read unchanged in
its one statement), and for the links' page written untimed before each request (BUILT):
`other_ceiling_ratio` when an operation changed (the journal's generation moves on, the links' does
not: the page is kept), `moved_ceiling_ratio` when a link off the page changed (the links' generation
moves on, the page's rows are the same: its items are reused), `built_ceiling_ratio` when the page's
newest link changed (that item is written afresh) and `rebuilt_ceiling_ratio` when every link on the
page changed (every item is). A write leaves the next request slower on any server (colder caches in the
client and the server, other work just done on the machine), so the ceiling is also timed with the same
write before each of its requests, and `{name}_written_ceiling_ratio` sets each BUILT figure beside that:
what flexzone's own work costs after the write.
`--url --ca --cert --key` measure a running server instead (e.g. `make demo`'s), without a ceiling (nor
BUILT).

Figures: requests/s on one keep-alive connection, requests/s with --concurrency keep-alive connections,
the time of one request on a fresh connection (TCP + TLS handshake with client certificate + request),
and the handshake's cost = fresh-connection request time - keep-alive request time.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import requests

from lab.deployment import wait_until_serving

if TYPE_CHECKING:  # Django is set up only when the servers are started
    from django.db.models import QuerySet

    from access.models import Principal

ROOT = Path(__file__).resolve().parent.parent
SITES = "/api/sites/"  # the bare app answers every path alike
# Lists the read cache never keeps (they change with every operation), answered by api/fast_lists.py.
UNCACHED = {"uncached": "/api/links/", "links": "/api/links/?state=up&limit=10",
            "operations": "/api/operations/?state=succeeded&limit=10"}
# The same page after a write before each request (untimed, ThrowAwayServers.change): an operation (another
# list's), a link off the page (the page's rows unchanged), the page's newest link, every link on the page.
# What a page built afresh costs.
BUILT = {name: "/api/links/?state=up&limit=10" for name in ("other", "moved", "built", "rebuilt")}
BUILT_LABELS = {"other": "an operation changed", "moved": "a link off it changed", "built": "its newest link changed",
                "rebuilt": "its every link changed"}
SEEDED = 20  # links and operations made for a run whose database has none (deleted after)
ROUNDS = 10  # slices of each measurement, taken in turn from flexzone and the ceiling


@dataclass(frozen=True)
class Target:
    """A server to measure and the client pair to present to it."""

    url: str
    ca: str
    cert: str
    key: str

    def endpoint(self, path: str) -> str:
        return f"{self.url.rstrip('/')}{path}"

    def session(self, keep_alive: bool = True) -> requests.Session:
        session = requests.Session()
        session.trust_env = False  # REQUESTS_CA_BUNDLE would otherwise replace our CA
        session.verify, session.cert = self.ca, (self.cert, self.key)
        if not keep_alive:
            session.headers["Connection"] = "close"
        return session


def _timed_gets(session: requests.Session, url: str, count: int, before: Callable[[], None] | None = None
                ) -> list[float]:
    times = []
    for _ in range(count):
        if before is not None:
            before()
        started = time.perf_counter()
        response = session.get(url, timeout=30)
        response.raise_for_status()
        times.append(time.perf_counter() - started)
    return times


def _handshake_pairs(target: Target, url: str, count: int) -> tuple[list[float], list[float]]:
    """Interleave a keep-alive request and a fresh-connection request, so load drift hits both alike."""
    warm, warm_times, fresh_times = target.session(), [], []
    warm.get(url, timeout=30).raise_for_status()
    for _ in range(count):
        started = time.perf_counter()
        warm.get(url, timeout=30).raise_for_status()
        warm_times.append(time.perf_counter() - started)
        fresh = target.session(keep_alive=False)
        started = time.perf_counter()
        fresh.get(url, timeout=30).raise_for_status()
        fresh_times.append(time.perf_counter() - started)
        fresh.close()
    return warm_times, fresh_times


def _concurrent_gets(target: Target, url: str, connections: int, seconds: float) -> tuple[int, float]:
    """(requests answered, elapsed seconds) on `connections` keep-alive connections at once, one thread each.

    Each slice opens its connections afresh, together (which worker process accepts each is up to the
    kernel, so a new draw each slice averages it out), and starts timing once all are open.
    """
    counts, errors, stop = [0] * connections, [], []
    ready = threading.Barrier(connections + 1, action=lambda: stop.append(time.monotonic() + seconds), timeout=30)

    def worker(index: int) -> None:
        try:
            with target.session() as session:
                session.get(url, timeout=30).raise_for_status()
                ready.wait()
                while time.monotonic() < stop[0]:
                    session.get(url, timeout=30).raise_for_status()
                    counts[index] += 1
        except Exception as exc:  # noqa: BLE001 - reported by the caller's thread
            errors.append(exc)
            ready.abort()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(connections)]
    for thread in workers:
        thread.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        errors.append(RuntimeError("the parallel connections did not all open within 30 s"))
    started = time.perf_counter()
    for thread in workers:
        thread.join()
    if errors:
        raise errors[0]
    return sum(counts), time.perf_counter() - started


def _in_turn(targets: dict[str, Target], measure, rounds: int) -> None:
    """Call measure(name, target) `rounds` times for each target, alternating which goes first."""
    names = list(targets)
    for index in range(rounds):
        for name in names if index % 2 == 0 else reversed(names):
            measure(name, targets[name])


def run(target: Target, ceiling: Target | None, requests_: int, concurrency: int, seconds: float,
        change: Callable[[str], None] | None = None) -> dict:
    """flexzone's figures (`api_*`) and, given a ceiling, the bare server's (`ceiling_*`) from the same run;
    given `change` (the write before each request of a BUILT figure, by its name), those too."""
    built = BUILT if change is not None else {}
    targets = {"api": target} if ceiling is None else {"api": target, "ceiling": ceiling}
    one = {name: t.session() for name, t in targets.items()}
    for name, t in targets.items():  # warm up: connections, DB connections, caches
        _timed_gets(one[name], t.endpoint(SITES), 20)
        _concurrent_gets(t, t.endpoint(SITES), concurrency, 0.2)

    rounds = max(1, min(ROUNDS, requests_))
    # The ceiling after each BUILT write (only with a ceiling to time).
    written = {f"ceiling_{name}": name for name in built} if ceiling is not None else {}
    keep_alive: dict[str, list[float]] = {name: [] for name in [*targets, *UNCACHED, *built, *written]}
    parallel: dict[str, list[float]] = {name: [0, 0.0] for name in targets}
    for path in UNCACHED.values():
        _timed_gets(one["api"], target.endpoint(path), 20)

    def sequential(name: str, t: Target) -> None:
        keep_alive[name] += _timed_gets(one[name], t.endpoint(SITES), math.ceil(requests_ / rounds))
        if name == "api":
            for uncached, path in UNCACHED.items():
                keep_alive[uncached] += _timed_gets(one[name], t.endpoint(path), math.ceil(requests_ / rounds))
            for fresh, path in built.items():
                assert change is not None  # BUILT is measured only with a write to make before each request
                keep_alive[fresh] += _timed_gets(one[name], t.endpoint(path), math.ceil(requests_ / rounds),
                                                 functools.partial(change, fresh))
        else:
            for series, write in written.items():
                assert change is not None
                keep_alive[series] += _timed_gets(one[name], t.endpoint(SITES), math.ceil(requests_ / rounds),
                                                  functools.partial(change, write))

    def concurrent(name: str, t: Target) -> None:
        count, elapsed = _concurrent_gets(t, t.endpoint(SITES), concurrency, seconds / rounds)
        parallel[name][0] += count
        parallel[name][1] += elapsed

    _in_turn(targets, sequential, rounds)
    _in_turn(targets, concurrent, rounds)
    # The handshake is measured on /api/health/, the cheapest request, so the difference is the TLS cost.
    warm, fresh = _handshake_pairs(target, target.endpoint("/api/health/"), max(30, requests_ // 5))
    warm_ms, fresh_ms = statistics.median(warm) * 1000, statistics.median(fresh) * 1000
    figures = {
        "warm_p50_ms": warm_ms,
        "fresh_p50_ms": fresh_ms,
        "handshake_ms": fresh_ms - warm_ms,
    }
    for name in keep_alive:
        figures[f"{name}_keepalive_rps"] = len(keep_alive[name]) / sum(keep_alive[name])
        figures[f"{name}_keepalive_p50_ms"] = statistics.median(keep_alive[name]) * 1000
    for name in targets:
        figures[f"{name}_parallel_rps"] = parallel[name][0] / parallel[name][1]
    if ceiling is not None:
        figures["ceiling_ratio"] = figures["api_keepalive_rps"] / figures["ceiling_keepalive_rps"]
        for uncached in [*UNCACHED, *built]:
            figures[f"{uncached}_ratio"] = figures[f"{uncached}_keepalive_rps"] / figures["ceiling_keepalive_rps"]
        for series, write in written.items():
            figures[f"{write}_written_ratio"] = figures[f"{write}_keepalive_rps"] / figures[f"{series}_keepalive_rps"]
        figures["ceiling_parallel_ratio"] = figures["api_parallel_rps"] / figures["ceiling_parallel_rps"]
    return figures


def _serve(directory: Path, name: str, env: dict, gunicorn_args: tuple[str, ...] = ()) -> tuple[subprocess.Popen, Path]:
    log_path = directory / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--bind", "127.0.0.1:0", "--", *gunicorn_args],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    return process, log_path


def _running(process: subprocess.Popen) -> bool:
    return process.poll() is None


def _seed(principal: Principal) -> list[QuerySet]:
    """Links and operations to list, SEEDED of each, when the database has none (a list of nothing
    would measure nothing); the querysets that delete them after the run."""
    from django.utils import timezone

    from operations.models import Link, Operation
    from registry.models import Device, Router, Site

    site, device, router = Site.objects.order_by("pk").last(), Device.objects.first(), Router.objects.first()
    if Link.objects.exists() or Operation.objects.exists() or site is None or device is None or router is None:
        return []
    now, wwns = timezone.now(), [f"21:00:00:e0:8b:00:00:{index:02x}" for index in range(2)]
    operations = Operation.objects.bulk_create(
        Operation(kind="add", state="succeeded", phase="done", principal=principal, attempts=1,
                  request={"site": site.name, "device_description": device.description},
                  result={"links": [index]}, registry_ms=1.5, invocation_ms=2.25, router_ms=40.0, total_ms=43.75,
                  started_at=now, finished_at=now) for index in range(SEEDED))
    links = Link.objects.bulk_create(
        Link(site=site, device=device, router=router, port=100 + index, zone=device.zone,
             zone_number=device.zone.zone_id, remote_ip=site.data_ip, state="up", initiators=wwns,
             pairs=[[wwn, device.wwn] for wwn in wwns], up_at=now)
        for index in range(SEEDED))
    return [Link.objects.filter(pk__in=[link.pk for link in links]),
            Operation.objects.filter(pk__in=[operation.pk for operation in operations])]


class ThrowAwayServers:
    """A temporary PKI, a registered viewer, and two servers: flexzone and (unless `ceiling=False`) the
    bare ceiling app. `.flexzone` and `.ceiling` are their Targets (URL and the client pair)."""

    def __init__(self, ceiling: bool = True) -> None:
        self.with_ceiling = ceiling

    def __enter__(self) -> ThrowAwayServers:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
        django.setup()
        from access import pki
        from access.principals import register

        self.tmp = tempfile.TemporaryDirectory(prefix="flexzone-bench-")
        self.processes: list[subprocess.Popen] = []
        directory = Path(self.tmp.name)
        ca = pki.init_ca(directory, "flexzone bench CA")
        ca.issue(pki.SERVER, server=True)
        from registry.demo import load_demo
        from registry.models import Site

        if not Site.objects.exists():  # a database of the run's own: something to list
            load_demo()
        self.name = f"bench-{os.getpid()}"
        # A viewer of every site: a site-scoped one has initiator WWNs taken out of the lists it reads
        # (access/redaction.py), which costs as much again and is not what automation is given.
        self.principal = register(ca.issue(self.name), self.name, "viewer", all_sites=True)
        self.seeded = _seed(self.principal)
        env = dict(os.environ, FLEXZONE_PKI_DIR=str(directory))
        env.setdefault("FLEXZONE_LOG_LEVEL", "WARNING")
        try:
            # No control socket: by default gunicorn 27 puts it at one path per user, which a demo
            # server running beside the benchmark would be using.
            started = [_serve(directory, "flexzone", env, ("--no-control-socket",))]
            if self.with_ceiling:
                started.append(_serve(directory, "ceiling", env, ("--no-control-socket",
                                                                  "bench.api_ceiling:application")))
            self.processes = [process for process, _ in started]
            urls = [wait_until_serving(log, functools.partial(_running, process), 30.0) for process, log in started]
        except BaseException:
            self.__exit__()
            raise
        pair = (str(directory / "ca.pem"), str(directory / f"{self.name}.pem"), str(directory / f"{self.name}.key"))
        self.flexzone = Target(urls[0], *pair)
        self.ceiling = Target(urls[1], *pair) if len(urls) > 1 else None
        return self

    def change(self, what: str) -> None:
        """A committed write (each row's values left as they were, a new version of it all the same):
        `other`, to an operation (the operations' kept pages go stale); `moved`, to the oldest link, off
        BUILT's page; `built`, to the newest link of that page; `rebuilt`, to every link of that page (the
        links' kept pages go stale)."""
        from django.db.models import F

        from operations.models import Link, Operation

        if what == "other":
            Operation.objects.filter(pk=Operation.objects.order_by("pk").values("pk")[:1]).update(
                attempts=F("attempts"))
            return
        if what == "moved":
            shown = list(Link.objects.filter(state="up").order_by("-created_at").values_list("pk", flat=True)[:10])
            Link.objects.filter(pk=Link.objects.exclude(pk__in=shown).order_by("created_at").values("pk")[:1]).update(
                updated_at=F("updated_at"))
            return
        page = Link.objects.filter(state="up").order_by("-created_at").values_list("pk", flat=True)[
            :1 if what == "built" else 10]
        Link.objects.filter(pk__in=list(page)).update(updated_at=F("updated_at"))

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for rows in self.seeded:
            rows.delete()
        self.principal.delete()
        self.tmp.cleanup()


def _cell(figures: dict, name: str, kind: str) -> str:
    text = f"{figures[f'{name}_{kind}_rps']:.0f} req/s"
    if kind == "keepalive":
        text += f" (p50 {figures[f'{name}_keepalive_p50_ms']:.2f} ms)"
    return text


def report(figures: dict, concurrency: int) -> list[str]:
    ceiling = "ceiling_keepalive_rps" in figures
    labels = {name: path.split("&limit")[0] + (f", {BUILT_LABELS[name]}" if name in BUILT else ", one")
              for name, path in [*UNCACHED.items(), *BUILT.items()]}
    width = max(34, *(len(label) for name, label in labels.items() if f"{name}_keepalive_rps" in figures))
    lines = [f"{'GET over mTLS':<{width}} {'flexzone /api/sites/':>24}"
             + (f" {'bare WSGI ceiling':>24} {'ratio':>6}" if ceiling else "")]
    rows = [("one keep-alive connection", "keepalive", "ceiling_ratio"),
            (f"{concurrency} keep-alive connections", "parallel", "ceiling_parallel_ratio")]
    for label, kind, ratio in rows:
        line = f"{label:<{width}} {_cell(figures, 'api', kind):>24}"
        if ceiling:
            line += f" {_cell(figures, 'ceiling', kind):>24} {figures[ratio]:>6.2f}"
        lines.append(line)
    for uncached in [*UNCACHED, *BUILT]:
        if f"{uncached}_keepalive_rps" not in figures:
            continue
        line = f"{labels[uncached]:<{width}} {_cell(figures, uncached, 'keepalive'):>24}"
        if ceiling:
            line += f" {'':>24} {figures[f'{uncached}_ratio']:>6.2f}"
        lines.append(line)
        if f"ceiling_{uncached}_keepalive_rps" in figures:  # the ceiling after the same write
            lines.append(f"{'  the ceiling after the same write':<{width}} {'':>24} "
                         f"{_cell(figures, f'ceiling_{uncached}', 'keepalive'):>24} "
                         f"{figures[f'{uncached}_written_ratio']:>6.2f}")
    if not ceiling:
        lines.append("(no ceiling: --url measures a running server only; without --url the bare app is measured too)")
    lines.append(
        f"GET /api/health/ on a fresh connection (TCP + TLS 1.3 handshake, client certificate verified against CA "
        f"and CRL): p50 {figures['fresh_p50_ms']:.2f} ms vs {figures['warm_p50_ms']:.2f} ms on a keep-alive "
        f"connection: a full handshake costs {figures['handshake_ms']:.2f} ms"
    )
    last = (f"api_keepalive_rps={figures['api_keepalive_rps']:.0f} api_parallel_rps={figures['api_parallel_rps']:.0f} "
            f"api_handshake_ms={figures['handshake_ms']:.2f}")
    if ceiling:
        last += (f" ceiling_keepalive_rps={figures['ceiling_keepalive_rps']:.0f} "
                 f"ceiling_parallel_rps={figures['ceiling_parallel_rps']:.0f} "
                 f"api_ceiling_ratio={figures['ceiling_ratio']:.2f} "
                 f"uncached_ceiling_ratio={figures['uncached_ratio']:.2f} "
                 f"links_ceiling_ratio={figures['links_ratio']:.2f} "
                 f"operations_ceiling_ratio={figures['operations_ratio']:.2f}")
        last += "".join(f" {name}_ceiling_ratio={figures[f'{name}_ratio']:.2f}" for name in BUILT
                        if f"{name}_ratio" in figures)
        last += "".join(f" {name}_written_ceiling_ratio={figures[f'{name}_written_ratio']:.2f}" for name in BUILT
                        if f"{name}_written_ratio" in figures)
    lines.append(last)
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench api", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500, help="sequential keep-alive GETs per server (default 500)")
    parser.add_argument("--concurrency", type=int, default=4, help="parallel keep-alive connections (default 4)")
    parser.add_argument("--seconds", type=float, default=3.0, help="parallel run per server, s (default 3)")
    parser.add_argument("--url", help="measure this server instead of starting one, e.g. https://127.0.0.1:8443")
    parser.add_argument("--ca")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1 or args.seconds <= 0:
        parser.error("--requests and --concurrency must be at least 1, --seconds positive")
    if args.url:
        if not (args.ca and args.cert and args.key):
            parser.error("--url needs --ca, --cert and --key")
        figures = run(Target(args.url, args.ca, args.cert, args.key), None, args.requests, args.concurrency,
                      args.seconds)
    else:
        with ThrowAwayServers() as servers:
            figures = run(servers.flexzone, servers.ceiling, args.requests, args.concurrency, args.seconds,
                          servers.change)
    print("\n".join(report(figures, args.concurrency)))
    return 0

"""`python manage.py bench api`: GET requests per second over mutual TLS, and what a full handshake costs.

By default it is self-contained: a throw-away PKI in a temporary directory, a viewer principal
registered for the run (and deleted after), and `manage.py serve` on a free loopback port against the
configured database. `--url --ca --cert --key` measure a running server instead (e.g. `make demo`'s).

Figures: requests/s on one keep-alive connection, requests/s with --concurrency keep-alive connections,
the time of one request on a fresh connection (TCP + TLS handshake with client certificate + request),
and the handshake's cost = fresh-connection request time - keep-alive request time.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent


def _session(ca: str, cert: str, key: str, keep_alive: bool = True) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE would otherwise replace our CA
    session.verify, session.cert = ca, (cert, key)
    if not keep_alive:
        session.headers["Connection"] = "close"
    return session


def _timed_gets(session: requests.Session, url: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        response = session.get(url, timeout=30)
        response.raise_for_status()
        times.append(time.perf_counter() - started)
    return times


def _handshake_pairs(ca: str, cert: str, key: str, url: str, count: int) -> tuple[list[float], list[float]]:
    """Interleave a keep-alive request and a fresh-connection request, so load drift hits both alike."""
    warm, warm_times, fresh_times = _session(ca, cert, key), [], []
    warm.get(url, timeout=30).raise_for_status()
    for _ in range(count):
        started = time.perf_counter()
        warm.get(url, timeout=30).raise_for_status()
        warm_times.append(time.perf_counter() - started)
        fresh = _session(ca, cert, key, keep_alive=False)
        started = time.perf_counter()
        fresh.get(url, timeout=30).raise_for_status()
        fresh_times.append(time.perf_counter() - started)
        fresh.close()
    return warm_times, fresh_times


def _concurrent_rps(ca: str, cert: str, key: str, url: str, threads: int, seconds: float) -> float:
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def worker(index: int) -> None:
        session = _session(ca, cert, key)
        while time.monotonic() < stop:
            session.get(url, timeout=30).raise_for_status()
            counts[index] += 1

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    started = time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


def run(url: str, ca: str, cert: str, key: str, requests_: int, concurrency: int, seconds: float) -> dict:
    endpoint = f"{url.rstrip('/')}/api/sites/"
    session = _session(ca, cert, key)
    _timed_gets(session, endpoint, 20)  # warm up: connection, DB connection, caches
    keep_alive = _timed_gets(session, endpoint, requests_)
    parallel = _concurrent_rps(ca, cert, key, endpoint, concurrency, seconds)
    # The handshake is measured on /api/health/, the cheapest request, so the difference is the TLS cost.
    warm, fresh = _handshake_pairs(ca, cert, key, f"{url.rstrip('/')}/api/health/", max(30, requests_ // 5))
    warm_ms, fresh_ms = statistics.median(warm) * 1000, statistics.median(fresh) * 1000
    return {
        "keepalive_rps": len(keep_alive) / sum(keep_alive),
        "keepalive_p50_ms": statistics.median(keep_alive) * 1000,
        "parallel_rps": parallel,
        "warm_p50_ms": warm_ms,
        "fresh_p50_ms": fresh_ms,
        "handshake_ms": fresh_ms - warm_ms,
    }


class _ThrowAwayServer:
    """A temporary PKI, a registered viewer and `manage.py serve` on a free port."""

    def __enter__(self):
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
        django.setup()
        from api import pki
        from api.principals import register

        self.tmp = tempfile.TemporaryDirectory(prefix="flexzone-bench-")
        directory = Path(self.tmp.name)
        ca = pki.init_ca(directory, "flexzone bench CA")
        ca.issue(pki.SERVER, server=True)
        self.name = f"bench-{os.getpid()}"
        self.principal = register(ca.issue(self.name), self.name, "viewer")
        self.log = open(directory / "serve.log", "wb")
        env = dict(os.environ, FLEXZONE_PKI_DIR=str(directory))
        env.setdefault("FLEXZONE_LOG_LEVEL", "WARNING")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--bind", "127.0.0.1:0"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"Listening at: (https://[0-9.]+:\d+)", (directory / "serve.log").read_text())
            if found:
                self.url = found.group(1)
                break
            if self.process.poll() is not None:
                raise RuntimeError((directory / "serve.log").read_text()[-2000:])
            time.sleep(0.05)
        else:
            raise RuntimeError("the API server did not start within 30 s")
        self.ca, self.cert, self.key = (str(directory / n) for n in ("ca.pem", f"{self.name}.pem", f"{self.name}.key"))
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        self.principal.delete()
        self.tmp.cleanup()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="manage.py bench api", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500, help="sequential keep-alive GETs (default 500)")
    parser.add_argument("--concurrency", type=int, default=4, help="parallel keep-alive connections (default 4)")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of the parallel run (default 3)")
    parser.add_argument("--url", help="measure this server instead of starting one, e.g. https://127.0.0.1:8443")
    parser.add_argument("--ca")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args(argv)
    if args.url:
        if not (args.ca and args.cert and args.key):
            parser.error("--url needs --ca, --cert and --key")
        figures = run(args.url, args.ca, args.cert, args.key, args.requests, args.concurrency, args.seconds)
    else:
        with _ThrowAwayServer() as server:
            figures = run(server.url, server.ca, server.cert, server.key, args.requests, args.concurrency,
                          args.seconds)
    print(f"GET /api/sites/ over mTLS, one keep-alive connection: {figures['keepalive_rps']:.0f} req/s "
          f"(p50 {figures['keepalive_p50_ms']:.2f} ms)")
    print(f"GET /api/sites/ over mTLS, {args.concurrency} keep-alive connections: {figures['parallel_rps']:.0f} req/s")
    print(f"GET /api/health/ on a fresh connection (TCP + TLS 1.3 handshake, client certificate verified "
          f"against CA and CRL): p50 {figures['fresh_p50_ms']:.2f} ms vs {figures['warm_p50_ms']:.2f} ms on a "
          f"keep-alive connection: a full handshake costs {figures['handshake_ms']:.2f} ms")
    print(f"api_keepalive_rps={figures['keepalive_rps']:.0f} api_parallel_rps={figures['parallel_rps']:.0f} "
          f"api_handshake_ms={figures['handshake_ms']:.2f}")
    return 0

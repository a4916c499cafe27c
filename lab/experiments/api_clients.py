"""Registry/API operation rate vs the number of concurrent clients (the other half of `clients`).

The real REST service over mutual TLS on loopback, started from outside for the run (lab.deployment: a
temporary PostgreSQL database, the demo registry and PKI from `manage.py loaddemo` and `manage.py demo_pki`,
`manage.py serve` on a free port), read as the demo's viewer principal (bob). For each client count N, N
threads run at once, each with its own keep-alive HTTPS session (the cli package's client), cycling through
three registry operations a user of the CLI makes: list the sites, look up a device, and ask the planner for
a dry run. Figures per N: aggregate requests/s, p50/p95 latency, errors (any status other than 200, or no
answer).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from lab.database import server_url
from lab.deployment import Deployment
from lab.experiments.base import markdown_table, write_csv, write_json
from lab.plots import Panel, Series, figure

STARTUP_S = 8.0  # a run's database, migrations, demo registry and PKI, server start
VIEWER = "bob"  # the demo PKI's viewer (manage.py demo_pki)
# (name, path and query): the demo registry's cast (manage.py loaddemo).
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("sites", "/api/sites/"),
    ("devices", "/api/devices/?owner_site=remote-site&description=XRAID2"),
    ("plan", "/api/plan/?site=primary-site&device_description=XRAID2"),
)


@dataclass(frozen=True)
class ApiPlan:
    clients: tuple[int, ...]
    seconds: float = 3.0
    warmup_s: float = 0.5
    request_timeout_s: float = 10.0

    def estimate_s(self) -> float:
        """Wall time of a run, the server's start-up included."""
        return STARTUP_S + len(self.clients) * (self.seconds + self.warmup_s + 0.5)

    def within(self, seconds: float) -> ApiPlan:
        """This plan shortened (never below 0.5 s per client count) to take about `seconds` in all."""
        per_count = (seconds - STARTUP_S) / len(self.clients) - self.warmup_s - 0.5
        return replace(self, seconds=max(0.5, min(self.seconds, per_count)))


QUICK = ApiPlan(clients=(1, 2, 4), seconds=3.0)
FULL = ApiPlan(clients=(1, 2, 4, 8), seconds=3.0)


@dataclass
class ApiResult:
    rows: list[dict[str, Any]]
    table: str
    plot: Path
    notes: list[str]

    @property
    def errors(self) -> int:
        return sum(r["errors"] for r in self.rows if r["operation"] == "all")


def run(plan: ApiPlan, folder: Path) -> ApiResult:
    """Start a throw-away service, measure every client count, write api_clients.{csv,json,png} into folder.

    Needs PostgreSQL (DATABASE_URL; lab.database.NoPostgres otherwise)."""
    with Deployment(server_url(), label="api_clients") as service:
        _check_operations(service, plan.request_timeout_s)
        rows: list[dict[str, Any]] = []
        for n in plan.clients:
            rows += _summarise(n, *_load(service, n, plan))
    write_csv(folder / "api_clients.csv", rows)
    write_json(folder / "api_clients.json", {"plan": asdict(plan), "operations": dict(OPERATIONS),
                                             "registry": "manage.py loaddemo", "principal": VIEWER, "rows": rows})
    overall = [r for r in rows if r["operation"] == "all"]
    table = markdown_table(["clients", "requests/s", *[f"{name} req/s" for name, _ in OPERATIONS],
                            "p50 ms", "p95 ms", "requests", "errors"],
                           [[r["clients"], r["requests_per_s"],
                             *[_cell(rows, r["clients"], name) for name, _ in OPERATIONS],
                             r["p50_ms"], r["p95_ms"], r["requests"], r["errors"]] for r in overall])
    clients = [r["clients"] for r in overall]
    rate_series = [Series("all operations", clients, [r["requests_per_s"] for r in overall])]
    rate_series += [Series(name, clients, [_cell(rows, n, name) for n in clients], style="--s")
                    for name, _ in OPERATIONS]
    latency_series = [Series(f"p{q}", clients, [r[f"p{q}_ms"] for r in overall], style=style)
                      for q, style in ((50, "-o"), (95, "--s"))]
    plot = figure(folder / "api_clients.png", [
        Panel("aggregate registry/API operation rate", rate_series, xlabel="concurrent clients",
              ylabel="requests/s", byte_ticks=False),
        Panel("latency per request", latency_series, xlabel="concurrent clients", ylabel="ms", byte_ticks=False),
    ], "Registry/API operations over mutual TLS vs concurrent clients (loopback, keep-alive sessions)")
    paths = ", GET ".join(path for _, path in OPERATIONS)
    notes = [f"API: each client is a thread with its own keep-alive mTLS session cycling GET {paths}; "
             f"{plan.seconds:g} s per client count after a {plan.warmup_s:g} s warm-up on the same connections; the "
             "server is `manage.py serve` on loopback with a temporary database holding the demo registry (gunicorn "
             "workers: FLEXZONE_API_WORKERS, here "
             f"{os.environ.get('FLEXZONE_API_WORKERS', 'the default')}); the clients are threads of one Python "
             "process on the same host, so on a small machine they compete with the server for the CPUs."]
    return ApiResult(rows, table, plot, notes)


def _cell(rows: list[dict[str, Any]], n: int, operation: str) -> float:
    return next(r["requests_per_s"] for r in rows if r["clients"] == n and r["operation"] == operation)


def _check_operations(service: Deployment, timeout: float) -> None:
    """Each operation once, in turn: the server's first requests are slow (imports, caches), and an operation the
    viewer may not run should fail loudly here rather than count as errors."""
    with service.client(VIEWER).session as session:
        for _round in range(2):
            for name, path in OPERATIONS:
                response = session.get(service.url + path, timeout=timeout)
                if response.status_code != 200:
                    raise RuntimeError(f"API operation {name} (GET {path}) answered {response.status_code}: "
                                       f"{response.text[:300]}")


Sample = tuple[str, float, bool]  # operation, seconds, answered 200


def _load(service: Deployment, clients: int, plan: ApiPlan) -> tuple[list[Sample], float]:
    """`clients` threads issuing operations: a warm-up (at least one of each operation per client: TLS handshake,
    a gunicorn worker's first request, a DB connection), then `plan.seconds` measured on the same keep-alive
    connections. Returns (every measured sample, the wall time of the measured part)."""
    samples: list[list[Sample]] = [[] for _ in range(clients)]
    warmed, measuring = threading.Barrier(clients + 1), threading.Barrier(clients + 1)
    base = service.url

    def issue(session: Any, turn: int) -> Sample:
        name, path = OPERATIONS[turn % len(OPERATIONS)]
        began = time.perf_counter()
        try:
            ok = session.get(base + path, timeout=plan.request_timeout_s).status_code == 200
        except OSError:  # requests' ConnectionError and Timeout are OSErrors
            ok = False
        return name, time.perf_counter() - began, ok

    def worker(index: int) -> None:
        turn = index  # clients start on different operations, so every operation runs at every N
        with service.client(VIEWER).session as session:
            stop, done = time.monotonic() + plan.warmup_s, 0
            while time.monotonic() < stop or done < len(OPERATIONS):
                issue(session, turn)
                turn, done = turn + 1, done + 1
            warmed.wait()
            measuring.wait()
            stop = time.monotonic() + plan.seconds
            while time.monotonic() < stop:
                samples[index].append(issue(session, turn))
                turn += 1

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    warmed.wait(timeout=plan.warmup_s + 10 * plan.request_timeout_s)
    measuring.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return [s for per_client in samples for s in per_client], time.perf_counter() - began


def _summarise(clients: int, samples: list[Sample], wall_s: float) -> list[dict[str, Any]]:
    rows = []
    for operation in ("all", *(name for name, _ in OPERATIONS)):
        chosen = [s for s in samples if operation in ("all", s[0])]
        times = sorted(t for _, t, _ in chosen)
        rows.append({"clients": clients, "operation": operation, "requests": len(chosen),
                     "errors": sum(1 for *_, ok in chosen if not ok), "seconds": round(wall_s, 3),
                     "requests_per_s": round(len(chosen) / wall_s, 1) if wall_s > 0 else 0.0,
                     "p50_ms": round(statistics.median(times) * 1000, 2) if times else None,
                     "p95_ms": round(_percentile(times, 0.95) * 1000, 2) if times else None})
    return rows


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]

"""`python -m bench NAME [options]`: run one benchmark (or the soak) and print its figures.

planner, ops, api and soak run on a temporary PostgreSQL database of their own (bench/database.py);
scale and converge deploy the service as the lab does, on a temporary database of their own too;
routers needs no database. Without PostgreSQL they stop at once, saying what to set.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

# Each benchmark's module is imported only when it runs: most import Django models, which need the
# settings (and the temporary database) in place first.


def _planner(argv: list[str]) -> int:
    from bench import planner

    return planner.main(argv)


def _routers(argv: list[str]) -> int:
    from bench import routers

    return routers.main(argv)


def _ops(argv: list[str]) -> int:
    from bench import ops

    return ops.main(argv)


def _api(argv: list[str]) -> int:
    from bench import api

    return api.main(argv)


def _scale(argv: list[str]) -> int:
    from bench import scale

    return scale.main(argv)


def _converge(argv: list[str]) -> int:
    from bench import converge

    return converge.main(argv)


def _soak(argv: list[str]) -> int:
    from bench import soak

    return soak.main(argv)


BENCHMARKS: dict[str, tuple[Callable[[list[str]], int], bool]] = {  # name: (run, needs a database)
    "planner": (_planner, True),
    "routers": (_routers, False),
    "ops": (_ops, True),
    "api": (_api, True),
    "soak": (_soak, True),
    "scale": (_scale, False),  # its deployment makes a database of its own (lab/deployment.py)
    "converge": (_converge, False),  # so does its (bench scale's)
}
USAGE = f"usage: python -m bench {{{','.join(BENCHMARKS)}}} [options]   (NAME --help: its options)"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(USAGE, file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    run, needs_database = BENCHMARKS[name]
    if not needs_database:
        return run(rest)
    if "-h" in rest or "--help" in rest:  # the options only: no database is touched
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
        django.setup()
        return run(rest)

    if name == "soak" and "--db-restarts" in rest:
        return _on_own_cluster(lambda: _with_database(name, run, rest))
    return _with_database(name, run, rest)


def _with_database(name: str, run: Callable[[list[str]], int], rest: list[str]) -> int:
    from bench.database import temporary_database

    with temporary_database(f"bench {name}") as database:
        status = run(rest)
        if status and name == "soak" and "--keep-on-failure" in rest and "--db-restarts" not in rest:
            print(f"bench soak: the database {database.keep()} is kept for inspection (DATABASE_URL's server; "
                  "drop it when done)", file=sys.stderr)
        return status


def _on_own_cluster(run: Callable[[], int]) -> int:
    """Run on a PostgreSQL cluster of this run's own (lab/cluster.py), which the soak restarts; it is
    stopped and removed at the end. A migrated template of DATABASE_URL's server is not there to copy."""
    from bench import soak_restarts
    from lab.cluster import NoCluster, PrivateCluster
    from lab.database import TEMPLATE_ENV

    try:
        cluster = PrivateCluster("flexzone-soak")
    except NoCluster as exc:
        print(f"bench soak --db-restarts: {exc}", file=sys.stderr)
        return 2
    # A TERM (a timeout, a kill by name) ends the soak as an exception would: the cluster is stopped and
    # removed on the way out, not left running (SIGKILL still leaves it: nothing runs then).
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    with cluster:
        os.environ["DATABASE_URL"] = cluster.url
        os.environ.pop(TEMPLATE_ENV, None)
        soak_restarts.CLUSTER = cluster
        print(f"bench soak: on a cluster of its own at {cluster.url}", flush=True)
        return run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

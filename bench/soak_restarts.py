"""The soak's database restarts (`python -m bench soak --db-restarts`): the soak then runs on a PostgreSQL
cluster of its own (lab/cluster.py) and, in some steps, restarts it at a random moment while the step's
operations run on the workers: down `fast` (every session ended) or `immediate` (a crash, recovered at
the next start), for a random time.

Whatever a restart interrupts must still end: after the step, every operation the step submitted that is
still queued is run, and every one left running (its worker lost the database mid-way, so its heartbeat
stopped) is found by the stalled-operation reaper and re-run in recovery mode, as a worker would. One
still live after that is lost, and reported as a broken invariant; the step's usual invariants follow.

The restarts draw on a random generator of their own, seeded from the soak's seed, so a seed walks the
same requests, faults and kills with or without them.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.db import connections

from lab.cluster import PrivateCluster

CLUSTER: PrivateCluster | None = None  # the soak's own cluster, set by `python -m bench soak --db-restarts`
SHARE = 0.25  # of the steps restart the database (`--restart-share`)
DELAY = (0.0, 2.0)  # s into the step's operations
DOWN_FOR = (0.1, 1.5)  # s the server stays down
SALT = 0x5EED_DB  # the restarts' generator: the soak's seed xor this


class Restarts:
    """The restarts of one soak (none without a cluster)."""

    def __init__(self, seed: int, cluster: PrivateCluster | None, share: float = SHARE) -> None:
        self.cluster, self.rng, self.share = cluster, random.Random(seed ^ SALT), share
        self.done = self.interrupted = 0  # restarts made; operations they left queued or running

    @contextmanager
    def around(self, ids: list[int], lines: list[str], problems: list[str], *, allowed: bool) -> Iterator[None]:
        """Run the block (the step's operations on the workers), restarting the database during it in a
        share of the steps (`allowed`: not while this thread itself must read it, as when it kills and
        recovers a worker); then finish what the restart interrupted."""
        chosen = self.rng.random() < self.share
        delay, down_for = self.rng.uniform(*DELAY), self.rng.uniform(*DOWN_FOR)
        mode = self.rng.choice(("fast", "immediate"))
        if self.cluster is None or not (chosen and allowed):
            yield
            return
        cluster, failed = self.cluster, []

        def restart() -> None:
            try:
                cluster.restart(down_for, mode=mode)
            except Exception as exc:  # noqa: BLE001 - said below, on the soak's own thread
                failed.append(exc)

        timer = threading.Timer(delay, restart)
        timer.start()
        try:
            yield
        finally:
            timer.join()
        connections.close_all()  # this thread's connection went with the server
        if failed:
            problems.append(f"the database restart ({mode}) failed: {failed[0]}")
            with suppress(RuntimeError):  # still up (the stop failed), or cannot start: said by what follows
                cluster.start()
            return
        self.done += 1
        lines.append(f"  database restarted ({mode}) {delay:.2f} s into the step, down {down_for:.2f} s")
        self.interrupted += finish_interrupted(ids, lines, problems)


def finish_interrupted(ids: list[int], lines: list[str], problems: list[str]) -> int:
    """Run what is still queued, and re-run what the reaper finds stalled, until none of `ids` is live;
    returns how many were."""
    from bench.soak_checks import LIVE
    from operations.chores import reap_stalled_operations
    from operations.conf import ops_settings
    from operations.models import Operation
    from operations.runner import execute

    # In submission order, the stalled first: a later request waits for an earlier one of its site and
    # devices, which a worker's reaper would have re-run meanwhile.
    deadline = time.monotonic() + ops_settings().stale_after * 4 + ops_settings().total_timeout * len(ids)
    interrupted: set[int] = set()
    while live := dict(Operation.objects.filter(pk__in=ids, state__in=LIVE).values_list("pk", "state")):
        interrupted |= set(live)
        if time.monotonic() > deadline:
            problems.append(f"operations {sorted(live)} never ended after the database restart: lost")
            return len(interrupted)
        for pk in sorted(reap_stalled_operations()):
            lines.append(f"  operation {pk}, stalled by the restart, re-run: {execute(pk).state}")
        if Operation.State.RUNNING not in live.values():  # (one left running goes stale first, and is re-run)
            for pk in sorted(pk for pk, state in live.items() if state == Operation.State.QUEUED):
                lines.append(f"  operation {pk}, still queued after the restart, runs: {execute(pk).state}")
        time.sleep(0.1)
    return len(interrupted)

"""The randomized concurrency soak, quick variant (issue 12): a seeded random walk of adds, removes,
renewals, lease expiries, V1 commands and registry edits on two workers, over iFCP and shared FCIP
links, with the simulators' faults, router outages, killed workers and the FCIP switches' other admin
changing and holding the zoning, checking the engine's invariants after every step (bench/soak.py).

The seed comes from FLEXZONE_SOAK_SEED (to replay one) or is random, and is in any failure message.
Bounded by a step count and about 45 s of walking (a minute with the set-up and the last checks);
`python -m bench soak --minutes N` is the long variant.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from bench.soak import run_soak

STEPS = 60
SECONDS = 45.0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the workers are threads with database connections of their own
def test_a_random_walk_of_racing_operations_faults_and_kills_keeps_every_invariant():
    seed = int(os.environ.get("FLEXZONE_SOAK_SEED") or random.SystemRandom().randrange(1, 10**9))
    print(f"soak seed {seed} (replay: FLEXZONE_SOAK_SEED={seed})")
    started = time.monotonic()
    summary = run_soak(seed, steps=STEPS, seconds=SECONDS)
    elapsed = time.monotonic() - started
    print(f"soak seed {seed}: {summary}")
    assert summary["steps"] >= 5, f"seed {seed}: only {summary['steps']} steps in {elapsed:.0f} s"
    assert summary["operations"], f"seed {seed}: no operation ran"

"""The randomized concurrency soak, quick variant (issue 12): a seeded random walk of adds, removes,
renewals, lease expiries, V1 commands and registry edits on two workers, over iFCP and shared FCIP
links, with the simulators' faults, router outages, killed workers and the FCIP switches' other admin
changing and holding the zoning, checking the engine's invariants after every step (bench/soak.py).

The seed comes from FLEXZONE_SOAK_SEED (to replay one) or is random, and is in any failure message.
Bounded by a step count and about 45 s of walking (a minute with the set-up and the last checks);
`python -m bench soak --minutes N` is the long variant; with `--db-restarts` it runs on a PostgreSQL
cluster of its own and restarts it at random moments (a few steps of it here).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.soak import run_soak

STEPS = 60
SECONDS = 45.0
ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.slow
def test_the_walk_survives_restarts_of_its_own_database_and_loses_no_operation():
    """Issue 45, item 8: `python -m bench soak --db-restarts` runs on a PostgreSQL cluster of its own
    (lab/cluster.py) and restarts it while operations run (here in every step it may: not while a
    worker is killed); every operation still ends, and every invariant holds after each step."""
    seed = int(os.environ.get("FLEXZONE_SOAK_SEED") or random.SystemRandom().randrange(1, 10**9))
    command = [sys.executable, "-m", "bench", "soak", "--db-restarts", "--restart-share", "1", "--steps", "6",
               "--minutes", "1.5", "--seed", str(seed), "--quiet"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"seed {seed}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    summary = json.loads(done.stdout[done.stdout.index("{"):done.stdout.rindex("}") + 1])
    assert summary["database_restarts"] >= 1, f"seed {seed}: {summary}"
    assert summary["operations"] and f"soak seed {seed}: {summary['steps']} steps, every invariant held" in done.stdout

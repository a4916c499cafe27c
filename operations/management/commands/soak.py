"""`python manage.py soak --minutes N [--seed S] [--steps K]`: the long randomized concurrency soak.

Runs operations/soak.py against the configured PostgreSQL database with a cast of its own
(`soak-<tag>-*`, removed at the end with its journal rows) and simulators on 127.0.0.1; prints each
step and a summary. Exit status 1 when an invariant breaks (the message names the seed to replay).
"""

from __future__ import annotations

import json
import random

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from operations.soak import run_soak


class Command(BaseCommand):
    help = "Randomized concurrency soak of the operations engine against simulated routers."

    def add_arguments(self, parser):
        parser.add_argument("--minutes", type=float, default=1.0, help="how long to walk (default 1)")
        parser.add_argument("--seed", type=int, default=None, help="replay this seed (default: a random one)")
        parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
        parser.add_argument("--quiet", action="store_true", help="print the summary only, not every step")
        parser.add_argument("--keep-on-failure", action="store_true",
                            help="when an invariant breaks, keep the cast's rows and journal for inspection")

    def handle(self, *args, **options):
        if connection.vendor != "postgresql":
            raise CommandError("soak: needs PostgreSQL (set DATABASE_URL=postgres://...); with SQLite the "
                               "workers' own connections and a killed worker's recovery cannot be exercised")
        if options["minutes"] <= 0:
            raise CommandError("--minutes: must be more than 0")
        seed = options["seed"] if options["seed"] is not None else random.SystemRandom().randrange(1, 10**9)
        self.stdout.write(f"soak seed {seed} ({options['minutes']:g} min{', replayed' if options['seed'] else ''})")
        out = (lambda _text: None) if options["quiet"] else self.stdout.write
        try:
            summary = run_soak(seed, options["steps"], options["minutes"] * 60, out=out,
                               keep_on_failure=options["keep_on_failure"])
        except AssertionError as exc:
            self.stderr.write(str(exc))
            raise CommandError(f"soak: invariant broken (seed {seed})") from None
        self.stdout.write(json.dumps(summary, indent=2))
        self.stdout.write(f"soak seed {seed}: {summary['steps']} steps, every invariant held")

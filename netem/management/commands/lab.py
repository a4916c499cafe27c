"""`python manage.py lab ...`: the lab command line (the same argparse code as `python -m netem`)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from netem.cli import add_arguments, run


class Command(BaseCommand):
    help = "The flexzone lab: emulated WAN sites (up, down, status, impair, selfcheck)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        # netem.cli prints whole lines itself; without this Django would add a second newline to each.
        self.stdout.ending = ""
        code = run(options, out=self.stdout)
        if code:
            raise CommandError(f"lab {options['action']} failed", returncode=code)

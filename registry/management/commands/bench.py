"""`python manage.py bench NAME [options]`: one entry point for every benchmark in the project.

Each benchmark lives beside the code it measures and exposes `main(argv) -> int`; this command only
dispatches, and passes every later argument through, so `bench routers --help` shows that
benchmark's own options.
"""

import importlib
import sys

from django.core.management.base import BaseCommand, CommandError

BENCHMARKS = {
    "planner": "registry.bench",
    "routers": "routers.bench",
    "ops": "operations.bench",
    "api": "api.bench",
}


class Command(BaseCommand):
    help = f"Run a benchmark and print its figures: {', '.join(BENCHMARKS)}."

    def run_from_argv(self, argv):
        if len(argv) >= 3 and argv[2] in BENCHMARKS:
            sys.exit(self.run_benchmark(argv[2], argv[3:]))
        super().run_from_argv(argv)

    def add_arguments(self, parser):
        parser.add_argument("name", choices=sorted(BENCHMARKS))

    def handle(self, *args, **options):
        status = self.run_benchmark(options["name"], [])
        if status:
            raise CommandError(f"benchmark {options['name']} exited with status {status}")

    @staticmethod
    def run_benchmark(name: str, argv: list[str]) -> int:
        try:
            module = importlib.import_module(BENCHMARKS[name])
        except ImportError as exc:
            raise CommandError(f"benchmark {name} is not available: {exc}") from None
        return module.main(argv)

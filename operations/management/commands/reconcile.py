"""`python manage.py reconcile [--repair] [--policy registry|router] [--json]`: registry vs routers."""

from __future__ import annotations

import json

from operations import reconcile
from registry.readiness import DatabaseCommand


class Command(DatabaseCommand):
    help = "Compare the registry with every router's links; with --repair, converge (journaled)."

    def add_arguments(self, parser):
        parser.add_argument("--repair", action="store_true", help="make them agree (default: report only)")
        parser.add_argument(
            "--policy", choices=["registry", "router"], default="registry", help="which side is the truth"
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, **options):
        op = reconcile(repair=options["repair"], policy=options["policy"])
        if options["json"]:
            self.stdout.write(json.dumps({"operation": op.pk, "state": op.state, **op.result}, indent=2))
            return
        for name, report in op.result.get("routers", {}).items():
            if "error" in report:
                self.stdout.write(f"{name}: cannot read: {report['error']}")
                continue
            drift = sum(len(report[key]) for key in ("missing", "extra", "mismatched"))
            self.stdout.write(f"{name}: {'in agreement' if not drift else f'{drift} difference(s)'}")
            for key in ("missing", "extra", "mismatched", "in_flight", "repaired", "unresolved"):
                for item in report[key]:
                    self.stdout.write(f"  {key}: {json.dumps(item)}")
        self.stdout.write(f"operation {op.pk}: {op.state}{' - ' + op.error if op.error else ''}")

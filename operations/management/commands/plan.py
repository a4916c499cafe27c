import json

from django.core.management.base import CommandError

from operations.delta import with_delta
from operations.planner import PlanError, plan_target
from registry.readiness import DatabaseCommand


class Command(DatabaseCommand):
    help = (
        "Answer 'how do I connect SITE to a device (or zone)?' with the routers, ports, zones, remote gateways and "
        "exact commands, in order. Example: plan --device-description XRAID2 --site primary-site"
    )

    def add_arguments(self, parser):
        parser.add_argument("--site", required=True, help="requesting site: short name, display name or MSAN id")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--device-description", help="e.g. XRAID2")
        target.add_argument("--wwn", help="e.g. 21:00:00:e0:8b:0e:95:17")
        target.add_argument("--zone", help="zone id, e.g. 2")
        parser.add_argument("--host", action="append", dest="hosts", metavar="NAME",
                            help="FCIP: zone only this host's initiators (repeatable; default all the site's hosts)")
        parser.add_argument("--remove", action="store_true", help="plan the disconnect instead")
        parser.add_argument("--json", action="store_true", help="print the plan as JSON")

    def handle(self, *args, **options):
        target = {name: options[name] for name in ("site", "device_description", "wwn", "zone", "hosts")}
        if options["hosts"] and options["remove"]:
            raise CommandError("--host goes with a connect plan: a disconnect removes the whole link")
        try:
            plan = plan_target("remove" if options["remove"] else "add", target)
        except PlanError as exc:
            raise CommandError(str(exc)) from None
        plan = with_delta(plan)
        self.stdout.write(json.dumps(plan.as_dict(), indent=2) if options["json"] else plan.describe())

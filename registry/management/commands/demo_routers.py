import json

from django.core.management.base import CommandError

from registry.models import Router
from registry.readiness import DatabaseCommand


class Command(DatabaseCommand):
    help = "List the registered routers (without secrets) or record the port a simulator bound (used by make demo)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--set-port", nargs=2, metavar=("ROUTER", "PORT"))

    def handle(self, *args, **options):
        if options["set_port"]:
            name, port = options["set_port"]
            updated = Router.objects.filter(name=name).update(port=int(port))
            if not updated:
                raise CommandError(f"router: no router is named {name!r}")
            return
        routers = list(Router.objects.values("name", "platform", "transport", "host", "port", "username"))
        self.stdout.write(json.dumps(routers) if options["json"] else "\n".join(str(r) for r in routers))

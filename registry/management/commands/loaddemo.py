"""`python manage.py loaddemo [--no-fcip]`: the demo registry, idempotently."""

from registry.demo import load_demo
from registry.readiness import DatabaseCommand


class Command(DatabaseCommand):
    help = (
        "Load the DICE testbed (primary-site/GSFC-DICEL1, remote-site, zones 1-3, XRAID1-3, their hosts and "
        "initiators) and the FCIP pair (east-site on a Brocade FOS, west-site on a Cisco MDS, EAST-ARRAY1). "
        "Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("--no-fcip", dest="fcip", action="store_false",
                            help="load the two-site iFCP testbed only (the tests' cast)")

    def handle(self, *args, **options):
        counts = load_demo(fcip=options["fcip"])
        self.stdout.write("Loaded demo registry: " + ", ".join(f"{n} {what}" for what, n in counts.items()))

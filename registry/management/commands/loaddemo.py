from django.core.management.base import BaseCommand

from registry.demo import load_demo


class Command(BaseCommand):
    help = "Load the DICE testbed (primary-site/GSFC-DICEL1, remote-site, zones 1-3, XRAID1-3). Idempotent."

    def handle(self, *args, **options):
        counts = load_demo()
        self.stdout.write("Loaded demo registry: " + ", ".join(f"{n} {what}" for what, n in counts.items()))

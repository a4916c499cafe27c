"""`python manage.py demo_pki`: the demo PKI in .demo/pki/, idempotently, with its principals.

Writes ca.pem, server.pem/server.key, alice.pem/alice.key (operator, scoped to the demo sites, the
FCIP pair's too when loaded, and every zone), bob.pem/bob.key (viewer), root.pem/root.key (admin),
prometheus.pem/prometheus.key (monitor: reads /metrics only) and crl.pem, and a PKCS#12 bundle for a
browser (NAME.p12, its password in NAME.p12.password) of alice, bob and root, for the console and the
admin site; registers alice, bob, root and prometheus. Run after `loaddemo`.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from access import pki, principals
from access.models import Role
from registry.models import Site, Zone
from registry.readiness import DatabaseCommand

DEMO_SITES = ("primary-site", "remote-site")
FCIP_SITES = ("east-site", "west-site")  # present when `loaddemo` loaded the FCIP pair (its default)
BROWSER_BUNDLES = ("alice", "bob", "root")


class Command(DatabaseCommand):
    help = ("Create or refresh the demo PKI (CA, server, alice operator, bob viewer, root admin, prometheus monitor, "
            "CRL, browser bundles) and register the principals.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dir", type=Path, default=None, help="PKI directory (default FLEXZONE_PKI_DIR)")

    def handle(self, *args, **options) -> None:
        directory = options["dir"] or Path(settings.FLEXZONE_PKI_DIR)
        certs = pki.demo_pki(directory, clients=("alice", "bob", "root", "prometheus"))
        sites = list(Site.objects.filter(name__in=DEMO_SITES + FCIP_SITES).values_list("name", flat=True))
        zones = list(Zone.objects.values_list("zone_id", flat=True))
        if not set(DEMO_SITES) <= set(sites):
            self.stderr.write("demo sites not loaded yet (run `manage.py loaddemo`); alice gets no site scope")
        principals.register(certs["alice"], "alice", Role.OPERATOR, sites=sites, zones=zones)
        principals.register(certs["bob"], "bob", Role.VIEWER)
        principals.register(certs["root"], "root", Role.ADMIN, all_sites=True, all_zones=True)
        principals.register(certs["prometheus"], "prometheus", Role.MONITOR)
        for name in BROWSER_BUNDLES:
            pki.write_pkcs12(directory, name)
        self.stdout.write(f"demo PKI ready in {directory}: alice (operator: {' '.join(sites)}; zones "
                          f"{' '.join(map(str, zones))}), bob (viewer), root (admin), prometheus (monitor); "
                          f"{', '.join(name + '.p12' for name in BROWSER_BUNDLES)} for a browser")
        self.stdout.write(
            f"  curl --cacert {directory}/ca.pem --cert {directory}/alice.pem --key {directory}/alice.key "
            "https://127.0.0.1:8443/api/sites/"
        )

"""`python manage.py ca ACTION`: the API's certificate authority.

    ca init                      create the CA and an empty CRL in FLEXZONE_PKI_DIR (or --dir)
    ca issue-server [--host H]   issue server.pem/server.key for 127.0.0.1 and localhost (plus --host)
    ca issue-client NAME --role operator --site primary-site --zone 1
                                 issue NAME.pem/NAME.key and register principal NAME with that role and scope
    ca revoke NAME|SERIAL        revoke, rewrite crl.pem atomically, and mark the principal revoked
    ca crl                       re-sign the CRL (do this well before its nextUpdate: an expired CRL
                                 refuses every client)
    ca list                      everything issued, with fingerprints and revocation state
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from access import pki, principals
from access.models import Role
from registry.readiness import require_migrated


class Command(BaseCommand):
    help = "Certificate authority for the API's mutual TLS: init, issue-server, issue-client, revoke, crl, list."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dir", type=Path, default=None, help="PKI directory (default FLEXZONE_PKI_DIR)")
        actions = parser.add_subparsers(dest="action", required=True)
        init = actions.add_parser("init", help="create a CA")
        init.add_argument("--name", default="flexzone API CA")
        init.add_argument("--days", type=int, default=3650)
        server = actions.add_parser("issue-server", help="issue the server certificate")
        server.add_argument("--host", action="append", default=[], help="extra DNS name or IP (repeatable)")
        server.add_argument("--days", type=int, default=825)
        client = actions.add_parser("issue-client", help="issue a client certificate and register its principal")
        client.add_argument("name")
        client.add_argument("--role", choices=[r.value for r in Role], default=Role.VIEWER.value)
        client.add_argument("--site", action="append", default=[], help="site in scope (repeatable)")
        client.add_argument("--zone", action="append", type=int, default=[], help="zone in scope (repeatable)")
        client.add_argument("--all-sites", action="store_true")
        client.add_argument("--all-zones", action="store_true")
        client.add_argument("--days", type=int, default=pki.DEFAULT_CLIENT_DAYS)
        client.add_argument("--no-register", action="store_true", help="only issue; do not touch the registry")
        revoke = actions.add_parser("revoke", help="revoke by name or hex serial")
        revoke.add_argument("name_or_serial")
        crl = actions.add_parser("crl", help="re-sign the CRL")
        crl.add_argument("--days", type=int, default=pki.CRL_DAYS)
        actions.add_parser("list", help="list issued certificates")

    def handle(self, *args, **options) -> None:
        directory = options["dir"] or Path(settings.FLEXZONE_PKI_DIR)
        action = options["action"]
        if action == "revoke" or (action == "issue-client" and not options["no_register"]):
            # Before the certificate is issued or the CRL rewritten: all of the action or none of it.
            require_migrated()
        try:
            if action == "init":
                ca = pki.init_ca(directory, options["name"], options["days"])
                self.stdout.write(f"created CA {ca.cert.subject.rfc4514_string()} in {directory}")
                return
            ca = pki.CA.load(directory)
            if action == "issue-server":
                hosts = ("127.0.0.1", "localhost", *options["host"])
                ca.issue(pki.SERVER, server=True, hosts=hosts, days=options["days"])
                self.stdout.write(f"issued {directory / 'server.pem'} for {', '.join(hosts)}")
            elif action == "issue-client":
                self._issue_client(ca, directory, options)
            elif action == "revoke":
                hits = ca.revoke(options["name_or_serial"])
                marked = principals.mark_revoked(entry["sha256"] for entry in hits)
                for entry in hits:
                    self.stdout.write(f"revoked {entry['name']} serial {entry['serial']}")
                self.stdout.write(f"CRL rewritten: {directory / pki.CRL}; {marked} principal(s) marked revoked")
            elif action == "crl":
                crl = ca.publish_crl(options["days"])
                self.stdout.write(f"CRL re-signed, valid until {crl.next_update_utc:%Y-%m-%d %H:%M} UTC")
            elif action == "list":
                self._list(directory)
        except (pki.PKIError, ValueError) as exc:
            raise CommandError(str(exc)) from None

    def _issue_client(self, ca: pki.CA, directory: Path, options: dict) -> None:
        name = options["name"]
        cert = ca.issue(name, days=options["days"])
        self.stdout.write(f"issued {directory / (name + '.pem')} and {name}.key (SHA-256 {pki.fingerprint(cert)})")
        if options["no_register"]:
            return
        principal = principals.register(
            cert,
            name,
            options["role"],
            sites=options["site"],
            zones=options["zone"],
            all_sites=options["all_sites"],
            all_zones=options["all_zones"],
        )
        scope = ", ".join(
            ["all sites" if principal.all_sites else "sites: " + (" ".join(options["site"]) or "none"),
             "all zones" if principal.all_zones else "zones: " + (" ".join(map(str, options["zone"])) or "none")]
        )
        self.stdout.write(f"registered principal {principal.name} ({principal.role}; {scope})")

    def _list(self, directory: Path) -> None:
        rows = pki.read_index(directory)
        self.stdout.write(f"{'name':<16} {'kind':<7} {'serial':<41} {'not after':<20} {'revoked':<20} sha256")
        for row in rows:
            self.stdout.write(
                f"{row['name']:<16} {row['kind']:<7} {row['serial']:<41} {row['not_after'][:19]:<20} "
                f"{(row['revoked_at'] or '-')[:19]:<20} {row['sha256']}"
            )

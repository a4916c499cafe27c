"""`python manage.py routers list` and `python manage.py routers trust NAME... | --all [--yes]`.

`trust` reads the SSH host key each router presents (the key exchange only: no login, no password),
shows its fingerprint, and records the key as the one flexzone trusts for that router once you say
yes (or with --yes, for scripts such as the demo that start the routers themselves). Compare the
fingerprint with the router's own (e.g. `ssh-keygen -l` on its key, or the switch's `show ssh
server` / `sshutil showpubkeys`) before trusting it.
"""

from __future__ import annotations

import paramiko
from django.core.management.base import CommandError

from registry.models import Router
from registry.readiness import DatabaseCommand
from routers import hostkeys


class Command(DatabaseCommand):
    help = "List routers with their transport security, or trust the SSH host keys they present."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="routers, platform, transport and host-key status")
        trust = sub.add_parser("trust", help="show the SSH host key a router presents and record it as trusted")
        trust.add_argument("names", nargs="*", help="router names")
        trust.add_argument("--all", action="store_true", help="every router reached over SSH")
        trust.add_argument("--yes", action="store_true", help="record without asking (after showing it)")
        trust.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each router")

    def handle(self, *args, **options):
        if options["action"] == "list":
            self._list()
        else:
            self._trust(options)

    def _list(self) -> None:
        for router in Router.objects.select_related("site"):
            key = router.ssh_host_key_sha256 or "-"
            self.stdout.write(f"{router.name:<20} {router.site.name:<16} {router.platform:<16} {router.transport:<7} "
                              f"{router.host}:{router.port:<6} {router.transport_security:<30} {key}")

    def _trust(self, options) -> None:
        names = options["names"]
        if options["all"] == bool(names):
            raise CommandError("name the routers to trust, or give --all (not both)")
        routers = list(Router.objects.filter(transport=Router.Transport.SSH)) if options["all"] else []
        for name in names:
            router = Router.objects.filter(name=name).first()
            if router is None:
                raise CommandError(f"no router is named {name!r}")
            if router.transport != Router.Transport.SSH:
                raise CommandError(f"{name} is reached over {router.transport}: there is no host key to trust "
                                   "(its management session is plaintext)")
            routers.append(router)
        failed = []
        for router in routers:
            try:
                presented = hostkeys.fetch(router.host, router.port, options["timeout"])
            except (OSError, EOFError, paramiko.SSHException) as exc:
                self.stderr.write(f"{router.name}: cannot read its host key at {router.host}:{router.port}: {exc}")
                failed.append(router.name)
                continue
            fingerprint = hostkeys.fingerprint(presented)
            if router.ssh_host_key and hostkeys.normalize(router.ssh_host_key) == hostkeys.normalize(presented):
                self.stdout.write(f"{router.name}: already trusted ({presented.split()[0]} {fingerprint})")
                continue
            was = f" (CHANGED: trusted until now {router.ssh_host_key_sha256})" if router.ssh_host_key else ""
            self.stdout.write(f"{router.name} at {router.host}:{router.port} presents {presented.split()[0]} "
                              f"{fingerprint}{was}")
            if not options["yes"] and input("Trust this key? [y/N] ").strip().lower() not in ("y", "yes"):
                self.stdout.write(f"{router.name}: not trusted")
                continue
            router.ssh_host_key = hostkeys.normalize(presented)
            router.full_clean()
            router.save(update_fields=["ssh_host_key", "updated_at"])
            self.stdout.write(f"{router.name}: trusted {fingerprint}")
        if failed:
            raise CommandError(f"could not read the host key of {', '.join(failed)}")

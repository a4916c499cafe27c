"""`python manage.py serve --bind 127.0.0.1:8443`: the API over mutual TLS (gunicorn, gthread).

Replaces this process with gunicorn configured by serving.gunicorn_conf; options after `--` go to
gunicorn unchanged (e.g. `-- --workers 4`).
"""

from __future__ import annotations

import os
import sys

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connections

from registry.readiness import DatabaseCommand


class Command(DatabaseCommand):
    help = "Serve the API over mutual TLS with gunicorn (client certificate required, CRL enforced)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--bind", default="127.0.0.1:8443", help="host:port, or unix:PATH behind nginx")
        parser.add_argument("--workers", type=int, default=None)
        parser.add_argument("--threads", type=int, default=None)
        parser.add_argument("gunicorn_args", nargs="*", help="extra gunicorn options (after --)")

    def check_options(self, options: dict) -> None:
        if settings.FLEXZONE_TRUST_PROXY_HEADERS and not options["bind"].startswith("unix:"):
            raise CommandError("FLEXZONE_TRUST_PROXY_HEADERS is on: bind a unix socket (--bind unix:PATH) only")
        for name in ("FLEXZONE_TLS_CERT", "FLEXZONE_TLS_KEY", "FLEXZONE_TLS_CA", "FLEXZONE_TLS_CRL"):
            path = getattr(settings, name)
            if not os.path.exists(path) and not settings.FLEXZONE_TRUST_PROXY_HEADERS:
                raise CommandError(f"{name}={path} does not exist; run `manage.py demo_pki` or `manage.py ca init`")

    def handle(self, *args, **options) -> None:
        argv = [sys.executable, "-m", "gunicorn", "-c", "python:serving.gunicorn_conf", "--bind", options["bind"]]
        if options["workers"]:
            argv += ["--workers", str(options["workers"])]
        if options["threads"]:
            argv += ["--threads", str(options["threads"])]
        argv += options["gunicorn_args"]
        sys.stdout.flush()
        connections.close_all()  # the readiness check's connection: not handed to gunicorn
        os.execv(sys.executable, argv)

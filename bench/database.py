"""A temporary PostgreSQL database for one benchmark run: created on the server DATABASE_URL names,
migrated, handed to Django, and dropped at the end, so a run neither needs a migrated database nor
leaves anything in one."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

NEEDS_POSTGRES = ("needs PostgreSQL: set DATABASE_URL=postgres://USER@HOST:PORT/DB (a server where it may create "
                  "a temporary database of its own; make test uses postgres://postgres@127.0.0.1:5432/flexzone)")


def postgres_url(what: str) -> str:
    """DATABASE_URL if it names a PostgreSQL server; otherwise one line on stderr saying what to set, and
    exit status 2."""
    url = os.environ.get("DATABASE_URL", "")
    if urlsplit(url).scheme not in ("postgres", "postgresql"):
        print(f"{what}: {NEEDS_POSTGRES}", file=sys.stderr)
        raise SystemExit(2)
    return url


@contextmanager
def temporary_database(what: str) -> Iterator[str]:
    """Create, migrate and yield (its URL, also in os.environ["DATABASE_URL"]) a database of this run's
    own; Django is set up on it. Dropped afterwards, whatever happened."""
    import psycopg

    server = urlsplit(postgres_url(what))
    name = f"flexzone_bench_{os.getpid()}_{secrets.token_hex(3)}"
    maintenance = urlunsplit(server._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(server._replace(path=f"/{name}"))
    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    try:
        import django
        from django.core.management import call_command

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        yield url
    finally:
        from django.db import connections

        connections.close_all()
        os.environ["DATABASE_URL"] = previous or ""
        with psycopg.connect(maintenance, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

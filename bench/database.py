"""A temporary PostgreSQL database for one benchmark run: created on the server DATABASE_URL names,
migrated, handed to Django, and dropped at the end, so a run neither needs a migrated database nor
leaves anything in one. The database itself is the lab's `TemporaryDatabase` (lab/database.py): one
way of making, migrating and dropping a run's database."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from lab.database import NoPostgres, TemporaryDatabase, server_url

NEEDS_POSTGRES = ("needs PostgreSQL: set DATABASE_URL=postgres://USER@HOST:PORT/DB (a server where it may create "
                  "a temporary database of its own; make test uses postgres://postgres@127.0.0.1:5432/flexzone)")


def postgres_url(what: str) -> str:
    """DATABASE_URL if it names a PostgreSQL server that answers; otherwise one line on stderr saying what
    to do, and exit status 2."""
    url = os.environ.get("DATABASE_URL", "")
    if urlsplit(url).scheme not in ("postgres", "postgresql"):
        print(f"{what}: {NEEDS_POSTGRES}", file=sys.stderr)
        raise SystemExit(2)
    try:
        return server_url({"DATABASE_URL": url})
    except NoPostgres as exc:
        print(f"{what}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


@contextmanager
def temporary_database(what: str) -> Iterator[TemporaryDatabase]:
    """Create, migrate and yield a database of this run's own (its URL also in os.environ["DATABASE_URL"]);
    Django is set up on it. Dropped afterwards, whatever happened, unless the run called its `keep()`."""
    with TemporaryDatabase(postgres_url(what), label=what.removeprefix("bench "), prefix="flexzone_bench") as database:
        previous = os.environ.get("DATABASE_URL")
        os.environ["DATABASE_URL"] = database.url
        try:
            import django

            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
            django.setup()
            yield database
        finally:
            from django.db import connections

            connections.close_all()
            os.environ["DATABASE_URL"] = previous or ""

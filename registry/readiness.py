"""Whether the database is ready for flexzone's commands: reachable, with every migration applied.

A command run against a database nobody migrated (the default SQLite file of a fresh clone, say)
would otherwise stop half-way with "no such table"; `DatabaseCommand` stops it before it starts,
saying what to run.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connections


def describe(using: str = "default") -> str:
    """The database as a person would name it: the SQLite file, or PostgreSQL's host, port and name."""
    settings = connections[using].settings_dict
    if connections[using].vendor == "sqlite":
        return f"SQLite file {settings['NAME']}"
    return f"PostgreSQL {settings.get('HOST') or 'socket'}:{settings.get('PORT') or 5432}/{settings['NAME']}"


def database_url(using: str = "default", name: str | None = None) -> str:
    """This process's database (a test database included) as a DATABASE_URL a child process can use, or,
    with `name`, another database on the same server. Credentials and a unix-socket directory are
    quoted, so a socket URL (make test's fallback) stays one."""
    from urllib.parse import quote

    db = connections[using].settings_dict
    if connections[using].vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"] or "", safe="") + (":" + quote(db["PASSWORD"], safe="") if db["PASSWORD"] else "")
    host = quote(db["HOST"] or "127.0.0.1", safe="")
    return f"postgres://{auth}{'@' if auth else ''}{host}:{db['PORT'] or 5432}/{name or db['NAME']}"


def pending_migrations(using: str = "default") -> list[str]:
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections[using])
    return [f"{migration.app_label}.{migration.name}"
            for migration, _backwards in executor.migration_plan(executor.loader.graph.leaf_nodes())]


def require_migrated(using: str = "default") -> None:
    try:
        pending = pending_migrations(using)
    except DatabaseError as exc:
        raise CommandError(f"the {describe(using)} cannot be read ({exc.__class__.__name__}: "
                           f"{str(exc).strip().splitlines()[0] if str(exc).strip() else 'no detail'})") from None
    if pending:
        raise CommandError(
            f"the {describe(using)} is not migrated ({len(pending)} migration(s) pending, first {pending[0]}): run "
            "`python manage.py migrate` first, or, with `make demo` running, `. .demo/env` to use the demo's database"
        )


class DatabaseCommand(BaseCommand):
    """A management command that needs the registry: stops at once, in one line, on a database that is
    unreachable or not migrated. Mistakes in its own arguments are reported first (`check_options`), so
    that a user is not sent to fix the database before learning the command line was wrong."""

    def check_options(self, options: dict) -> None:
        """Raise CommandError for options that are wrong whatever the database holds."""

    def execute(self, *args, **options):
        self.check_options(options)
        require_migrated(options.get("database") or "default")
        return super().execute(*args, **options)

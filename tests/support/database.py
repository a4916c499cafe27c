"""The tests' PostgreSQL databases, made and emptied cheaply (the flush: `flushing_by_delete`).

One migrated template database per schema, made once for a test run and kept on the server for the next:
pytest-django's test databases (one per xdist worker) and the lab's and the benchmarks' temporary databases
copy it (`CREATE DATABASE ... TEMPLATE`, a fraction of a second) instead of each migrating its own (seconds
of CPU each, dozens of times per run).

Its name carries a hash of every migration file and of the versions of the packages whose migrations run
too, so a changed schema gets a new template; an old one is dropped when a new one is made. It is made
under a temporary name and renamed when complete, so a run killed half-way leaves no half-made template.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib.metadata import version
from pathlib import Path

import psycopg

from lab.database import TEMPLATE_ENV, _with_database, maintenance_url, quote_name

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "flexzone_tpl_"
MIGRATING_PACKAGES = ("Django", "djangorestframework", "procrastinate")  # INSTALLED_APPS with migrations of their own


def schema_key() -> str:
    """A hash of what `manage.py migrate` would build: the project's migrations and the packages' versions."""
    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    for package in MIGRATING_PACKAGES:
        digest.update(f"{package}=={version(package)}".encode())
    return digest.hexdigest()[:16]


def ensure_template(server: str) -> str:
    """The name of a migrated template database on `server` (a DATABASE_URL), made now if there is none."""
    name = PREFIX + schema_key()
    with psycopg.connect(maintenance_url(server), autocommit=True) as admin:
        if _exists(admin, name):
            return name
        making = f"{name}_{os.getpid()}"
        admin.execute(f"DROP DATABASE IF EXISTS {quote_name(making)}")
        admin.execute(f"CREATE DATABASE {quote_name(making)}")
        try:
            environment = {key: value for key, value in os.environ.items() if key != TEMPLATE_ENV}
            migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT,
                                     env={**environment, "DATABASE_URL": _with_database(server, making)},
                                     capture_output=True, text=True, timeout=300)
            if migrate.returncode != 0:
                raise RuntimeError(f"manage.py migrate failed on {making}: {migrate.stderr.strip()[-800:]}")
            if not _exists(admin, name):  # another run may have made it meanwhile: keep theirs
                admin.execute(f"ALTER DATABASE {quote_name(making)} RENAME TO {quote_name(name)}")
                _drop_older_templates(admin, keep=name)
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {quote_name(making)} WITH (FORCE)")
    return name


def _exists(admin: psycopg.Connection, name: str) -> bool:
    return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def _drop_older_templates(admin: psycopg.Connection, keep: str) -> None:
    """Finished templates of older schemas (not another run's half-made one, named with its PID): no run
    copies them any more; one being copied right now is left for the next run to drop."""
    pattern = PREFIX.replace("_", r"\_") + "%"
    for (old,) in admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                                (pattern, keep)).fetchall():
        if len(old) == len(keep):
            with suppress(psycopg.errors.ObjectInUse):
                admin.execute(f"DROP DATABASE {quote_name(old)}")


@contextmanager
def flushing_by_delete() -> Iterator[None]:
    """While open, Django's flush (run after every transactional test) empties PostgreSQL tables with DELETE
    instead of one TRUNCATE of every table.

    TRUNCATE gives each of the ~30 tables and their indexes new files: about 0.3 s of server CPU per
    flush, hundreds of times a run, however few rows a test left. DELETE of those few rows costs ~0.01 s
    and ends in the same state: every model table empty, sequences where they were (a flush that resets
    them still truncates), the statement triggers that count registry changes fired once (they fire on
    DELETE as on TRUNCATE), foreign keys checked at commit (Django makes them deferrable).
    """
    from django.db.backends.postgresql.operations import DatabaseOperations

    from access.models import AuditEvent
    from operations.models import Grant, Link

    truncating = DatabaseOperations.sql_flush
    # Grants and links go first: the registry's `in_use` trigger refuses deleting an initiator they name.
    # The audit trail goes last: the write trail (operations migration 0008) records each row deleted before.
    holds, trail = (Link._meta.db_table, Grant._meta.db_table), AuditEvent._meta.db_table

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or not tables:
            return truncating(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        ordered = sorted(tables, key=lambda table: (table == trail, table not in holds))
        return ["SET CONSTRAINTS ALL DEFERRED", *(f"DELETE FROM {self.quote_name(table)}" for table in ordered)]

    DatabaseOperations.sql_flush = sql_flush  # type: ignore[method-assign]
    try:
        yield
    finally:
        DatabaseOperations.sql_flush = truncating  # type: ignore[method-assign]

"""The PostgreSQL database a lab run gives the flexzone service it starts: a temporary one of its own.

It is created on the server DATABASE_URL names, migrated with `manage.py migrate` and dropped afterwards,
so a run needs no migrated database and leaves nothing in one; the default SQLite file is never used.
Without PostgreSQL a command that needs it stops at once with one line saying what to set (`NoPostgres`).

With FLEXZONE_DB_TEMPLATE naming a migrated database on that server (`make test` keeps one per schema), a run
copies it (`CREATE DATABASE ... TEMPLATE`, a fraction of a second) instead of migrating (seconds of CPU).

Processes on this host reach the database as DATABASE_URL says; processes inside a lab namespace reach it
over the server's UNIX socket (`socket_url`), since 127.0.0.1 inside a namespace is that namespace's own
loopback, where no PostgreSQL listens, while a socket file works from any namespace.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
SOCKET_DIRS = ("/var/run/postgresql", "/run/postgresql", "/tmp")  # where Debian's and upstream's builds put it
LOCAL_HOSTS = ("", "127.0.0.1", "localhost", "::1", "[::1]")
TEMPLATE_ENV = "FLEXZONE_DB_TEMPLATE"  # a migrated database to copy instead of migrating a new one
NEEDS_POSTGRES = ("needs PostgreSQL: set DATABASE_URL=postgres://USER@HOST:PORT/DB (a server where it may create a "
                  "temporary database of its own; make test uses postgres://postgres@127.0.0.1:5432/flexzone; "
                  "under sudo add --preserve-env=DATABASE_URL)")


class NoPostgres(RuntimeError):
    """No usable PostgreSQL server; the message is one line saying what to do."""


def server_url(environ: dict[str, str] | None = None) -> str:
    """DATABASE_URL if it names a PostgreSQL server that answers; NoPostgres otherwise."""
    url = (os.environ if environ is None else environ).get("DATABASE_URL", "")
    if urlsplit(url).scheme not in ("postgres", "postgresql"):
        raise NoPostgres(NEEDS_POSTGRES)
    try:
        _connect(maintenance_url(url), timeout=5).close()
    except Exception as exc:  # noqa: BLE001 - psycopg's errors, a bad URL: all mean "not usable", said in one line
        reason = " ".join(str(exc).split())[:200]
        raise NoPostgres(f"cannot use the PostgreSQL server DATABASE_URL names ({_where(url)}): {reason}") from None
    return url


def socket_url(url: str) -> str | None:
    """The same database over the server's UNIX socket, or None when the server is on another host (or its
    socket cannot be found): a lab namespace can reach nothing else of this host."""
    parts = urlsplit(url)
    host = unquote(parts.hostname or "") if parts.hostname else ""
    if host.startswith("/"):
        return url
    if host not in LOCAL_HOSTS:
        return None
    port = parts.port or 5432
    directory = next((d for d in SOCKET_DIRS if Path(d, f".s.PGSQL.{port}").exists()), None)
    if directory is None:
        return None
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@" if credentials else ""
    return urlunsplit(parts._replace(netloc=f"{netloc}{quote(directory, safe='')}:{port}"))


class TemporaryDatabase:
    """A database of one run's own on `server` (a DATABASE_URL): `create()` makes and migrates it, `drop()`
    removes it (also usable as a context manager)."""

    def __init__(self, server: str, label: str = "run", prefix: str = "flexzone_lab") -> None:
        self.server = server
        safe = "".join(c if c.isalnum() else "_" for c in label.lower())[:24]
        self.name = f"{prefix}_{safe}_{os.getpid()}_{secrets.token_hex(3)}"
        self.url = _with_database(server, self.name)
        self.created = False

    def socket_url(self) -> str | None:
        return socket_url(self.url)

    def create(self) -> TemporaryDatabase:
        template = os.environ.get(TEMPLATE_ENV, "")
        with _connect(maintenance_url(self.server), autocommit=True) as admin:
            if template:
                admin.execute(f"CREATE DATABASE {quote_name(self.name)} TEMPLATE {quote_name(template)}")
                self.created = True
                return self
            admin.execute(f"CREATE DATABASE {quote_name(self.name)}")
        self.created = True
        try:
            migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT,
                                     env={**os.environ, "DATABASE_URL": self.url}, capture_output=True, text=True,
                                     timeout=300)
            if migrate.returncode != 0:
                raise RuntimeError(f"manage.py migrate failed on {self.name}: {migrate.stderr.strip()[-800:]}")
        except BaseException:
            self.drop()
            raise
        return self

    def exists(self) -> bool:
        with _connect(maintenance_url(self.server)) as conn:
            return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.name,)).fetchone() is not None

    def keep(self) -> str:
        """Leave the database on the server for inspection (`drop()` does nothing after this); its name."""
        self.created = False
        return self.name

    def drop(self) -> None:
        if not self.created:
            return
        with _connect(maintenance_url(self.server), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {quote_name(self.name)} WITH (FORCE)")
        self.created = False

    def __enter__(self) -> TemporaryDatabase:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.drop()


def quote_name(name: str) -> str:
    """`name` as a PostgreSQL identifier; a name no identifier can hold is refused, naming it."""
    if not name or '"' in name or "\0" in name or len(name.encode()) > 63:
        raise ValueError(f"not a PostgreSQL database name: {name!r} (1-63 bytes, no double quote)")
    return f'"{name}"'


def maintenance_url(url: str) -> str:
    """The server's `postgres` database, where databases are created and dropped from."""
    return _with_database(url, "postgres")


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))  # the query (sslmode=, host=...) holds for both


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{unquote(parts.hostname or 'localhost')}:{parts.port or 5432}"


def _connect(url: str, *, autocommit: bool = False, timeout: float = 10) -> Any:
    import psycopg  # the service's own driver; imported here so that `lab up` and friends start without it

    return psycopg.connect(url, autocommit=autocommit, connect_timeout=max(1, int(timeout)))

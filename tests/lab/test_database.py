"""The temporary PostgreSQL databases the lab and the benchmarks run on (lab/database.py), on the tests'
own server: made and migrated, dropped after, dropped when its migration fails, kept only when asked."""

from __future__ import annotations

import os
from urllib.parse import quote, urlsplit

import psycopg
import pytest

from lab.database import (
    TEMPLATE_ENV,
    NoPostgres,
    TemporaryDatabase,
    maintenance_url,
    quote_name,
    server_url,
    socket_url,
)
from tests.support.database import ensure_template


@pytest.fixture
def server(monkeypatch) -> str:
    """The tests' server, with no template to copy: a run database is migrated (see the template's test)."""
    url = os.environ.get("DATABASE_URL", "")
    if urlsplit(url).scheme not in ("postgres", "postgresql"):
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    return url


def exists(server: str, name: str) -> bool:
    with psycopg.connect(maintenance_url(server)) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def test_a_run_database_is_migrated_and_dropped_after(server):
    with TemporaryDatabase(server, label="test run") as database:
        assert database.name.startswith("flexzone_lab_test_run_")
        with psycopg.connect(database.url) as conn:
            assert conn.execute("SELECT count(*) FROM registry_site").fetchone() == (0,)  # migrated, empty
    assert not exists(server, database.name)


def test_with_a_template_a_run_database_is_its_copy_and_migrate_does_not_run(server, monkeypatch):
    monkeypatch.setenv(TEMPLATE_ENV, ensure_template(server))
    monkeypatch.setenv("FLEXZONE_OPS_QUEUE", "no-such-queue")  # manage.py would stop on it: it must not run
    with TemporaryDatabase(server, label="copied") as database:
        with psycopg.connect(database.url) as conn:
            applied = conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
            assert applied > 0 and conn.execute("SELECT count(*) FROM registry_site").fetchone() == (0,)
    assert not exists(server, database.name)


def test_a_database_name_no_identifier_can_hold_is_refused_naming_it():
    for bad in ('a"b', "", "x" * 64):
        with pytest.raises(ValueError, match="not a PostgreSQL database name"):
            quote_name(bad)
    assert quote_name("flexzone_lab_x") == '"flexzone_lab_x"'


def test_a_database_whose_migration_fails_is_dropped_at_once(server, monkeypatch):
    monkeypatch.setenv("FLEXZONE_OPS_QUEUE", "no-such-queue")  # manage.py stops on the bad setting
    database = TemporaryDatabase(server, label="broken", prefix="flexzone_bench")
    with pytest.raises(RuntimeError, match="manage.py migrate failed"):
        database.create()
    assert database.name.startswith("flexzone_bench_broken_") and not exists(server, database.name)


def test_a_kept_database_outlives_the_run_until_dropped_by_hand(server):
    with TemporaryDatabase(server, label="kept") as database:
        name = database.keep()
    try:
        assert exists(server, name)
    finally:
        with psycopg.connect(maintenance_url(server), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_without_a_usable_server_it_says_what_to_set_in_one_line(server):
    for environ in ({}, {"DATABASE_URL": "sqlite:///x.sqlite3"}):
        with pytest.raises(NoPostgres, match="^needs PostgreSQL: set DATABASE_URL=postgres://"):
            server_url(environ)
    dead = urlsplit(server)._replace(netloc="postgres@127.0.0.1:1").geturl()
    with pytest.raises(NoPostgres, match=r"^cannot use the PostgreSQL server DATABASE_URL names \(127.0.0.1:1\)"):
        server_url({"DATABASE_URL": dead})
    assert server_url({"DATABASE_URL": server}) == server


def test_a_namespace_reaches_a_local_server_over_its_socket_and_keeps_the_urls_options(tmp_path, monkeypatch):
    (tmp_path / ".s.PGSQL.5433").touch()
    monkeypatch.setattr("lab.database.SOCKET_DIRS", (str(tmp_path),))
    url = socket_url("postgres://u:p@127.0.0.1:5433/db?sslmode=disable")
    assert url == f"postgres://u:p@{quote(str(tmp_path), safe='')}:5433/db?sslmode=disable"
    assert socket_url("postgres://u@db.example:5432/db") is None  # another host: no namespace reaches it
    assert maintenance_url("postgres://u@h:5432/db?sslmode=require") == "postgres://u@h:5432/postgres?sslmode=require"

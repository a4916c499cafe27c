"""The tests' own databases (tests/support/database.py): a flush by DELETE ends where Django's TRUNCATE does,
and the run's template is the migrated schema, found again by its name."""

from __future__ import annotations

import os

import pytest
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection

from lab.database import TEMPLATE_ENV
from registry.readiness import database_url, pending_migrations
from tests.support.database import PREFIX, ensure_template, schema_key


def counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        found = {}
        for table in connection.introspection.django_table_names(only_existing=True, include_views=False):
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            found[table] = cursor.fetchone()[0]
        return found


def registry_changes() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM flexzone_registry_changes")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_flush_by_delete_empties_every_table_and_the_change_triggers_see_it(cast):
    filled = {table for table, rows in counts().items() if rows}
    assert {"registry_site", "registry_device", "registry_principal", "registry_principal_sites"} <= filled
    changes = registry_changes()
    statements = connection.ops.sql_flush(no_style(), sorted(filled))
    assert statements[0] == "SET CONSTRAINTS ALL DEFERRED" and all(s.startswith("DELETE FROM") for s in statements[1:])
    call_command("flush", verbosity=0, interactive=False, inhibit_post_migrate=True)
    assert {table for table, rows in counts().items() if rows} == set()
    assert registry_changes() > changes  # the registry's statement triggers fired, as they do on TRUNCATE


def test_a_flush_that_resets_sequences_still_truncates():
    statements = connection.ops.sql_flush(no_style(), ["registry_site"], reset_sequences=True)
    assert statements[0].startswith("TRUNCATE") and "RESTART IDENTITY" in statements[0]


@pytest.mark.django_db
def test_the_test_database_is_a_copy_of_the_runs_template_found_again_by_its_name():
    if TEMPLATE_ENV not in os.environ:
        pytest.skip("no template: the tests do not run on PostgreSQL")
    name = os.environ[TEMPLATE_ENV]
    assert name == PREFIX + schema_key() and connection.settings_dict["TEST"]["TEMPLATE"] == name
    assert ensure_template(database_url(name="postgres")) == name  # made once, then found
    assert pending_migrations() == []  # nobody connects to the template (a copy would fail): its copy tells

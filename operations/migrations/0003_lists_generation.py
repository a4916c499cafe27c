"""The lists' generation (operations/generation.py): a change table and a generation row, and a
statement-level trigger on the links and the journal that records each writing transaction.

The trigger function runs with its owner's rights and a fixed search path, so a role that may write
links and operations need not be granted these tables. Neither table is a model's, so Django's flush
(the tests') never empties them. SQLite has no such triggers.
"""

from django.db import migrations

from operations.postgres_migration import on_postgres

# The tables as this migration made them (migration 0004 changes them; operations/generation.py names
# today's).
CHANGES = "flexzone_lists_changes"
GENERATION = "flexzone_lists_generation"

WATCHED = ("Link", "Operation")


def _statements(apps, schema: str) -> list[str]:
    statements = [
        f"CREATE TABLE {schema}.{CHANGES} (txid bigint PRIMARY KEY)",
        f"""CREATE TABLE {schema}.{GENERATION} (
              id smallint PRIMARY KEY CHECK (id = 1),
              epoch uuid NOT NULL DEFAULT gen_random_uuid(),
              folded bigint NOT NULL DEFAULT 0)""",
        f"INSERT INTO {schema}.{GENERATION} (id) VALUES (1)",
        f"""CREATE FUNCTION {schema}.flexzone_lists_changed() RETURNS trigger
              LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            BEGIN
              INSERT INTO {schema}.{CHANGES} (txid) VALUES (txid_current()) ON CONFLICT DO NOTHING;
              RETURN NULL;
            END $$""",
    ]
    for name in WATCHED:
        table = apps.get_model("operations", name)._meta.db_table
        statements.append(
            f"""CREATE TRIGGER flexzone_lists_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
                ON {schema}.{table} FOR EACH STATEMENT EXECUTE FUNCTION {schema}.flexzone_lists_changed()""")
    return statements


def _drops(apps, schema: str) -> list[str]:
    return [
        *(f"DROP TRIGGER IF EXISTS flexzone_lists_changed ON {schema}.{apps.get_model('operations', name)._meta.db_table}"
          for name in WATCHED),
        f"DROP FUNCTION IF EXISTS {schema}.flexzone_lists_changed()",
        f"DROP TABLE IF EXISTS {schema}.{GENERATION}",
        f"DROP TABLE IF EXISTS {schema}.{CHANGES}",
    ]


class Migration(migrations.Migration):
    dependencies = [("operations", "0002_operation_principal")]

    operations = [migrations.RunPython(on_postgres(_statements), on_postgres(_drops))]

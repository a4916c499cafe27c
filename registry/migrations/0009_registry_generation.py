"""The registry's generation: a number that grows with every committed transaction that changes what the
API's read cache may serve (api/read_cache.py), whoever writes and however (ORM, raw SQL, psql).

Each such transaction leaves one row in flexzone_registry_changes (its transaction id, inserted by a
statement-level trigger on every table the cached endpoints read, ON CONFLICT DO NOTHING for its
later statements). The row becomes visible when, and only when, the transaction commits, and no two
transactions ever insert the same key, so no writer waits on another here: there is no hot row to
lock, and so no lock order to deadlock on. The generation is `folded` + the number of rows; the read
cache folds the rows into `folded` now and then, in one statement, which leaves the sum unchanged.
`epoch` is drawn when the tables are made: a cache can tell these numbers from those of tables made
again (the migration rolled back and reapplied). Neither table is a model's, so Django's flush (the
tests') never empties them. SQLite has no such triggers: there the read cache is off.

The trigger function runs with its owner's rights and a fixed search path, so a role that may write
the registry need not be granted these tables.
"""

from django.db import migrations

TABLES = ("registry_site", "registry_zone", "registry_router", "registry_device", "registry_host",
          "registry_initiator", "registry_principal", "registry_principal_sites", "registry_principal_zones")


def _create(schema: str) -> list[str]:
    statements = [
        f"CREATE TABLE {schema}.flexzone_registry_changes (txid bigint PRIMARY KEY)",
        f"""CREATE TABLE {schema}.flexzone_registry_generation (
              id smallint PRIMARY KEY CHECK (id = 1),
              epoch uuid NOT NULL DEFAULT gen_random_uuid(),
              folded bigint NOT NULL DEFAULT 0)""",
        f"INSERT INTO {schema}.flexzone_registry_generation (id) VALUES (1)",
        f"""CREATE FUNCTION {schema}.flexzone_registry_changed() RETURNS trigger
              LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            BEGIN
              INSERT INTO {schema}.flexzone_registry_changes (txid) VALUES (txid_current()) ON CONFLICT DO NOTHING;
              RETURN NULL;
            END $$""",
    ]
    for table in TABLES:
        statements.append(
            f"""CREATE TRIGGER flexzone_registry_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
                ON {schema}.{table} FOR EACH STATEMENT EXECUTE FUNCTION {schema}.flexzone_registry_changed()""")
    return statements


def _drop(schema: str) -> list[str]:
    return [
        *(f"DROP TRIGGER IF EXISTS flexzone_registry_changed ON {schema}.{table}" for table in TABLES),
        f"DROP FUNCTION IF EXISTS {schema}.flexzone_registry_changed()",
        f"DROP TABLE IF EXISTS {schema}.flexzone_registry_generation",
        f"DROP TABLE IF EXISTS {schema}.flexzone_registry_changes",
    ]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT quote_ident(current_schema())")
            schema = cursor.fetchone()[0]
        for statement in statements(schema):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0008_principal_role_monitor"),
    ]

    operations = [migrations.RunPython(_run(_create), _run(_drop))]

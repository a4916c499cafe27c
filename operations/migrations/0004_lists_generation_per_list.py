"""A generation per list (operations/generation.py): the change rows name the list their transaction
wrote, each list has its own row in the generation table, and the trigger on each table names its list.

Forward, every change row is folded into the links' row first, so the links' generation never reads
lower than it did; the journal's row is new, with an epoch of its own. A change row whose list is not
known counts for every list (generation.UNKNOWN). Backward, both rows and every
change row are folded into the one row of migration 0003, which is then again above anything read.
"""

from django.db import migrations

from operations.generation import CHANGES, GENERATION, UNKNOWN
from operations.postgres_migration import on_postgres

WATCHED = {"Link": 1, "Operation": 2}  # model -> its list's row (generation.LISTS)


def _triggers(apps, schema: str, argument: bool) -> list[str]:
    statements = []
    for name, list_id in WATCHED.items():
        table = apps.get_model("operations", name)._meta.db_table
        statements += [
            f"DROP TRIGGER flexzone_lists_changed ON {schema}.{table}",
            f"""CREATE TRIGGER flexzone_lists_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
                ON {schema}.{table} FOR EACH STATEMENT
                EXECUTE FUNCTION {schema}.flexzone_lists_changed({f"'{list_id}'" if argument else ''})"""]
    return statements


def _forward(apps, schema: str) -> list[str]:
    return [
        f"LOCK TABLE {schema}.{CHANGES}, {schema}.{GENERATION} IN EXCLUSIVE MODE",
        f"""WITH gone AS (DELETE FROM {schema}.{CHANGES} RETURNING 1)
            UPDATE {schema}.{GENERATION} SET folded = folded + (SELECT count(*) FROM gone) WHERE id = 1""",
        f"ALTER TABLE {schema}.{CHANGES} DROP CONSTRAINT {CHANGES}_pkey",
        # The default: a writer whose trigger was already running 0003's function (its INSERT names no list)
        # waits for this lock and then inserts a row that counts for every list (generation.UNKNOWN).
        f"ALTER TABLE {schema}.{CHANGES} ADD COLUMN list smallint NOT NULL DEFAULT {UNKNOWN}",
        f"ALTER TABLE {schema}.{CHANGES} ADD PRIMARY KEY (list, txid)",
        f"ALTER TABLE {schema}.{GENERATION} DROP CONSTRAINT {GENERATION}_id_check",
        f"ALTER TABLE {schema}.{GENERATION} ADD CONSTRAINT {GENERATION}_id_check CHECK (id IN (1, 2))",
        f"INSERT INTO {schema}.{GENERATION} (id) VALUES (2)",
        f"""CREATE OR REPLACE FUNCTION {schema}.flexzone_lists_changed() RETURNS trigger
              LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            BEGIN
              INSERT INTO {schema}.{CHANGES} (list, txid) VALUES (TG_ARGV[0]::smallint, txid_current())
                ON CONFLICT DO NOTHING;
              RETURN NULL;
            END $$""",
        *_triggers(apps, schema, argument=True),
    ]


def _backward(apps, schema: str) -> list[str]:
    return [
        f"LOCK TABLE {schema}.{CHANGES}, {schema}.{GENERATION} IN EXCLUSIVE MODE",
        *_triggers(apps, schema, argument=False),
        f"""CREATE OR REPLACE FUNCTION {schema}.flexzone_lists_changed() RETURNS trigger
              LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            BEGIN
              INSERT INTO {schema}.{CHANGES} (txid) VALUES (txid_current()) ON CONFLICT DO NOTHING;
              RETURN NULL;
            END $$""",
        f"""WITH gone AS (DELETE FROM {schema}.{CHANGES} RETURNING 1),
                 others AS (DELETE FROM {schema}.{GENERATION} WHERE id <> 1 RETURNING folded)
            UPDATE {schema}.{GENERATION} SET folded = folded + (SELECT count(*) FROM gone)
                                                             + (SELECT coalesce(sum(folded), 0) FROM others)
             WHERE id = 1""",
        f"ALTER TABLE {schema}.{GENERATION} DROP CONSTRAINT {GENERATION}_id_check",
        f"ALTER TABLE {schema}.{GENERATION} ADD CONSTRAINT {GENERATION}_id_check CHECK (id = 1)",
        f"ALTER TABLE {schema}.{CHANGES} DROP CONSTRAINT {CHANGES}_pkey",
        f"ALTER TABLE {schema}.{CHANGES} DROP COLUMN list",
        f"ALTER TABLE {schema}.{CHANGES} ADD PRIMARY KEY (txid)",
    ]


class Migration(migrations.Migration):
    dependencies = [("operations", "0003_lists_generation")]

    operations = [migrations.RunPython(on_postgres(_forward), on_postgres(_backward))]

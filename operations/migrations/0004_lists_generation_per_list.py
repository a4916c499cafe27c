"""A generation per list (operations/generation.py): the change rows name the list their transaction
wrote, told by the trigger function from the table it fired on, and each list has its own row in a new
generation table.

Only flexzone's own two tables are locked, and the triggers stay as they are (their function is
replaced), so a writer, which locks its table before the change table, never waits in a cycle with
this. A writer whose trigger was already running 0003's function inserts, once this commits, a row of
no known list (the column's default), which counts for every list. The links' row goes on from 0003's
single generation with its epoch, so it never reads lower; the journal's row is new, with an epoch of
its own. 0003's generation table is dropped: a process still running the code before this one fails
to read it and leaves every list to Django, rather than folding the change rows its old way.

Backward, both rows and every change row are folded into a table of 0003's shape again; stop the
writers first (a trigger running this function when that commits would insert a list no longer there).
"""

from django.db import migrations

from operations.postgres_migration import on_postgres

# As operations/generation.py names them when this migration is made (a migration keeps its own).
CHANGES, GENERATIONS = "flexzone_lists_changes", "flexzone_lists_generations"
LISTS, UNKNOWN = {"links": 1, "operations": 2}, 0
OLD_GENERATION = "flexzone_lists_generation"  # migration 0003's, a single row
WATCHED = {"Link": LISTS["links"], "Operation": LISTS["operations"]}


def _drop_primary_key(schema: str) -> str:
    """The change table's primary key, whatever it is called, dropped (`%%`: the schema editor passes the
    statement with parameters, so a lone percent sign would be read as one)."""
    return f"""DO $$ DECLARE found text; BEGIN
                 SELECT conname INTO STRICT found FROM pg_constraint
                  WHERE conrelid = '{schema}.{CHANGES}'::regclass AND contype = 'p';
                 EXECUTE format('ALTER TABLE {schema}.{CHANGES} DROP CONSTRAINT %%I', found);
               END $$"""


def _function(schema: str, body: str) -> str:
    return f"""CREATE OR REPLACE FUNCTION {schema}.flexzone_lists_changed() RETURNS trigger
                 LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
               BEGIN
                 {body}
                 RETURN NULL;
               END $$"""


def _forward(apps, schema: str) -> list[str]:
    lists = " ".join(f"WHEN '{apps.get_model('operations', name)._meta.db_table}' THEN {list_id}"
                     for name, list_id in WATCHED.items())
    return [
        f"LOCK TABLE {schema}.{CHANGES}, {schema}.{OLD_GENERATION} IN EXCLUSIVE MODE",
        f"""CREATE TABLE {schema}.{GENERATIONS} (
              id smallint PRIMARY KEY CHECK (id IN ({', '.join(str(i) for i in LISTS.values())})),
              epoch uuid NOT NULL DEFAULT gen_random_uuid(),
              folded bigint NOT NULL DEFAULT 0)""",
        f"""INSERT INTO {schema}.{GENERATIONS} (id, epoch, folded)
              SELECT {LISTS['links']}, epoch, folded + (SELECT count(*) FROM {schema}.{CHANGES})
                FROM {schema}.{OLD_GENERATION} WHERE id = 1""",
        f"INSERT INTO {schema}.{GENERATIONS} (id) VALUES ({LISTS['operations']})",
        f"DELETE FROM {schema}.{CHANGES}",
        f"DROP TABLE {schema}.{OLD_GENERATION}",
        _drop_primary_key(schema),
        f"""ALTER TABLE {schema}.{CHANGES} ADD COLUMN list smallint NOT NULL DEFAULT {UNKNOWN}
              CHECK (list IN ({UNKNOWN}, {', '.join(str(i) for i in LISTS.values())}))""",
        f"ALTER TABLE {schema}.{CHANGES} ADD PRIMARY KEY (list, txid)",
        _function(schema, f"""INSERT INTO {schema}.{CHANGES} (list, txid)
                   VALUES (CASE TG_TABLE_NAME {lists} ELSE {UNKNOWN} END, txid_current()) ON CONFLICT DO NOTHING;"""),
    ]


def _backward(apps, schema: str) -> list[str]:
    return [
        f"LOCK TABLE {schema}.{CHANGES}, {schema}.{GENERATIONS} IN EXCLUSIVE MODE",
        f"""CREATE TABLE {schema}.{OLD_GENERATION} (
              id smallint PRIMARY KEY CHECK (id = 1),
              epoch uuid NOT NULL DEFAULT gen_random_uuid(),
              folded bigint NOT NULL DEFAULT 0)""",
        f"""INSERT INTO {schema}.{OLD_GENERATION} (id, epoch, folded)
              SELECT 1, (SELECT epoch FROM {schema}.{GENERATIONS} WHERE id = {LISTS['links']}),
                     sum(folded) + (SELECT count(*) FROM {schema}.{CHANGES}) FROM {schema}.{GENERATIONS}""",
        f"DELETE FROM {schema}.{CHANGES}",
        f"DROP TABLE {schema}.{GENERATIONS}",
        _drop_primary_key(schema),
        f"ALTER TABLE {schema}.{CHANGES} DROP COLUMN list",
        f"ALTER TABLE {schema}.{CHANGES} ADD PRIMARY KEY (txid)",
        _function(schema, f"INSERT INTO {schema}.{CHANGES} (txid) VALUES (txid_current()) ON CONFLICT DO NOTHING;"),
    ]


class Migration(migrations.Migration):
    dependencies = [("operations", "0003_lists_generation")]

    operations = [migrations.RunPython(on_postgres(_forward), on_postgres(_backward))]

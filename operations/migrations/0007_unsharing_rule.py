"""A device stops being shareable only while at most one site holds it (registry.in_use.refuse_unsharing),
in the database too: a row trigger on the registry's devices refuses an update that turns `shareable`
off while `flexzone_holding` (migration 0006) names more than one site holding the device, with the
`in_use` rule's SQLSTATE and the column `shareable`. A connect that takes a grant, and reconcile when
it records a holder from a router, lock the device's row first and read it then, so each is ordered
with the edit: the edit sees the grant, or the grant is taken under the device no longer shareable
(and refused beside another site's). A connect's lock taken again as it ends (operations/journal.py)
checks the other holders in the same statement, but takes no row lock: an edit committing at that
very moment is not ordered with it.
"""

from django.db import migrations

from operations.postgres_migration import on_postgres

SQLSTATE = "23F09"  # registry.in_use.SQLSTATE


def _statements(apps, schema: str) -> list[str]:
    devices = apps.get_model("registry", "Device")._meta.db_table
    statements = [
        f"""CREATE FUNCTION {schema}.flexzone_unsharing_guard() RETURNS trigger
              LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            DECLARE
              held text[] := {schema}.flexzone_holding('device', '{{}}', '{{}}', '{{}}', ARRAY[NEW.id]);
            BEGIN
              IF cardinality(held) > 1 THEN
                RAISE EXCEPTION USING ERRCODE = '{SQLSTATE}', COLUMN = 'shareable',
                  MESSAGE = format('Device %s is held by several sites (%s): it cannot stop being shareable '
                                   'while more than one site holds it. Disconnect all but one first, then '
                                   'change it.', NEW.description, array_to_string(held[1:3], ', ')
                                   || CASE WHEN cardinality(held) > 3
                                           THEN format(' and %s more', cardinality(held) - 3) ELSE '' END);
              END IF;
              RETURN NEW;
            END $$""",
        f"""CREATE TRIGGER flexzone_unsharing BEFORE UPDATE OF shareable ON {schema}.{devices}
              FOR EACH ROW WHEN (OLD.shareable AND NOT NEW.shareable)
              EXECUTE FUNCTION {schema}.flexzone_unsharing_guard()""",
    ]
    return [statement.replace("%", "%%") for statement in statements]  # run with parameters: "%%" is a "%"


def _drops(apps, schema: str) -> list[str]:
    devices = apps.get_model("registry", "Device")._meta.db_table
    return [f"DROP TRIGGER IF EXISTS flexzone_unsharing ON {schema}.{devices}",
            f"DROP FUNCTION IF EXISTS {schema}.flexzone_unsharing_guard()"]


class Migration(migrations.Migration):
    dependencies = [("operations", "0006_in_use_rule")]

    operations = [migrations.RunPython(on_postgres(_statements), on_postgres(_drops))]

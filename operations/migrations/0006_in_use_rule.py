"""The registry's `in_use` rule (registry/in_use.py) in the database itself: a value the routers carry
cannot change, nor a host or initiator a live FCIP link zones be deleted, by any path that writes the
registry's tables, a queryset `update()`, a `save()` without `full_clean()` and raw SQL included.

Row triggers on the registry's tables ask `flexzone_holding` who holds a device through the row being
changed: grants, and links in an active state, of the sites, routers, devices and hosts concerned, as
`operations.holders.holding_through` answers the models' `clean()`. While any does, the statement fails
with SQLSTATE 23F09 (registry.in_use.SQLSTATE), its column the field refused, and the sentence the
models' rule gives. The functions run with their owner's rights and a fixed search path. SQLite (the
demo's database without PostgreSQL) has no such triggers: there the models' rule is the only one.
"""

from django.db import migrations

from operations.postgres_migration import on_postgres

SQLSTATE = "23F09"  # class 23, integrity constraint violation (psycopg: an IntegrityError)
ADVISORY_KEY = 4045_2026_0006  # registry.in_use.ADVISORY_KEY: a submit holds it shared while it plans and locks
ACTIVE = ("requested", "configuring", "up", "removing")  # Link.ACTIVE_STATES when this migration was made
# The values each table's links and grants were made with (the models' LINK_FIELDS / ROUTER_FIELDS),
# as "column=field" (the field the refusal names, when it is not the column's own name). A router added
# to or deleted from a site whose links are live, an initiator added to a host whose are, and a host,
# initiator or device deleted while held are refused too.
GUARDED = {
    "Site": ("site", ("data_ip", "router_port")),
    "Router": ("router", ("site_id=site", "platform", "vsan")),
    "Device": ("device", ("wwn", "zone_id=zone", "owner_site_id=owner_site")),
    "Zone": ("zone", ("zone_id",)),
    "Host": ("host", ("site_id=site",)),
    "Initiator": ("initiator", ("host_id=host", "wwn")),
}


def _tables(apps) -> dict[str, str]:
    tables = {name: apps.get_model("registry", name)._meta.db_table for name in GUARDED}
    tables |= {name: apps.get_model("operations", name)._meta.db_table for name in ("Grant", "Link")}
    return tables


def _statements(apps, schema: str) -> list[str]:
    t = {name: f"{schema}.{table}" for name, table in _tables(apps).items()}
    active = ", ".join(f"'{state}'" for state in ACTIVE)
    statements = [
        # "<site> holds <device>" for each grant and active link made with a value of the subject, in
        # name order (as the models' rule lists them).
        f"""CREATE FUNCTION {schema}.flexzone_holding(subject text, site_ids bigint[], host_ids bigint[],
                                                     router_ids bigint[], device_ids bigint[]) RETURNS text[]
              LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            DECLARE
              wwns text[] := ARRAY(SELECT i.wwn FROM {t['Initiator']} i WHERE i.host_id = ANY(host_ids));
              held text[];
            BEGIN
              IF subject = 'host' THEN
                site_ids := ARRAY(SELECT h.site_id FROM {t['Host']} h WHERE h.id = ANY(host_ids));
              END IF;
              WITH holds (site_id, device_id) AS (
                SELECT g.site_id, g.device_id FROM {t['Grant']} g JOIN {t['Device']} d ON d.id = g.device_id
                 WHERE CASE subject
                   WHEN 'device' THEN g.device_id = ANY(device_ids)
                   WHEN 'host' THEN g.site_id = ANY(site_ids) AND g.initiators ?| wwns
                   ELSE g.site_id = ANY(site_ids) OR d.owner_site_id = ANY(site_ids) END
                UNION
                SELECT l.site_id, l.device_id FROM {t['Link']} l JOIN {t['Device']} d ON d.id = l.device_id
                       JOIN {t['Router']} r ON r.id = l.router_id
                 WHERE l.state IN ({active}) AND CASE subject
                   WHEN 'device' THEN l.device_id = ANY(device_ids)
                   WHEN 'host' THEN l.site_id = ANY(site_ids) AND l.initiators <> '[]'::jsonb
                   WHEN 'router' THEN r.site_id = ANY(site_ids) OR l.router_id = ANY(router_ids)
                   ELSE l.site_id = ANY(site_ids) OR d.owner_site_id = ANY(site_ids) OR r.site_id = ANY(site_ids)
                   END)
              SELECT array_agg(s.name || ' holds ' || d.description
                               ORDER BY s.name COLLATE "C", d.description COLLATE "C") INTO held
                FROM holds JOIN {t['Site']} s ON s.id = holds.site_id JOIN {t['Device']} d ON d.id = holds.device_id;
              RETURN coalesce(held, '{{}}');
            END $$""",
        # Refuse with the models' sentence, naming the column.
        f"""CREATE FUNCTION {schema}.flexzone_refuse_in_use(what text, field text, verb text, held text[])
              RETURNS void LANGUAGE plpgsql AS $$
            DECLARE
              shown text := array_to_string(held[1:3], ', ')
                            || CASE WHEN cardinality(held) > 3 THEN format(' and %s more', cardinality(held) - 3)
                                    ELSE '' END;
            BEGIN
              IF cardinality(held) > 0 THEN
                RAISE EXCEPTION USING ERRCODE = '{SQLSTATE}', COLUMN = field,
                  MESSAGE = format('%s is in use by live links (%s): the routers carry its current value, and a '
                                   'disconnect plans from it. Disconnect those first, then %s it.', what, shown, verb);
              END IF;
            END $$""",
        f"""CREATE FUNCTION {schema}.flexzone_in_use_guard() RETURNS trigger
              LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            DECLARE
              subject text := TG_ARGV[0];
              field text;
              held text[];
              what text;
              verb text := CASE TG_OP WHEN 'DELETE' THEN 'delete' ELSE 'change' END;
              row_was jsonb := CASE TG_OP WHEN 'INSERT' THEN to_jsonb(NEW) ELSE to_jsonb(OLD) END;
              row_now jsonb := CASE TG_OP WHEN 'DELETE' THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END;
              row_id bigint := (row_was ->> 'id')::bigint;
            BEGIN
              IF TG_OP = 'UPDATE' THEN
                SELECT coalesce(nullif(split_part(pair, '=', 2), ''), pair) INTO field
                  FROM unnest(TG_ARGV[1:]) WITH ORDINALITY AS guarded (pair, position)
                 WHERE row_was -> split_part(pair, '=', 1) IS DISTINCT FROM row_now -> split_part(pair, '=', 1)
                 ORDER BY position LIMIT 1;
                IF field IS NULL THEN
                  RETURN NEW;
                END IF;
              END IF;
              IF subject = 'site' THEN
                what := format('Site %s''s value', row_was ->> 'name');
                held := {schema}.flexzone_holding('site', ARRAY[row_id], '{{}}', '{{}}', '{{}}');
              ELSIF subject = 'router' THEN
                what := format(CASE TG_OP WHEN 'DELETE' THEN 'Router %s' ELSE 'Router %s''s value' END,
                               row_was ->> 'name');
                field := CASE TG_OP WHEN 'DELETE' THEN NULL ELSE coalesce(field, 'site') END;
                held := {schema}.flexzone_holding(
                  'router', ARRAY[(row_was ->> 'site_id')::bigint, (row_now ->> 'site_id')::bigint], '{{}}',
                  CASE TG_OP WHEN 'INSERT' THEN '{{}}'::bigint[] ELSE ARRAY[row_id] END, '{{}}');
              ELSIF subject = 'device' THEN
                what := format(CASE TG_OP WHEN 'DELETE' THEN 'Device %s' ELSE 'Device %s''s value' END,
                               row_was ->> 'description');
                held := {schema}.flexzone_holding('device', '{{}}', '{{}}', '{{}}', ARRAY[row_id]);
              ELSIF subject = 'zone' THEN
                what := format('Zone %s''s number', row_was ->> 'zone_id');
                held := {schema}.flexzone_holding('device', '{{}}', '{{}}', '{{}}', ARRAY(
                  SELECT d.id FROM {t['Device']} d WHERE d.zone_id = row_id));
              ELSIF subject = 'host' THEN
                IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT FROM {t['Initiator']} i WHERE i.host_id = row_id) THEN
                  RETURN OLD;  -- a host without initiators zones nothing
                END IF;
                what := format(CASE TG_OP WHEN 'DELETE' THEN 'Host %s' ELSE 'Host %s''s site' END, row_was ->> 'name');
                held := {schema}.flexzone_holding('host', '{{}}', ARRAY[row_id], '{{}}', '{{}}');
              ELSE
                what := format(CASE TG_OP WHEN 'INSERT' THEN 'Host %2$s''s initiators' ELSE 'Initiator %1$s' END,
                               row_was ->> 'wwn', (SELECT h.name FROM {t['Host']} h
                                                   WHERE h.id = (row_now ->> 'host_id')::bigint));
                field := CASE TG_OP WHEN 'INSERT' THEN 'wwn' ELSE field END;
                held := {schema}.flexzone_holding('host', '{{}}', ARRAY[(row_was ->> 'host_id')::bigint,
                                                                       (row_now ->> 'host_id')::bigint],
                                                  '{{}}', '{{}}');
              END IF;
              PERFORM {schema}.flexzone_refuse_in_use(what, coalesce(field, ''), verb, held);
              RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
            END $$""",
    ]
    # Each write to these tables first waits for the submits planning now (they hold the key shared from
    # their plan to their commit, operations/intake.py) and keeps them out until it commits: a submit
    # that planned with a value an edit changes has its grant written before the edit looks for holds.
    # Taken per statement, before any row is locked (a submit may be waiting for one of them).
    statements.append(
        f"""CREATE FUNCTION {schema}.flexzone_in_use_serialize() RETURNS trigger
              LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
            BEGIN
              PERFORM pg_advisory_xact_lock({ADVISORY_KEY});
              RETURN NULL;
            END $$""")
    statements += [  # the trigger's own (it runs as their owner); no one else reads holds through them
        f"REVOKE EXECUTE ON FUNCTION {schema}.flexzone_holding(text, bigint[], bigint[], bigint[], bigint[]) "
        "FROM PUBLIC",
        f"REVOKE EXECUTE ON FUNCTION {schema}.flexzone_refuse_in_use(text, text, text, text[]) FROM PUBLIC",
    ]
    for model, (subject, columns) in GUARDED.items():
        events = "UPDATE" + (" OR INSERT" if model in ("Router", "Initiator") else "") + (
            " OR DELETE" if model != "Site" and model != "Zone" else "")
        arguments = ", ".join(f"'{name}'" for name in (subject, *columns))
        statements.append(
            f"""CREATE TRIGGER flexzone_in_use BEFORE {events} ON {t[model]}
                FOR EACH ROW EXECUTE FUNCTION {schema}.flexzone_in_use_guard({arguments})""")
        # Only a statement that may change a guarded value waits (an UPDATE naming such a column): a
        # router's description, host key or timeouts are written without.
        guarded = ", ".join(pair.split("=")[0] for pair in columns)
        serialized = events.replace("UPDATE", f"UPDATE OF {guarded}", 1)
        statements.append(
            f"""CREATE TRIGGER flexzone_in_use_serialize BEFORE {serialized} ON {t[model]}
                FOR EACH STATEMENT EXECUTE FUNCTION {schema}.flexzone_in_use_serialize()""")
    return [statement.replace("%", "%%") for statement in statements]  # run with parameters: "%%" is a "%"


def _drops(apps, schema: str) -> list[str]:
    tables = _tables(apps)
    return [
        *(f"DROP TRIGGER IF EXISTS flexzone_in_use ON {schema}.{tables[model]}" for model in GUARDED),
        *(f"DROP TRIGGER IF EXISTS flexzone_in_use_serialize ON {schema}.{tables[model]}" for model in GUARDED),
        f"DROP FUNCTION IF EXISTS {schema}.flexzone_in_use_guard()",
        f"DROP FUNCTION IF EXISTS {schema}.flexzone_in_use_serialize()",
        f"DROP FUNCTION IF EXISTS {schema}.flexzone_refuse_in_use(text, text, text, text[])",
        f"DROP FUNCTION IF EXISTS {schema}.flexzone_holding(text, bigint[], bigint[], bigint[], bigint[])",
    ]


class Migration(migrations.Migration):
    dependencies = [("operations", "0005_link_applied_values")]

    operations = [migrations.RunPython(on_postgres(_statements), on_postgres(_drops))]

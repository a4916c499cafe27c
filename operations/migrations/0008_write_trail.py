"""Every write of who may reach what, recorded where every path goes through: the database.

A row trigger on each table of the registry (sites, zones, hosts, initiators, routers, devices), of
access (principals and their sites and zones) and of the engine's holds (grants, links) writes one audit
event per row inserted, updated or deleted, in the writer's transaction, with the row before and
after: through the API, the Django admin, a management command, the engine, the shell, a queryset
`update()` or raw SQL alike. It is attributed to what the writer's connection says it is
(access.writers: the principal of an API or admin request, the OS user and command line of a process)
or, when it says nothing (someone at a `psql` prompt), to the database user. What a connection says of
itself is a claim: every event also names the database user and client address the write came from
(in `path`), which no session can set. An update that changes nothing writes nothing. Not seen: a
`TRUNCATE` (statement-level, no rows), a table owner's `ALTER TABLE ... DISABLE TRIGGER`, and SQLite
(no triggers: a development database only).

Not recorded: the journal (`registry_operation`: each operation is itself an attributed record, chained
whole in the ledger when it ends), the audit trail and the ledger themselves, the router sessions and
zoning locks flexzone holds (bookkeeping of its own logins, no one's access) and the zoning images (a
record of what a switch carried).
"""

from django.db import migrations

from operations.postgres_migration import on_postgres

# (app, model) -> the name an event's action and target give it; and the m2m tables of principals.
RECORDED = {("registry", "Site"): "site", ("registry", "Zone"): "zone", ("registry", "Host"): "host",
            ("registry", "Initiator"): "initiator", ("registry", "Router"): "router",
            ("registry", "Device"): "device", ("access", "Principal"): "principal",
            ("operations", "Grant"): "grant", ("operations", "Link"): "link"}
MANY = {"sites": "principal.sites", "zones": "principal.zones"}


def _tables(apps) -> dict[str, str]:
    tables = {apps.get_model(app, model)._meta.db_table: name for (app, model), name in RECORDED.items()}
    principal = apps.get_model("access", "Principal")
    tables.update({principal._meta.get_field(field).m2m_db_table(): name for field, name in MANY.items()})
    return tables


def _statements(apps, schema: str) -> list[str]:
    events = apps.get_model("access", "AuditEvent")._meta.db_table
    statements = [
        f"""CREATE FUNCTION {schema}.flexzone_record_write() RETURNS trigger
              LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            DECLARE
              before jsonb := CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END;
              after jsonb := CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END;
              actor text := nullif(current_setting('flexzone.actor', true), '');
              via text := nullif(current_setting('flexzone.via', true), '');
            BEGIN
              IF TG_OP = 'UPDATE' AND before = after THEN
                RETURN NULL;
              END IF;
              INSERT INTO {schema}.{events} (principal_name, cert_sha256, cert_subject, action, method, path,
                                              outcome, status_code, detail, target, before, after,
                                              operation_id, remote_addr, created_at)
              VALUES (left(coalesce(actor, 'db:' || session_user), 63), '', '',
                      left(TG_ARGV[0] || '.' || lower(TG_OP), 64), TG_OP,
                      left(coalesce(via, 'database session: ' || coalesce(nullif(current_setting(
                        'application_name', true), ''), 'no application name'))
                           || ' [database user ' || session_user
                           || coalesce(' from ' || host(inet_client_addr()), '') || ']', 500),
                      'allowed', 0, '', left(TG_ARGV[0] || ':' || (coalesce(after, before) ->> 'id'), 200),
                      before, after, (coalesce(after, before) ->> 'operation_id')::bigint, '', clock_timestamp());
              RETURN NULL;
            END $$""",
    ]
    for table, name in _tables(apps).items():
        statements.append(f"""CREATE TRIGGER flexzone_write_trail AFTER INSERT OR UPDATE OR DELETE
                                ON {schema}.{table} FOR EACH ROW
                                EXECUTE FUNCTION {schema}.flexzone_record_write('{name}')""")
    return [statement.replace("%", "%%") for statement in statements]  # run with parameters: "%%" is a "%"


def _drops(apps, schema: str) -> list[str]:
    return [*(f"DROP TRIGGER IF EXISTS flexzone_write_trail ON {schema}.{table}" for table in _tables(apps)),
            f"DROP FUNCTION IF EXISTS {schema}.flexzone_record_write()"]


class Migration(migrations.Migration):
    dependencies = [("operations", "0007_unsharing_rule"), ("access", "0001_initial")]

    operations = [migrations.RunPython(on_postgres(_statements), on_postgres(_drops))]

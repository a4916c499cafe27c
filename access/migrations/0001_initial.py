"""Principals and the audit trail, which were the registry app's, are this app's.

A database made by an earlier release already has their tables (registry_principal, its two scope
tables, registry_auditevent) with their rows: the tables keep their names and data, Django's state
takes the models, and the one change of schema is that an audit event names its operation by id
instead of by a foreign key. A new database gets the tables made here. Either way the registry's
generation triggers (registry 0001) watch the principal tables, as the API's read cache needs.

A database of an earlier release must first be at that release's last migrations (registry
0011_router_session_budget, operations 0010_zoning_locks): the migrations before this app were
squashed into each app's 0001_initial, and this migration refuses to adopt tables otherwise.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.migrations.exceptions import IrreversibleError

import registry.validators

PRINCIPAL_TABLES = ("registry_principal", "registry_principal_sites", "registry_principal_zones")
LAST_OF_EARLIER_RELEASE = (("registry", "0011_router_session_budget"), ("operations", "0010_zoning_locks"))


def _previous_release(connection) -> list[str]:
    """The previous release's last migrations this database lacks ([] when it has them all)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations")
        applied = set(cursor.fetchall())
    return [f"{app} {name}" for app, name in LAST_OF_EARLIER_RELEASE if (app, name) not in applied]


def adopt_or_create(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        tables = set(connection.introspection.table_names(cursor))
    if "registry_principal" not in tables:
        for name in ("Principal", "AuditEvent"):
            schema_editor.create_model(apps.get_model("access", name))
        if connection.vendor == "postgresql":
            for table in PRINCIPAL_TABLES:
                schema_editor.execute(
                    f"CREATE TRIGGER flexzone_registry_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
                    "FOR EACH STATEMENT EXECUTE FUNCTION flexzone_registry_changed()")
        return
    if missing := _previous_release(connection):
        raise RuntimeError(
            f"this database is from a release older than the one before this: migrate it with that release "
            f"first (it lacks {', '.join(missing)})")
    audit = apps.get_model("access", "AuditEvent")
    if connection.vendor == "sqlite":
        # SQLite cannot drop a constraint: the table is made again from the model (its rows copied), as
        # Django does for any change SQLite's ALTER TABLE cannot make.
        schema_editor._remake_table(audit)
    else:
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, audit._meta.db_table)
        for name, info in constraints.items():
            if info["foreign_key"] and info["columns"] == ["operation_id"]:
                schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(audit._meta.db_table)} "
                                      f"DROP CONSTRAINT {schema_editor.quote_name(name)}")
    content_type = apps.get_model("contenttypes", "ContentType")
    moving = content_type.objects.filter(app_label="registry", model__in=("principal", "auditevent"))
    if moving.exists():  # types the new code made before this ran would collide with the moved ones
        content_type.objects.filter(app_label="access", model__in=("principal", "auditevent")).delete()
        moving.update(app_label="access")


def drop_or_leave(apps, schema_editor):
    """Backwards only on a database this migration made: an adopted one's principals and audit trail
    are never dropped."""
    if not _previous_release(schema_editor.connection):
        raise IrreversibleError(
            "access 0001 adopted the previous release's principals and audit trail: it is not reversed")
    for name in ("AuditEvent", "Principal"):
        schema_editor.delete_model(apps.get_model("access", name))


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('registry', '0001_initial'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Principal',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=63, validators=[registry.validators.validate_short_name])),
                        ('role', models.CharField(choices=[('viewer', 'Viewer'), ('operator', 'Operator'), ('admin', 'Admin'), ('monitor', 'Monitor')], default='viewer', max_length=16)),
                        ('cert_sha256', models.CharField(blank=True, help_text='hex SHA-256 of the DER certificate', max_length=64, null=True)),
                        ('cert_issuer', models.CharField(blank=True, help_text='RFC 4514 issuer DN', max_length=500)),
                        ('cert_serial', models.CharField(blank=True, help_text='serial number, lower-case hex', max_length=64)),
                        ('all_sites', models.BooleanField(default=False)),
                        ('all_zones', models.BooleanField(default=False)),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('sites', models.ManyToManyField(blank=True, related_name='principals', to='registry.site')),
                        ('zones', models.ManyToManyField(blank=True, related_name='principals', to='registry.zone')),
                    ],
                    options={
                        'db_table': 'registry_principal',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='AuditEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('principal_name', models.CharField(blank=True, max_length=63)),
                        ('cert_sha256', models.CharField(blank=True, max_length=64)),
                        ('cert_subject', models.CharField(blank=True, max_length=500)),
                        ('action', models.CharField(help_text='e.g. "site.create", "connect", "auth"', max_length=64)),
                        ('method', models.CharField(max_length=8)),
                        ('path', models.CharField(max_length=500)),
                        ('outcome', models.CharField(choices=[('allowed', 'Allowed'), ('denied', 'Denied'), ('failed', 'Failed')], max_length=8)),
                        ('status_code', models.PositiveSmallIntegerField()),
                        ('detail', models.TextField(blank=True)),
                        ('target', models.CharField(blank=True, help_text='the object acted on, e.g. "site:3"', max_length=200)),
                        ('before', models.JSONField(blank=True, null=True)),
                        ('after', models.JSONField(blank=True, null=True)),
                        ('operation_id', models.BigIntegerField(blank=True, db_index=True, help_text='the operation the request started, if any', null=True)),
                        ('remote_addr', models.CharField(blank=True, max_length=64)),
                        ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                        ('principal', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='audit_events', to='access.principal')),
                    ],
                    options={
                        'db_table': 'registry_auditevent',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.AddConstraint(
                    model_name='principal',
                    constraint=models.UniqueConstraint(fields=('name',), name='registry_principal_unique_name', violation_error_message='A principal with this name already exists.'),
                ),
                migrations.AddConstraint(
                    model_name='principal',
                    constraint=models.UniqueConstraint(fields=('cert_sha256',), name='registry_principal_unique_fingerprint', violation_error_message='This certificate is already registered to another principal.'),
                ),
                migrations.AddConstraint(
                    model_name='principal',
                    constraint=models.UniqueConstraint(condition=models.Q(('cert_serial', ''), _negated=True), fields=('cert_issuer', 'cert_serial'), name='registry_principal_unique_issuer_serial', violation_error_message='This issuer and serial are already registered to another principal.'),
                ),
                migrations.AddConstraint(
                    model_name='principal',
                    constraint=models.CheckConstraint(condition=models.Q(('cert_sha256__isnull', False), models.Q(models.Q(('cert_issuer', ''), _negated=True), models.Q(('cert_serial', ''), _negated=True)), _connector='OR'), name='registry_principal_has_identity', violation_error_message='A principal needs a certificate fingerprint, or an issuer and serial.'),
                ),
                migrations.AddConstraint(
                    model_name='principal',
                    constraint=models.CheckConstraint(condition=models.Q(('role__in', ['viewer', 'operator', 'admin', 'monitor'])), name='registry_principal_role_valid', violation_error_message='The role must be viewer, operator, admin or monitor.'),
                ),
                migrations.AddConstraint(
                    model_name='auditevent',
                    constraint=models.CheckConstraint(condition=models.Q(('outcome__in', ['allowed', 'denied', 'failed'])), name='registry_auditevent_outcome_valid', violation_error_message='The outcome must be allowed, denied or failed.'),
                ),
            ],
        ),
        migrations.RunPython(adopt_or_create, drop_or_leave),
    ]

"""The registry's tables, and its generation.

The migrations of earlier releases (0001 to 0011, when this app also held the journal, links, locks,
principals and the audit trail) were squashed into this one: a database those made is already at
this state, and one made now gets the inventory's tables. Principals and the audit trail are the
access app's, the engine's tables the operations app's, so no migration of this app needs another
app's.

The generation: a number that grows with every committed transaction that changes what the
API's read cache may serve (serving/read_cache.py), whoever writes and however (ORM, raw SQL, psql).

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
the registry need not be granted these tables. The principal tables, which the read cache also reads, get their triggers in access 0001.
"""

import django.core.validators
import django.db.models.deletion
import django.db.models.functions.text
import registry.models
import registry.validators
from django.db import migrations, models


TABLES = ("registry_site", "registry_zone", "registry_router", "registry_device", "registry_host",
          "registry_initiator")


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

    initial = True

    dependencies = [
    ]

    operations = [
        migrations.CreateModel(
            name='Site',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(help_text='short name, e.g. primary-site', max_length=63, validators=[registry.validators.validate_short_name])),
                ('display_name', models.CharField(help_text='e.g. GSFC-DICEL1', max_length=100, validators=[registry.validators.validate_description])),
                ('msan_id', models.PositiveIntegerField(help_text='MSAN id, unique positive integer')),
                ('management_ip', models.GenericIPAddressField()),
                ('data_ip', models.GenericIPAddressField(help_text="address remote gateways use for this site's iFCP/FCIP traffic")),
                ('description', models.CharField(blank=True, max_length=200, validators=[registry.validators.validate_description])),
                ('router_port', models.PositiveSmallIntegerField(help_text="the router's FC port facing this site's SAN", validators=[django.core.validators.MaxValueValidator(4095)])),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ['name'],
                'constraints': [models.UniqueConstraint(fields=('name',), name='registry_site_unique_name', violation_error_message='A site with this short name already exists.'), models.UniqueConstraint(django.db.models.functions.text.Lower('display_name'), name='registry_site_unique_display_name', violation_error_message='A site with this display name already exists.'), models.UniqueConstraint(fields=('msan_id',), name='registry_site_unique_msan_id', violation_error_message='Another site already uses this MSAN id; MSAN ids must not overlap.'), models.CheckConstraint(condition=models.Q(('msan_id__gte', 1)), name='registry_site_msan_id_positive', violation_error_message='The MSAN id must be a positive integer.'), models.CheckConstraint(condition=models.Q(('router_port__lte', 4095)), name='registry_site_router_port_range', violation_error_message='The router port must be between 0 and 4095.')],
            },
        ),
        migrations.CreateModel(
            name='Host',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(help_text='e.g. segment-server', max_length=63, validators=[registry.validators.validate_short_name])),
                ('description', models.CharField(blank=True, max_length=200, validators=[registry.validators.validate_description])),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('site', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='hosts', to='registry.site')),
            ],
            options={
                'ordering': ['site', 'name'],
            },
        ),
        migrations.CreateModel(
            name='Zone',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('zone_id', models.PositiveSmallIntegerField(validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(4094)])),
                ('description', models.CharField(blank=True, max_length=200, validators=[registry.validators.validate_description])),
            ],
            options={
                'ordering': ['zone_id'],
                'constraints': [models.UniqueConstraint(fields=('zone_id',), name='registry_zone_unique_zone_id', violation_error_message='A zone with this id already exists.'), models.CheckConstraint(condition=models.Q(('zone_id__gte', 1), ('zone_id__lte', 4094)), name='registry_zone_zone_id_range', violation_error_message='The zone id must be between 1 and 4094.')],
            },
        ),
        migrations.CreateModel(
            name='Device',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('device_id', models.CharField(max_length=63, validators=[registry.validators.validate_short_name])),
                ('description', models.CharField(help_text='e.g. XRAID1', max_length=100, validators=[registry.validators.validate_description])),
                ('wwn', models.CharField(max_length=23, validators=[django.core.validators.RegexValidator('^[0-9a-f]{2}(:[0-9a-f]{2}){7}$', 'A WWN is eight lower-case colon-separated hex bytes, e.g. 21:00:00:e0:8b:0e:95:17.')])),
                ('shareable', models.BooleanField(default=False, help_text='may be locked by several sites at once')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('owner_site', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='devices', to='registry.site')),
                ('zone', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='devices', to='registry.zone')),
            ],
            options={
                'ordering': ['description'],
            },
        ),
        migrations.CreateModel(
            name='Initiator',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('wwn', models.CharField(max_length=23, validators=[django.core.validators.RegexValidator('^[0-9a-f]{2}(:[0-9a-f]{2}){7}$', 'A WWN is eight lower-case colon-separated hex bytes, e.g. 21:00:00:e0:8b:0e:95:17.')])),
                ('description', models.CharField(blank=True, help_text='e.g. HBA slot 2 port 1', max_length=100, validators=[registry.validators.validate_description])),
                ('host', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='initiators', to='registry.host')),
            ],
            options={
                'ordering': ['wwn'],
                'constraints': [models.UniqueConstraint(django.db.models.functions.text.Lower('wwn'), name='registry_initiator_unique_wwn', violation_error_message='An initiator with this WWN already exists (WWNs compare without regard to case).'), models.CheckConstraint(condition=models.Q(('wwn__regex', '^[0-9a-f]{2}(:[0-9a-f]{2}){7}$')), name='registry_initiator_wwn_format', violation_error_message='A WWN is eight lower-case colon-separated hex bytes, e.g. 21:00:00:e0:8b:0e:95:17.')],
            },
        ),
        migrations.CreateModel(
            name='Router',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=63, validators=[registry.validators.validate_short_name])),
                ('platform', models.CharField(choices=[('mcdata_eclipse', 'McData Eclipse (iFCP, telnet)'), ('nishan_ips3000', 'Nishan IPS 3000 (iFCP, telnet)'), ('brocade_fos', 'Brocade FOS (FCIP, SSH)'), ('cisco_mds', 'Cisco MDS (FCIP, SSH)')], max_length=32)),
                ('transport', models.CharField(choices=[('telnet', 'telnet'), ('ssh', 'SSH')], max_length=8)),
                ('host', models.CharField(max_length=253, validators=[registry.validators.validate_host])),
                ('port', models.PositiveIntegerField(validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(65535)])),
                ('username', models.CharField(max_length=64, validators=[registry.validators.validate_short_name])),
                ('secret_ref', models.CharField(help_text='"env:FLEXZONE_ROUTER_SECRET_<NAME>" or "file:NAME" (in the secrets dir)', max_length=200, validators=[registry.validators.validate_secret_ref])),
                ('connect_timeout', models.FloatField(default=30.0, validators=[django.core.validators.MinValueValidator(0.1)])),
                ('command_timeout', models.FloatField(default=30.0, validators=[django.core.validators.MinValueValidator(0.1)])),
                ('vsan', models.PositiveSmallIntegerField(default=1, help_text='Cisco MDS: the VSAN whose active zoneset flexzone edits (1-4093, not 4079)', validators=[registry.models.validate_vsan])),
                ('session_budget', models.PositiveSmallIntegerField(blank=True, help_text="the most CLI sessions flexzone holds to this router at once, over every process on every host (idle pooled ones included); empty: the platform's default, which leaves sessions for people", null=True, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(64)])),
                ('ssh_host_key', models.CharField(blank=True, help_text='SSH: the trusted host key, "<type> <base64>" (manage.py routers trust NAME records it); empty: not trusted yet, and nothing is sent to the router', max_length=2000, validators=[registry.validators.validate_ssh_host_key])),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('site', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='routers', to='registry.site')),
            ],
            options={
                'ordering': ['name'],
                'constraints': [models.UniqueConstraint(fields=('name',), name='registry_router_unique_name', violation_error_message='A router with this name already exists.'), models.UniqueConstraint(fields=('host', 'port'), name='registry_router_unique_endpoint', violation_error_message='Another router is already registered at this host and port.'), models.CheckConstraint(condition=models.Q(('platform__in', ['mcdata_eclipse', 'nishan_ips3000', 'brocade_fos', 'cisco_mds'])), name='registry_router_platform_valid', violation_error_message='Unknown router platform.'), models.CheckConstraint(condition=models.Q(('transport__in', ['telnet', 'ssh'])), name='registry_router_transport_valid', violation_error_message='The transport must be telnet or ssh.'), models.CheckConstraint(condition=models.Q(('port__gte', 1), ('port__lte', 65535)), name='registry_router_port_range', violation_error_message='The management port must be between 1 and 65535.'), models.CheckConstraint(condition=models.Q(('command_timeout__gt', 0), ('connect_timeout__gt', 0)), name='registry_router_timeouts_positive', violation_error_message='Timeouts must be positive.'), models.CheckConstraint(condition=models.Q(('vsan__gte', 1), ('vsan__lte', 4093), models.Q(('vsan', 4079), _negated=True)), name='registry_router_vsan_range', violation_error_message='The VSAN must be between 1 and 4093 and not the reserved 4079.')],
            },
        ),
        migrations.AddConstraint(
            model_name='host',
            constraint=models.UniqueConstraint(fields=('site', 'name'), name='registry_host_unique_name_per_site', violation_error_message='This site already has a host with this name.'),
        ),
        migrations.AddConstraint(
            model_name='device',
            constraint=models.UniqueConstraint(fields=('device_id',), name='registry_device_unique_device_id', violation_error_message='A device with this id already exists.'),
        ),
        migrations.AddConstraint(
            model_name='device',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower('description'), name='registry_device_unique_description', violation_error_message='A device with this description already exists.'),
        ),
        migrations.AddConstraint(
            model_name='device',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower('wwn'), name='registry_device_unique_wwn', violation_error_message='A device with this WWN already exists (WWNs compare without regard to case).'),
        ),
        migrations.AddConstraint(
            model_name='device',
            constraint=models.CheckConstraint(condition=models.Q(('wwn__regex', '^[0-9a-f]{2}(:[0-9a-f]{2}){7}$')), name='registry_device_wwn_format', violation_error_message='A WWN is eight lower-case colon-separated hex bytes, e.g. 21:00:00:e0:8b:0e:95:17.'),
        ),
        migrations.RunPython(_run(_create), _run(_drop)),
    ]

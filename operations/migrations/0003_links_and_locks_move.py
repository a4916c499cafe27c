# Links and device locks are the engine's: the models move from the registry app to this one. Their
# tables already exist with their data (registry_link, registry_devicelock), so this migration changes
# Django's model state only; 0004 then gives the tables and their rules the names of this app.

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import registry.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('operations', '0002_operation_kind_finished_index'),
        ('registry', '0010_links_and_locks_move'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='DeviceLock',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('exclusive', models.BooleanField(default=True)),
                        ('acquired_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('expires_at', models.DateTimeField(blank=True, help_text='lease expiry; the link is removed then', null=True)),
                        ('reason', models.CharField(blank=True, max_length=200, validators=[registry.validators.validate_description])),
                        ('device', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='locks', to='registry.device')),
                        ('operation', models.ForeignKey(blank=True, help_text='the add that took the lock', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='device_locks', to='operations.operation')),
                        ('site', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='device_locks', to='registry.site')),
                    ],
                    options={
                        'db_table': 'registry_devicelock',
                        'ordering': ['device', 'acquired_at'],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('exclusive', True)), fields=('device',), name='registry_devicelock_one_exclusive_holder', violation_error_message='This device is already locked by another site.'), models.UniqueConstraint(fields=('device', 'site'), name='registry_devicelock_unique_holder', violation_error_message='This site already holds this device.')],
                    },
                ),
                migrations.CreateModel(
                    name='Link',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('port', models.PositiveSmallIntegerField(validators=[django.core.validators.MaxValueValidator(4095)])),
                        ('remote_ip', models.GenericIPAddressField(help_text='data-path IP of the gateway at the other end')),
                        ('state', models.CharField(choices=[('requested', 'Requested'), ('configuring', 'Configuring'), ('up', 'Up'), ('removing', 'Removing'), ('down', 'Down'), ('failed', 'Failed')], default='requested', max_length=16)),
                        ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                        ('initiators', models.JSONField(blank=True, default=list, help_text='FCIP: the initiator WWNs this link zones with the device (a snapshot taken at connect); empty for iFCP')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('up_at', models.DateTimeField(blank=True, null=True)),
                        ('down_at', models.DateTimeField(blank=True, null=True)),
                        ('device', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='links', to='registry.device')),
                        ('operation', models.ForeignKey(blank=True, help_text='the last operation that changed this link', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='links', to='operations.operation')),
                        ('router', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='links', to='registry.router')),
                        ('site', models.ForeignKey(help_text='requesting site', on_delete=django.db.models.deletion.PROTECT, related_name='links', to='registry.site')),
                        ('zone', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='links', to='registry.zone')),
                    ],
                    options={
                        'db_table': 'registry_link',
                        'ordering': ['-created_at'],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('state__in', ['requested', 'configuring', 'up', 'removing'])), fields=('router', 'port', 'zone', 'remote_ip'), name='registry_link_one_active_per_endpoint', violation_error_message='An active link with this router, port, zone and remote IP already exists.'), models.CheckConstraint(condition=models.Q(('state__in', ['requested', 'configuring', 'up', 'removing', 'down', 'failed'])), name='registry_link_state_valid', violation_error_message='Unknown link state.')],
                    },
                ),
            ],
        ),
    ]

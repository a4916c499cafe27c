# The journal moved here from the registry app: its table (registry_operation) already exists and keeps
# its name and data, so this migration changes Django's model state only.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('registry', '0004_hosts_initiators_vsan'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Operation',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('add', 'Add'), ('remove', 'Remove'), ('list', 'List'), ('reconcile', 'Reconcile'), ('invoke', 'Invoke'), ('expire', 'Expire')], max_length=16)),
                        ('request', models.JSONField(default=dict, help_text='what was asked, as given')),
                        ('plan', models.JSONField(blank=True, default=dict)),
                        ('result', models.JSONField(blank=True, default=dict)),
                        ('state', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('rolled_back', 'Rolled Back')], default='queued', max_length=16)),
                        ('phase', models.CharField(choices=[('queued', 'Queued'), ('connecting', 'Connecting'), ('on_router', 'On Router'), ('verifying', 'Verifying'), ('done', 'Done')], default='queued', max_length=16)),
                        ('attempts', models.PositiveIntegerField(default=0)),
                        ('error', models.TextField(blank=True)),
                        ('transcript', models.TextField(blank=True, help_text='router session text, secrets masked')),
                        ('registry_ms', models.FloatField(default=0.0)),
                        ('invocation_ms', models.FloatField(default=0.0)),
                        ('router_ms', models.FloatField(default=0.0)),
                        ('total_ms', models.FloatField(default=0.0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('claimed_by', models.CharField(blank=True, help_text='worker running it: host:pid:thread', max_length=120)),
                        ('job_id', models.BigIntegerField(blank=True, help_text="the queue's job id, when queued", null=True)),
                        ('principal', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='operations', to='registry.principal')),
                    ],
                    options={
                        'db_table': 'registry_operation',
                        'ordering': ['-created_at'],
                        'indexes': [models.Index(fields=['state', 'heartbeat_at'], name='registry_operation_state_hb')],
                        'constraints': [models.CheckConstraint(condition=models.Q(('state__in', ['queued', 'running', 'succeeded', 'failed', 'rolled_back'])), name='registry_operation_state_valid', violation_error_message='Unknown operation state.')],
                    },
                ),
            ],
        ),
    ]

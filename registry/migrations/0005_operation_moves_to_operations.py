# The Operation model moved to the operations app (table unchanged): the foreign keys now name
# operations.Operation and the registry forgets the model; Django's state only, no SQL.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('operations', '0001_initial'),
        ('registry', '0004_hosts_initiators_vsan'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='devicelock',
                    name='operation',
                    field=models.ForeignKey(blank=True, help_text='the add that took the lock', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='device_locks', to='operations.operation'),
                ),
                migrations.AlterField(
                    model_name='link',
                    name='operation',
                    field=models.ForeignKey(blank=True, help_text='the last operation that changed this link', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='links', to='operations.operation'),
                ),
                migrations.AlterField(
                    model_name='auditevent',
                    name='operation',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='audit_events', to='operations.operation'),
                ),
                migrations.DeleteModel(
                    name='Operation',
                ),
            ],
        ),
    ]

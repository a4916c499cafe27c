"""The device lock is named for what it is: the grant, the one record of intended access.

Rows are kept: the table is renamed (operations_devicelock -> operations_grant), its two rules are
given the new name, and the reverse relations become `grants`.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("operations", "0006_devicelock_initiators"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="devicelock", name="operations_devicelock_one_exclusive_holder"),
        migrations.RemoveConstraint(model_name="devicelock", name="operations_devicelock_unique_holder"),
        migrations.RenameModel(old_name="DeviceLock", new_name="Grant"),
        migrations.AlterField(
            model_name="grant",
            name="device",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="grants",
                                    to="registry.device"),
        ),
        migrations.AlterField(
            model_name="grant",
            name="site",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="grants",
                                    to="registry.site"),
        ),
        migrations.AlterField(
            model_name="grant",
            name="operation",
            field=models.ForeignKey(blank=True, help_text="the connect that took the grant", null=True,
                                    on_delete=django.db.models.deletion.SET_NULL, related_name="grants",
                                    to="operations.operation"),
        ),
        migrations.AddConstraint(
            model_name="grant",
            constraint=models.UniqueConstraint(
                condition=models.Q(("exclusive", True)), fields=("device",),
                name="operations_grant_one_exclusive_holder",
                violation_error_message="Another site holds an exclusive grant of this device.",
            ),
        ),
        migrations.AddConstraint(
            model_name="grant",
            constraint=models.UniqueConstraint(
                fields=("device", "site"), name="operations_grant_unique_holder",
                violation_error_message="This site already holds a grant of this device.",
            ),
        ),
    ]

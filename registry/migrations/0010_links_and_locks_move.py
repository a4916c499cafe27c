# Links and device locks move to the operations app (operations 0003 takes them, table and data
# unchanged): the registry forgets the models. Django's state only, no SQL.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0009_registry_generation'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='DeviceLock'),
                migrations.DeleteModel(name='Link'),
            ],
        ),
    ]

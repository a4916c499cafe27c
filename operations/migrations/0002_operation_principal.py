"""An operation names the principal that asked for it, now in the access app.

A database of an earlier release already has the column (registry_operation.principal_id) and its
foreign key to the principal table, which keeps its name: Django's state only. A new database gets
the column here.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.migrations.exceptions import IrreversibleError


def add_unless_there(apps, schema_editor):
    operation = apps.get_model("operations", "Operation")
    table = operation._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        columns = {column.name for column in schema_editor.connection.introspection.get_table_description(cursor, table)}
    if "principal_id" not in columns:
        schema_editor.add_field(operation, operation._meta.get_field("principal"))


PREVIOUS_RELEASE = ("operations", "0010_zoning_locks")


def remove(apps, schema_editor):
    """Backwards only where this migration added the column: never an earlier release's."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM django_migrations WHERE app = %s AND name = %s", list(PREVIOUS_RELEASE))
        if cursor.fetchone() is not None:
            raise IrreversibleError("the journal's principal column is the previous release's: it is not removed")
    operation = apps.get_model("operations", "Operation")
    schema_editor.remove_field(operation, operation._meta.get_field("principal"))


class Migration(migrations.Migration):

    dependencies = [
        ('access', '0001_initial'),
        ('operations', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name='operation',
                    name='principal',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='operations', to='access.principal'),
                ),
            ],
        ),
        migrations.RunPython(add_unless_there, remove),
    ]

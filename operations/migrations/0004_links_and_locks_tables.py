# The moved tables take this app's names (operations_link, operations_devicelock; PostgreSQL and SQLite
# rename a table in place, rows kept), and so do their named rules. The admin's content types and
# permissions for them follow the models.

from django.db import migrations, models


def content_types_to(app_label, other):
    def move(apps, schema_editor):
        ContentType = apps.get_model('contenttypes', 'ContentType')
        ContentType.objects.filter(app_label=other, model__in=['link', 'devicelock']).update(app_label=app_label)
    return move


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('operations', '0003_links_and_locks_move'),
    ]

    operations = [
        migrations.AlterModelTable(name='devicelock', table=None),
        migrations.AlterModelTable(name='link', table=None),
        migrations.RemoveConstraint(model_name='devicelock', name='registry_devicelock_one_exclusive_holder'),
        migrations.AddConstraint(model_name='devicelock', constraint=models.UniqueConstraint(condition=models.Q(('exclusive', True)), fields=('device',), name='operations_devicelock_one_exclusive_holder', violation_error_message='This device is already locked by another site.')),
        migrations.RemoveConstraint(model_name='devicelock', name='registry_devicelock_unique_holder'),
        migrations.AddConstraint(model_name='devicelock', constraint=models.UniqueConstraint(fields=('device', 'site'), name='operations_devicelock_unique_holder', violation_error_message='This site already holds this device.')),
        migrations.RemoveConstraint(model_name='link', name='registry_link_one_active_per_endpoint'),
        migrations.AddConstraint(model_name='link', constraint=models.UniqueConstraint(condition=models.Q(('state__in', ['requested', 'configuring', 'up', 'removing'])), fields=('router', 'port', 'zone', 'remote_ip'), name='operations_link_one_active_per_endpoint', violation_error_message='An active link with this router, port, zone and remote IP already exists.')),
        migrations.RemoveConstraint(model_name='link', name='registry_link_state_valid'),
        migrations.AddConstraint(model_name='link', constraint=models.CheckConstraint(condition=models.Q(('state__in', ['requested', 'configuring', 'up', 'removing', 'down', 'failed'])), name='operations_link_state_valid', violation_error_message='Unknown link state.')),
        migrations.RunPython(content_types_to('operations', 'registry'), content_types_to('registry', 'operations')),
    ]

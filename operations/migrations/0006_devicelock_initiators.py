"""Each grant (DeviceLock) records the FCIP initiators it zones. Existing grants take them from their
active links' snapshot, else from the plan of the connect that took them."""

from django.db import migrations, models


def fill_initiators(apps, schema_editor):
    DeviceLock = apps.get_model("operations", "DeviceLock")
    Link = apps.get_model("operations", "Link")
    active = ("requested", "configuring", "up", "removing")
    snapshots: dict[tuple[int, int], set[str]] = {}
    for site_id, device_id, initiators in Link.objects.filter(state__in=active).values_list(
            "site_id", "device_id", "initiators"):
        snapshots.setdefault((site_id, device_id), set()).update(initiators or [])
    for lock in DeviceLock.objects.select_related("operation"):
        wwns = snapshots.get((lock.site_id, lock.device_id))
        if not wwns and lock.operation is not None:
            wwns = {wwn for step in (lock.operation.plan or {}).get("steps", []) for wwn in step.get("initiators", [])}
        if wwns:
            DeviceLock.objects.filter(pk=lock.pk).update(initiators=sorted(wwns))


class Migration(migrations.Migration):

    dependencies = [
        ("operations", "0005_link_pairs"),
    ]

    operations = [
        migrations.AddField(
            model_name="devicelock",
            name="initiators",
            field=models.JSONField(
                blank=True, default=list,
                help_text="FCIP: the initiator WWNs this grant zones with the device (the hosts chosen at connect; a "
                "renewal naming more hosts adds theirs); empty when none of its links is FCIP",
            ),
        ),
        migrations.RunPython(fill_initiators, migrations.RunPython.noop),
    ]

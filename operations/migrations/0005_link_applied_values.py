"""The applied record: a link keeps the zone number, its router's own data-path address and (Cisco MDS)
the VSAN it was configured with, so that a removal takes off what was applied whatever the registry
says later. Existing links are filled from the registry as it is: while a link is live, the values it
was made with could not be edited (the registry's `in_use` rule), so they are still those. And a grant
whose expiry the release before queued gets its lease back (that release cleared it meanwhile)."""

from django.core.validators import MaxValueValidator
from django.db import migrations, models
from django.db.models import OuterRef, Subquery

MDS = "cisco_mds"  # the platform that zones within a VSAN, as named when this migration is made


def fill(apps, schema_editor) -> None:
    Link, Zone, Router = apps.get_model("operations", "Link"), apps.get_model("registry", "Zone"), apps.get_model(
        "registry", "Router")
    Link.objects.update(
        zone_number=Subquery(Zone.objects.filter(pk=OuterRef("zone_id")).values("zone_id")[:1]),
        local_ip=Subquery(Router.objects.filter(pk=OuterRef("router_id")).values("site__data_ip")[:1]),
    )
    Link.objects.filter(router__platform=MDS).update(
        vsan=Subquery(Router.objects.filter(pk=OuterRef("router_id")).values("vsan")[:1]))
    # The release before cleared a grant's expiry when it queued the grant's expiry, and put it back if
    # that expiry failed; this one never edits the grant and has nothing to put back: an expiry still
    # queued or running gives its grant the lease it was queued for, which a failure then leaves due.
    Operation, Grant = apps.get_model("operations", "Operation"), apps.get_model("operations", "Grant")
    for request, plan in Operation.objects.filter(kind="expire", state__in=["queued", "running"]).values_list(
            "request", "plan"):
        ids = (plan or {}).get("ids") or {}
        if (request or {}).get("lease_expired_at") and ids.get("site"):
            Grant.objects.filter(site_id=ids["site"], device_id__in=[pk for pk, _zone in ids["devices"].values()],
                                 expires_at__isnull=True).update(expires_at=request["lease_expired_at"])
    if schema_editor.connection.vendor == "postgresql":
        # The updates queued the deferred foreign-key checks; run them now, or the ALTER below is refused
        # ("pending trigger events").
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [("operations", "0004_lists_generation_per_list"), ("registry", "0001_initial")]

    operations = [
        migrations.AddField("link", "zone_number", models.PositiveSmallIntegerField(null=True)),
        migrations.AddField("link", "local_ip", models.GenericIPAddressField(
            null=True, blank=True, help_text="this router's own data-path IP as configured (FCIP: the tunnel's or "
            "profile's address); null on records older than the applied record")),
        migrations.AddField("link", "vsan", models.PositiveSmallIntegerField(
            null=True, blank=True, help_text="Cisco MDS: the VSAN its zones were written in; null elsewhere")),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AlterField("link", "zone_number", models.PositiveSmallIntegerField(
            validators=[MaxValueValidator(4094)],
            help_text="the zone number configured on the router (copied when applied; a later edit of the zone's "
            "number does not change it)")),
    ]

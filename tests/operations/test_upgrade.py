"""Upgrading a database whose links and locks were the registry's: they become the engine's links and
grants, rows kept."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from operations.models import Grant, Link

BEFORE = [("registry", "0009_registry_generation"), ("operations", "0002_operation_kind_finished_index")]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def previous_schema(transactional_db):
    """The database as the previous release left it; put back to the latest schema afterwards."""
    migrate(BEFORE)
    try:
        yield MigrationExecutor(connection).loader.project_state(BEFORE).apps
    finally:
        migrate(latest())


def test_an_upgrade_keeps_up_links_and_locks_as_grants_and_their_rules(previous_schema):
    old = previous_schema
    site = old.get_model("registry", "Site").objects.create(
        name="old-site", display_name="OLD-SITE", msan_id=901, management_ip="10.0.9.1", data_ip="127.0.9.1",
        router_port=5)
    other = old.get_model("registry", "Site").objects.create(
        name="old-owner", display_name="OLD-OWNER", msan_id=902, management_ip="10.0.9.2", data_ip="127.0.9.2",
        router_port=6)
    zone = old.get_model("registry", "Zone").objects.create(zone_id=901, description="old zone")
    device = old.get_model("registry", "Device").objects.create(
        device_id="old-raid", description="OLD-RAID", wwn="20:00:00:09:01:00:00:01", zone=zone, owner_site=other)
    router = old.get_model("registry", "Router").objects.create(
        site=site, name="old-rtr", platform="mcdata_eclipse", transport="telnet", host="127.0.0.1", port=2301,
        username="admin", secret_ref="file:old-rtr")
    operation = old.get_model("operations", "Operation").objects.create(kind="add", state="succeeded")
    link = old.get_model("registry", "Link").objects.create(
        site=site, device=device, router=router, port=5, zone=zone, remote_ip="127.0.9.2", state="up",
        operation=operation, initiators=["21:00:00:09:01:00:00:aa"])
    lock = old.get_model("registry", "DeviceLock").objects.create(device=device, site=site, exclusive=True,
                                                                  operation=operation, reason="held before")
    # A grant with no link record of its own (it shared another's): its hosts are its connect's plan's.
    second = old.get_model("registry", "Device").objects.create(
        device_id="old-raid2", description="OLD-RAID2", wwn="20:00:00:09:01:00:00:02", zone=zone, owner_site=other)
    planned = old.get_model("operations", "Operation").objects.create(
        kind="add", state="succeeded", plan={"steps": [{"initiators": ["21:00:00:09:01:00:00:bb"]}]})
    shared = old.get_model("registry", "DeviceLock").objects.create(device=second, site=site, exclusive=False,
                                                                    operation=planned, reason="shared")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM registry_link")
        assert cursor.fetchone()[0] == 1
    ContentType.objects.get_or_create(app_label="registry", model="link")

    migrate(latest())

    moved = Link.objects.get(pk=link.pk)
    assert (moved.site.name, moved.device.description, moved.router.name, moved.port, moved.zone.zone_id,
            moved.remote_ip, moved.state, moved.operation_id) == (
        "old-site", "OLD-RAID", "old-rtr", 5, 901, "127.0.9.2", "up", operation.pk)
    held = Grant.objects.get(pk=lock.pk)
    assert (held.site.name, held.device.description, held.exclusive, held.reason) == (
        "old-site", "OLD-RAID", True, "held before")
    # Each grant records the initiators it zones (operations 0006).
    assert held.initiators == ["21:00:00:09:01:00:00:aa"]
    assert Grant.objects.get(pk=shared.pk).initiators == ["21:00:00:09:01:00:00:bb"]
    assert Link._meta.db_table == "operations_link" and Grant._meta.db_table == "operations_grant"
    assert ContentType.objects.filter(app_label="operations", model="link").exists()
    assert not ContentType.objects.filter(app_label="registry", model="link").exists()
    with connection.cursor() as cursor:  # the lock's table is the grant's now (operations 0007)
        cursor.execute("SELECT to_regclass('operations_devicelock'), to_regclass('registry_devicelock')")
        assert cursor.fetchone() == (None, None)
    # The rules moved with the rows, under this app's names.
    with pytest.raises(IntegrityError, match="operations_link_one_active_per_endpoint"), transaction.atomic():
        Link.objects.create(site=moved.site, device=moved.device, router=moved.router, port=5, zone=moved.zone,
                            remote_ip="127.0.9.2", state="configuring")
    with pytest.raises(IntegrityError, match="operations_grant_unique_holder"), transaction.atomic():
        Grant.objects.create(device=held.device, site=held.site, exclusive=False)
    with pytest.raises(IntegrityError, match="operations_grant_one_exclusive_holder"), transaction.atomic():
        Grant.objects.create(device=held.device, site=moved.device.owner_site, exclusive=True)
    # A new grant's row gets its id from the renamed table's sequence, after the kept rows'.
    assert Grant.objects.create(device_id=second.pk, site_id=other.pk, exclusive=False).pk > shared.pk

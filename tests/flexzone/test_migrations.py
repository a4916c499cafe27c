"""The apps' migrations: no app's migrations need an app that needs it back, and a database of the
previous release upgrades with its principals, scopes and audit trail kept."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from access.models import AuditEvent, Principal
from operations import generation
from operations.models import Grant, Link, Operation
from registry.models import Device, Host, Initiator, Router, Site, Zone

PROJECT_APPS = ("registry", "access", "operations")
PREVIOUS_RELEASE = [("registry", "0011_router_session_budget"), ("operations", "0010_zoning_locks")]
THIS_RELEASE = [("access", "0001_initial"), ("operations", "0002_operation_principal"),
                ("operations", "0003_lists_generation"), ("operations", "0004_lists_generation_per_list"),
                ("operations", "0005_link_applied_values"), ("operations", "0006_in_use_rule"),
                ("operations", "0007_unsharing_rule"), ("operations", "0008_write_trail")]
APPLIED = ("zone_number", "local_ip", "vsan")  # operations 0005's columns
IN_USE_GUARDED = (Site, Router, Device, Zone, Host, Initiator)  # operations 0006's triggers
# operations 0008's triggers
WRITE_TRAIL = [model._meta.db_table for model in (*IN_USE_GUARDED, Principal, Grant, Link)] + [
    Principal._meta.get_field(field).m2m_db_table() for field in ("sites", "zones")]


def app_edges(graph) -> set[tuple[str, str]]:
    """(app, app it needs) for every migration of a project app that depends on another project app's."""
    return {(child[0], parent[0]) for child in graph.nodes for parent in graph.node_map[child].parents
            if child[0] != parent[0] and child[0] in PROJECT_APPS and parent[0] in PROJECT_APPS}


def app_cycle(edges: set[tuple[str, str]]) -> list[str]:
    """A cycle among the apps, as the path that closes it, or [] when there is none."""
    needs: dict[str, set[str]] = {}
    for app, other in edges:
        needs.setdefault(app, set()).add(other)
    state: dict[str, str] = {}

    def visit(app: str, path: list[str]) -> list[str]:
        if state.get(app) == "open":
            return [*path[path.index(app):], app]
        if state.get(app) == "done":
            return []
        state[app] = "open"
        for other in sorted(needs.get(app, ())):
            if found := visit(other, [*path, app]):
                return found
        state[app] = "done"
        return []

    for app in sorted(needs):
        if found := visit(app, []):
            return found
    return []


def test_no_app_needs_an_app_that_needs_it_back():
    edges = app_edges(MigrationLoader(None, ignore_no_migrations=True).graph)
    assert app_cycle(edges) == []
    # The layers as the README draws them: access over the registry, the engine over both.
    assert edges == {("access", "registry"), ("operations", "registry"), ("operations", "access")}


def test_the_cycle_check_finds_a_planted_cycle():
    assert app_cycle({("registry", "operations"), ("operations", "access"), ("access", "registry")}) == [
        "access", "registry", "operations", "access"]
    assert app_cycle({("operations", "registry"), ("access", "registry")}) == []


def _as_previous_release_left_it() -> None:
    """What the release before this one left in a database: the same tables, its migrations recorded
    instead of this release's, the audit trail's foreign key to the journal, the content types under
    the registry, no lists' generation (operations 0003), no `in_use` triggers (0006, 0007) and no write
    trail (0008)."""
    with connection.cursor() as cursor:
        for model in IN_USE_GUARDED:
            cursor.execute(f"DROP TRIGGER flexzone_in_use ON {model._meta.db_table}")
            cursor.execute(f"DROP TRIGGER flexzone_in_use_serialize ON {model._meta.db_table}")
        for table in WRITE_TRAIL:
            cursor.execute(f"DROP TRIGGER flexzone_write_trail ON {table}")
        cursor.execute("DROP FUNCTION flexzone_record_write()")
        cursor.execute(f"DROP TRIGGER flexzone_unsharing ON {Device._meta.db_table}")
        cursor.execute("DROP FUNCTION flexzone_unsharing_guard()")
        cursor.execute("DROP FUNCTION flexzone_in_use_guard(), flexzone_in_use_serialize(), "
                       "flexzone_refuse_in_use(text, text, text, text[]), "
                       "flexzone_holding(text, bigint[], bigint[], bigint[], bigint[])")
        for model in (Link, Operation):
            cursor.execute(f"DROP TRIGGER flexzone_lists_changed ON {model._meta.db_table}")
        cursor.execute("DROP FUNCTION flexzone_lists_changed()")
        cursor.execute(f"DROP TABLE {generation.GENERATIONS}, {generation.CHANGES}")
        cursor.execute(f"ALTER TABLE {Link._meta.db_table} " + ", ".join(f"DROP COLUMN {name}" for name in APPLIED))
        for app, name in THIS_RELEASE:
            cursor.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s", [app, name])
        for app, name in PREVIOUS_RELEASE:
            cursor.execute("INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, now())", [app, name])
        cursor.execute(f"ALTER TABLE {AuditEvent._meta.db_table} ADD CONSTRAINT previous_release_operation_fk "
                       f"FOREIGN KEY (operation_id) REFERENCES {Operation._meta.db_table} (id) DEFERRABLE INITIALLY "
                       "DEFERRED")
    ContentType.objects.filter(app_label="access").update(app_label="registry")


def _migrate() -> None:
    executor = MigrationExecutor(connection)
    executor.loader.check_consistent_history(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _audit_foreign_keys() -> list[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, AuditEvent._meta.db_table)
    return sorted(name for name, info in constraints.items() if info["foreign_key"])


@pytest.fixture
def previous_release(transactional_db):
    ContentType.objects.get_for_models(Principal, AuditEvent)
    yield _as_previous_release_left_it
    with connection.cursor() as cursor:
        for app, name in PREVIOUS_RELEASE:
            cursor.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s", [app, name])
        cursor.execute(f"ALTER TABLE {AuditEvent._meta.db_table} "
                       "DROP CONSTRAINT IF EXISTS previous_release_operation_fk")


def test_an_upgrade_keeps_principals_their_scopes_and_the_audit_trail(previous_release):
    site = Site.objects.create(name="up-site", display_name="UP-SITE", msan_id=911, management_ip="10.0.9.11",
                               data_ip="127.0.9.11", router_port=5)
    alice = Principal.objects.create(name="alice", role="operator", cert_sha256="a" * 64)
    alice.sites.set([site])
    operation = Operation.objects.create(kind="list", principal=alice)
    event = AuditEvent.objects.create(principal=alice, principal_name="alice", action="connect", method="POST",
                                      path="/api/links/", outcome="allowed", status_code=202,
                                      operation_id=operation.pk)
    previous_release()
    assert len(_audit_foreign_keys()) == 2  # its principal, and the journal's row

    _migrate()

    kept = Principal.objects.get(pk=alice.pk)
    assert (kept.name, kept.role, [s.name for s in kept.sites.all()]) == ("alice", "operator", ["up-site"])
    assert Operation.objects.get(pk=operation.pk).principal_id == alice.pk
    logged = AuditEvent.objects.get(pk=event.pk)
    assert (logged.principal_id, logged.operation_id, logged.action) == (alice.pk, operation.pk, "connect")
    # The audit trail names its operation by id: the journal's rows can go without touching it.
    assert len(_audit_foreign_keys()) == 1
    assert set(ContentType.objects.filter(model__in=("principal", "auditevent")).values_list("app_label", flat=True)
               ) == {"access"}
    recorded = MigrationLoader(connection).applied_migrations
    assert all(key in recorded for key in THIS_RELEASE)


def test_a_database_older_than_the_previous_release_is_refused_not_half_adopted(previous_release):
    previous_release()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = 'operations' AND name = '0010_zoning_locks'")
    with pytest.raises(RuntimeError, match="operations 0010_zoning_locks"):
        _migrate()
    assert len(_audit_foreign_keys()) == 2  # nothing was changed
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO django_migrations (app, name, applied) VALUES ('operations', '0010_zoning_locks', "
                       "now())")
    _migrate()
    assert len(_audit_foreign_keys()) == 1


def _statement_on(model) -> None:
    """A write that changes no row: the statement-level trigger records its transaction all the same."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {model._meta.db_table} SET id = id WHERE FALSE")


def _generations() -> dict[int, tuple[str, int]]:
    """Each row of the generation table: (epoch, folded + its change rows), as the list path reads it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = %s AND column_name = "
                       "'list'", [generation.CHANGES])
        per_list = cursor.fetchone()[0] == 1
        mine = f"WHERE c.list IN ({generation.UNKNOWN}, g.id)" if per_list else ""
        table = generation.GENERATIONS if per_list else "flexzone_lists_generation"  # 0003's
        cursor.execute(f"SELECT g.id, g.epoch::text, g.folded + (SELECT count(*) FROM {generation.CHANGES} AS c "
                       f"{mine}) FROM {table} AS g ORDER BY g.id")
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall()}


def _migrate_operations_to(name: str) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("operations", name)])


@pytest.mark.django_db(transaction=True)
def test_a_generation_per_list_comes_and_goes_and_no_generation_reads_lower():
    links, operations = generation.LISTS["links"], generation.LISTS["operations"]
    try:
        _migrate_operations_to("0003_lists_generation")
        _statement_on(Operation)
        _statement_on(Link)
        (one, single), = _generations().items()
        assert one == links

        _migrate_operations_to("0004_lists_generation_per_list")
        read = _generations()
        assert read[links][0] == single[0] and read[links][1] >= single[1]  # the links' row goes on from it
        assert read[operations][0] != single[0]  # a new row, with an epoch of its own
        _statement_on(Operation)
        after = _generations()
        assert (after[links], after[operations][1]) == (read[links], read[operations][1] + 1)
        _statement_on(Link)
        assert _generations() == {links: (read[links][0], read[links][1] + 1), operations: after[operations]}
        with connection.cursor() as cursor:  # as a writer still running 0003's function leaves it
            cursor.execute(f"INSERT INTO {generation.CHANGES} (txid) VALUES (txid_current())")
        counted = {links: (read[links][0], read[links][1] + 2), operations: (after[operations][0],
                                                                             after[operations][1] + 1)}
        assert _generations() == counted
        _fold()
        assert _generations() == counted

        highest = max(count for _epoch, count in _generations().values())
        _migrate_operations_to("0003_lists_generation")
        (one, back), = _generations().items()
        assert back[0] == single[0] and back[1] >= highest
        _statement_on(Operation)
        assert _generations()[one][1] == back[1] + 1
    finally:
        _migrate()


def _fold() -> None:
    with connection.cursor() as cursor:
        cursor.execute(generation.FOLD)


def _session() -> psycopg.Connection:
    """A connection of its own to the test database (a writer beside the migration)."""
    given = connection.settings_dict
    return psycopg.connect(dbname=given["NAME"], user=given["USER"] or None, host=given["HOST"] or None,
                           port=given["PORT"] or None, password=given["PASSWORD"] or None)


def _waiting_on_locks(count: int) -> None:
    deadline = time.monotonic() + 20
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock'")
            if cursor.fetchone()[0] >= count:
                return
            time.sleep(0.02)
    raise AssertionError(f"{count} sessions never waited on a lock")


def _in_thread(work) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


@pytest.mark.django_db(transaction=True)
def test_the_migration_waits_for_writers_in_no_cycle_and_counts_a_write_caught_in_it():
    """A writer holds a write to the journal open: the migration waits for it. A second writer, of links,
    whose trigger runs 0003's function meanwhile, waits behind the migration. When the first commits,
    all three go through (no deadlock: the migration locks only flexzone's own two tables), and the
    second's change, of no known list, counts for both lists."""
    first = second = None
    try:
        _migrate_operations_to("0003_lists_generation")
        (_one, before), = _generations().items()
        first = _session()
        first.execute(f"UPDATE {Operation._meta.db_table} SET id = id WHERE FALSE")  # open, its change row in
        migrating, migration_errors = _in_thread(lambda: _migrate_operations_to("0004_lists_generation_per_list"))
        _waiting_on_locks(1)
        second = _session()
        second.autocommit = True
        writing, writer_errors = _in_thread(
            lambda: second.execute(f"UPDATE {Link._meta.db_table} SET id = id WHERE FALSE"))
        _waiting_on_locks(2)
        first.commit()
        for thread in (migrating, writing):
            thread.join(timeout=30)
            assert not thread.is_alive()
        assert migration_errors == writer_errors == []
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT list FROM {generation.CHANGES}")
            assert cursor.fetchall() == [(generation.UNKNOWN,)]
        links, operations = generation.LISTS["links"], generation.LISTS["operations"]
        read = _generations()
        _fold()
        folded = _generations()
        assert folded == read
        # The first write (folded into the links' row), the caught one in both lists, and nothing else.
        assert (folded[links], folded[operations][1]) == ((before[0], before[1] + 2), 1)
    finally:
        for session in (first, second):
            if session is not None:
                session.close()
        _migrate()


@pytest.mark.django_db(transaction=True)
def test_links_made_before_the_applied_record_take_their_values_from_the_registry():
    """Operations 0005: a link a release before it made gets the zone number, own address and (MDS) VSAN
    it was configured with, which the registry still holds (they could not change under a live link);
    a grant whose expiry that release queued (clearing the grant's expiry) gets its lease back."""
    site = Site.objects.create(name="a-site", display_name="A", msan_id=921, management_ip="10.0.9.21",
                               data_ip="127.0.9.21", router_port=5)
    other = Site.objects.create(name="b-site", display_name="B", msan_id=922, management_ip="10.0.9.22",
                                data_ip="127.0.9.22", router_port=6)
    zone = Zone.objects.create(zone_id=17)
    device = Device.objects.create(device_id="d1", description="D1", wwn="20:00:00:00:00:00:09:21", zone=zone,
                                   owner_site=other)
    routers = [Router.objects.create(site=site, name="a-rtr", platform="cisco_mds", transport="ssh", host="127.0.9.21",
                                     port=22, username="admin", secret_ref="file:a", vsan=7),
               Router.objects.create(site=other, name="b-rtr", platform="brocade_fos", transport="ssh",
                                     host="127.0.9.22", port=22, username="admin", secret_ref="file:b")]
    try:
        _migrate_operations_to("0004_lists_generation_per_list")
        old = MigrationExecutor(connection).loader.project_state(("operations", "0004_lists_generation_per_list")).apps
        remotes = ["127.0.9.22", "127.0.9.21"]
        made = [old.get_model("operations", "Link").objects.create(
            site_id=site.pk, device_id=device.pk, router_id=router.pk, port=router.site.router_port, zone_id=zone.pk,
            remote_ip=remote, state="up").pk for router, remote in zip(routers, remotes, strict=True)]
        # The release before cleared the grant's expiry as it queued the expiry, which is still queued.
        grant = old.get_model("operations", "Grant").objects.create(site_id=site.pk, device_id=device.pk)
        old.get_model("operations", "Operation").objects.create(
            kind="expire", state="queued", request={"lease_expired_at": "2026-01-02T03:04:05+00:00"},
            plan={"ids": {"site": site.pk, "devices": {"D1": [device.pk, zone.pk]}}})
        _migrate()
        assert Grant.objects.get(pk=grant.pk).expires_at.isoformat() == "2026-01-02T03:04:05+00:00"
        assert [(link.zone_number, link.local_ip, link.vsan) for link in Link.objects.filter(pk__in=made)
                .order_by("pk")] == [(17, "127.0.9.21", 7), (17, "127.0.9.22", None)]
        Grant.objects.filter(pk=grant.pk).delete()
        Link.objects.filter(pk__in=made).update(state="down")  # else 0006's rule refuses the renumbering
        Zone.objects.filter(pk=zone.pk).update(zone_id=18)
        assert Link.objects.get(pk=made[0]).key == (5, 17, "127.0.9.22")  # applied: it does not follow
    finally:
        _migrate()

"""One place records every write (issue 46, item 2): the database's write trail (operations migration
0008) leaves an attributed audit event, with the row before and after, for every insert, update and
delete of who may reach what, whatever path made it: the Django admin, the API, a management command
run as a process of its own, the engine, a queryset `update()`, raw SQL from a session that says
nothing of itself. Every model of the project's apps is recorded, or named below with why it is not.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.apps import apps
from django.db import connection
from django.db.models import ManyToManyField

from access.models import AuditEvent, Principal
from operations import execute, submit
from registry.models import Host, Initiator, Site
from registry.readiness import database_url
from tests.support.admin_forms import admin_change, admin_client, admin_delete

ROOT = Path(__file__).resolve().parents[2]
TRAIL = importlib.import_module("operations.migrations.0008_write_trail")
NOT_RECORDED = {
    "Operation": "the journal: each operation is itself an attributed record, chained whole in the ledger",
    "AuditEvent": "the trail itself", "LedgerEntry": "the ledger", "LedgerSignature": "the ledger",
    "RouterSession": "flexzone's own logins, no one's access", "ZoningLock": "flexzone's own zoning locks",
    "ZoningImage": "a record of what a switch carried",
}


def _events(action: str, **match) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action, **match).order_by("pk"))


def test_every_model_is_recorded_or_named_with_why_not(db):
    recorded = {model for (_app, model) in TRAIL.RECORDED}
    models = [model for app in ("registry", "access", "operations") for model in apps.get_app_config(app).get_models()]
    assert {model.__name__ for model in models} == recorded | set(NOT_RECORDED)
    tables = [model._meta.db_table for model in models if model.__name__ in recorded] + [
        field.m2m_db_table() for model in models for field in model._meta.many_to_many
        if isinstance(field, ManyToManyField)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                       "WHERE t.tgname = 'flexzone_write_trail'")
        triggered = {name for (name,) in cursor.fetchall()}
    assert set(tables) == triggered


def test_the_admin_s_writes_are_recorded_with_its_principal(demo):
    """Issue 46, defect 5: deleting an initiator and promoting a viewer to admin through the Django admin
    wrote no audit event."""
    initiator = Initiator.objects.filter(host__site__name="primary-site").first()
    viewer = Principal.objects.create(name="vic", role="viewer", cert_sha256="1" * 64)
    with admin_client() as client:
        admin_delete(client, f"/admin/registry/initiator/{initiator.pk}/delete/")
        promoted = admin_change(client, f"/admin/access/principal/{viewer.pk}/change/", {"role": "admin"})
        assert promoted.status_code == 302, promoted.content[:2000]
    assert not Initiator.objects.filter(pk=initiator.pk).exists()
    [deleted] = _events("initiator.delete", target=f"initiator:{initiator.pk}")
    assert (deleted.principal_name, deleted.before["wwn"], deleted.after) == ("model-admin", initiator.wwn, None)
    assert deleted.path.startswith(f"admin POST /admin/registry/initiator/{initiator.pk}/delete/ [database user ")
    [promoted] = _events("principal.update", target=f"principal:{viewer.pk}")
    assert (promoted.before["role"], promoted.after["role"], promoted.principal_name) == ("viewer", "admin",
                                                                                          "model-admin")


def _manage(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    answer = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "DATABASE_URL": database_url(), **(env or {})})
    assert answer.returncode == 0, answer.stderr
    return answer


def test_management_commands_writes_are_recorded_with_their_command_line(transactional_db, tmp_path):
    """Issue 46, defect 5: `ca issue-client mallory --role admin --all-sites` (and `ca revoke`) wrote no
    audit event. Each runs as the process an admin would start."""
    _manage("loaddemo")
    _manage("ca", "--dir", str(tmp_path), "init")
    _manage("ca", "--dir", str(tmp_path), "issue-client", "mallory", "--role", "admin", "--all-sites")
    mallory = Principal.objects.get(name="mallory")
    [made] = _events("principal.insert", target=f"principal:{mallory.pk}")
    assert made.after["role"] == "admin" and made.principal_name.startswith("os:")
    assert made.path.startswith("command: manage.py ca --dir") and "issue-client mallory --role admin" in made.path
    _manage("ca", "--dir", str(tmp_path), "revoke", "mallory")
    [revoked] = [event for event in _events("principal.update", target=f"principal:{mallory.pk}")
                 if event.after["revoked_at"]]
    assert revoked.before["revoked_at"] is None and "revoke mallory" in revoked.path
    assert _events("site.insert", path__contains="loaddemo")  # the demo's registry, by its command


def test_api_writes_and_a_session_that_names_no_one_are_recorded(call, cast):
    site = Site.objects.get(name="remote-site")
    assert call("root", "PATCH", f"/api/sites/{site.pk}/", json={"display_name": "REMOTE"}).status_code == 200
    [edit] = _events("site.update", target=f"site:{site.pk}")
    assert (edit.principal_name, edit.before["display_name"], edit.after["display_name"]) == ("root", site.display_name,
                                                                                             "REMOTE")
    assert edit.path.startswith(f"api PATCH /api/sites/{site.pk}/ [database user ")
    # Someone with the database's password, at a prompt: named by its database user.
    with psycopg.connect(database_url().replace("postgres://", "postgresql://"), autocommit=True) as other:
        other.execute(f"UPDATE {Site._meta.db_table} SET display_name = 'BY-HAND' WHERE id = %s", [site.pk])
    by_hand = _events("site.update", target=f"site:{site.pk}")[-1]
    assert by_hand.after["display_name"] == "BY-HAND" and by_hand.principal_name.startswith("db:")
    # A queryset update (the shell, a bulk edit) skips the models: recorded all the same, as this process.
    hosts = Host.objects.filter(site=site).update(description="bulk")
    bulk = _events("host.update")
    assert len(bulk) == hosts and all(event.principal_name.startswith("os:") and event.after["description"] == "bulk"
                                      and event.path.startswith("command: ") for event in bulk)
    # An update that changes nothing writes nothing.
    count = AuditEvent.objects.count()
    Site.objects.filter(pk=site.pk).update(display_name="BY-HAND")
    assert AuditEvent.objects.count() == count


@pytest.mark.django_db
def test_the_engine_s_writes_are_recorded_with_their_operation(ops_lab):
    op = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert op.state == "succeeded"
    made = _events("link.insert", operation_id=op.pk)
    assert len(made) == 2 and all(event.after["operation_id"] == op.pk for event in made)
    assert _events("grant.insert", operation_id=op.pk)
    assert {event.after["state"] for event in _events("link.update", operation_id=op.pk)} >= {"up"}

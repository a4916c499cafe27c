"""Readiness (/api/health/) and liveness (/api/health/live/): what a load balancer and a supervisor ask."""

from __future__ import annotations

import pytest
from django.db import connection

from api import health


def test_ready_and_live_answer_without_a_principal(call, cast):
    ready = call("eve", "GET", "/api/health/")  # eve's certificate is trusted, but no principal's
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "database": "ok", "migrations": "ok", "crl": "ok", "ledger": "ok"}
    live = call("eve", "GET", "/api/health/live/")
    assert live.status_code == 200 and live.json() == {"status": "ok"}


@pytest.mark.django_db
def test_a_database_missing_a_migration_is_not_ready_but_the_process_is_live(client, monkeypatch):
    # As after restoring an older dump under running API processes: the code expects a migration the
    # database lacks. The delete is rolled back with the test's transaction.
    monkeypatch.setattr(health, "_migrated_at", float("-inf"))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = 'operations' AND name = "
                       "(SELECT max(name) FROM django_migrations WHERE app = 'operations') RETURNING name")
        (removed,) = cursor.fetchone()
    ready = client.get("/api/health/", secure=True)
    assert ready.status_code == 503
    body = ready.json()
    assert body["status"] == "failing" and body["database"] == "ok"
    assert body["migrations"] == f"1 pending, first operations.{removed}: run manage.py migrate"
    live = client.get("/api/health/live/", secure=True)
    assert live.status_code == 200 and live.json() == {"status": "ok"}


@pytest.mark.django_db
def test_a_ledger_that_lost_its_witnessed_head_is_said_but_still_served(client, settings, tmp_path):
    """Issue 46, item 1: the alert is raised in the health check (and a metric), not by refusing service."""
    from access.models import AuditEvent
    from operations import ledger
    from operations.models import LedgerEntry

    settings.FLEXZONE_LEDGER_KEY = tmp_path / "ledger-ed25519.pem"
    AuditEvent.objects.create(action="site.update", method="PATCH", path="/api/sites/1/", outcome="allowed",
                              status_code=200)
    assert ledger.seal(sign=True).signed is not None
    whole = client.get("/api/health/", secure=True)  # (no CRL here: not ready for that reason alone)
    assert whole.json()["ledger"] == "ok"
    LedgerEntry.objects.all().delete()
    ready = client.get("/api/health/", secure=True)
    assert (ready.status_code, ready.json()["status"]) == (whole.status_code, whole.json()["status"])
    assert ready.json()["ledger"].startswith("entry 1 (witnessed at ") and "is gone" in ready.json()["ledger"]

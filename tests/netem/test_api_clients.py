"""The registry/API half of `clients`: the real REST service over mutual TLS, measured at 1, 2 and 4 clients."""

from __future__ import annotations

from dataclasses import replace

import pytest

from netem.experiments import api_clients


@pytest.fixture
def server_database(transactional_db, monkeypatch, settings, tmp_path):
    """Point the throw-away server's subprocess at pytest-django's test database (what the test process sees),
    and keep the demo registry's router secrets in tmp_path."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")
    db = connection.settings_dict
    auth = f"{db['USER']}@" if db.get("USER") else ""
    monkeypatch.setenv("DATABASE_URL", f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/"
                                       f"{db['NAME']}")
    monkeypatch.setenv("FLEXZONE_DB_CONN_MAX_AGE", "0")
    monkeypatch.setenv("FLEXZONE_API_WORKERS", "2")
    settings.FLEXZONE_SECRETS_DIR = str(tmp_path / "secrets")


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_api_operation_rate_is_measured_for_each_client_count_without_errors(server_database, tmp_path):
    plan = replace(api_clients.QUICK, seconds=0.6, warmup_s=0.2)
    result = api_clients.run(plan, tmp_path)
    overall = [r for r in result.rows if r["operation"] == "all"]
    assert [r["clients"] for r in overall] == [1, 2, 4]
    assert result.errors == 0, result.rows
    assert all(r["requests_per_s"] > 0 for r in result.rows), result.rows
    assert all(r["p95_ms"] >= r["p50_ms"] > 0 for r in overall)
    for name in ("api_clients.csv", "api_clients.json", "api_clients.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert "| clients | requests/s |" in result.table

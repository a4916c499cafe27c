"""Every answer under /api/ is JSON of the one error shape, including the refusals Django makes before
DRF sees the request (a body over the size limit, a path no route matches), through the real mTLS
server. The console's pages stay HTML."""

from __future__ import annotations

import json

from django.conf import settings

from access.models import AuditEvent
from operations.models import Operation


def test_a_32_mb_post_is_a_json_413_naming_the_limit_and_nothing_is_submitted(call, cast):
    body = json.dumps({"site": "primary-site", "device_description": "XRAID2", "padding": "x" * (32 << 20)})
    response = call("alice", "POST", "/api/connect/", data=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413, response.text[:200]
    assert response.headers["Content-Type"].startswith("application/json")
    error = response.json()
    assert error["code"] == "request_too_large"
    assert f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes" in error["detail"]
    assert error["errors"] == [{"field": "body", "rule": "max_size", "message": error["detail"]}]
    assert not Operation.objects.exists()
    event = AuditEvent.objects.get(path="/api/connect/")  # refused requests are audited like any other
    assert (event.outcome, event.status_code, event.principal_name) == ("failed", 413, "alice")


def test_a_path_no_route_matches_is_a_json_404(call, cast):
    response = call("bob", "GET", "/api/no-such-thing/")
    assert response.status_code == 404
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json() == {"detail": "No API endpoint at /api/no-such-thing/.", "code": "not_found"}


def test_the_consoles_pages_stay_html(call, cast):
    response = call("bob", "GET", "/no-such-page/")
    assert response.status_code == 404 and response.headers["Content-Type"].startswith("text/html")


def test_a_deeply_nested_body_is_a_json_400_and_audited(call, cast):
    """Issue 46, defect 8: a body of 50,000 `[` to a write was a 500 (`RecursionError` escaped the JSON
    parser), and the refusal was not audited. It is a 400 naming the body and the rule, on every write."""
    for path in ("/api/connect/", "/api/sites/", "/api/reconcile/", "/api/invoke/"):
        response = call("root", "POST", path, data="[" * 50_000, headers={"Content-Type": "application/json"})
        assert response.status_code == 400, (path, response.status_code, response.text[:200])
        error = response.json()
        assert error["code"] == "parse_error" and "nested" in error["detail"], error
        assert error["errors"] == [{"field": "body", "rule": "max_depth", "message": error["detail"]}]
        event = AuditEvent.objects.get(path=path)
        assert (event.outcome, event.status_code, event.principal_name) == ("failed", 400, "root")
    assert not Operation.objects.exists()

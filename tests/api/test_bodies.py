"""No input is a 500: request bodies of any depth, size and shape, to every write of the API, answer
JSON, a 4xx in the one error shape when refused, and every refusal is audited (issue 46, item 4).

Hypothesis makes the bodies: JSON of any shape (nested to any depth, numbers past any column, strings
of any character, the endpoints' own field names with values of the wrong type), and bytes that are
not JSON or not UTF-8. They go through the API's parser, views, serializers and error handler in this
process, as an admin (the mTLS that names the admin is tested on its own).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from access.authentication import PrincipalUser
from access.models import AuditEvent
from registry.models import Device, Host, Router, Site, Zone
from tests.support.admin_forms import model_admin

FIELDS = ["site", "device_description", "device", "zone", "hosts", "duration", "name", "wwn", "data_ip",
          "router_port", "zone_id", "initiators", "shareable", "router", "repair", "policy", "command", "args",
          "role", "sites", "zones", "vsan", "session_budget", "platform", "owner_site"]
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=10**30, max_value=10**40)
           | st.floats(allow_nan=False) | st.text(max_size=40))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=5),
                      max_leaves=20)
DEEP = st.integers(min_value=1, max_value=3000).map(lambda depth: "[" * depth + "]" * depth)
BODIES = (VALUES.map(json.dumps) | st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6).map(json.dumps)
          | DEEP | st.text(max_size=60) | st.binary(max_size=60))


@pytest.fixture
def writes(demo):
    """Every write of the API: (method, path)."""
    one = {model: model.objects.order_by("pk").first().pk for model in (Site, Zone, Host, Device, Router)}
    collections = ["sites", "zones", "hosts", "devices", "routers", "principals"]
    return ([("POST", f"/api/{name}/") for name in collections]
            + [(method, f"/api/{name}/{one[model]}/") for name, model in
               (("sites", Site), ("zones", Zone), ("hosts", Host), ("devices", Device), ("routers", Router))
               for method in ("PUT", "PATCH")]
            + [("POST", f"/api/{name}/") for name in ("connect", "disconnect", "reconcile", "invoke")])


@pytest.mark.django_db
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_body_is_a_server_error_and_every_refusal_is_audited(writes, data):
    method, path = data.draw(st.sampled_from(writes), label="write")
    body = data.draw(BODIES, label="body")
    client = APIClient()
    client.force_authenticate(PrincipalUser(model_admin()))
    before = AuditEvent.objects.filter(path=path).count()
    answer = client.generic(method, path, body, content_type="application/json")
    assert answer.status_code < 500, (method, path, body[:200], answer.status_code, answer.content[:300])
    assert answer["Content-Type"].startswith("application/json"), (method, path, answer["Content-Type"])
    assert AuditEvent.objects.filter(path=path).count() == before + 1, ("not audited", method, path)
    assert AuditEvent.objects.filter(path=path).latest("pk").status_code == answer.status_code
    if answer.status_code >= 400:
        error = answer.json()
        assert isinstance(error.get("detail"), str) and isinstance(error.get("code"), str), error

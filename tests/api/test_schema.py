"""The OpenAPI schema is valid, covers every endpoint, and its docs pages load nothing from other hosts.

test_contract.py runs schemathesis over it (every operation, every check), which also holds that no
generated input gets a server error.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import pytest
from drf_spectacular.validation import validate_schema


def test_the_schema_is_valid_openapi_and_covers_every_endpoint(api_server, cast):
    response = api_server.session("bob").get(f"{api_server.url}/api/schema/", params={"format": "json"}, timeout=20)
    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)
    for path in ("/api/sites/", "/api/zones/", "/api/devices/", "/api/routers/", "/api/links/", "/api/operations/",
                 "/api/principals/", "/api/audit-events/", "/api/plan/", "/api/connect/", "/api/disconnect/",
                 "/api/reconcile/", "/api/invoke/", "/api/health/"):
        assert path in schema["paths"], path
    assert "secret_ref" not in schema["components"]["schemas"]["Router"]["properties"]  # never shown
    assert schema["components"]["schemas"]["RouterRequest"]["properties"]["secret_ref"].get("writeOnly") is True


@pytest.mark.parametrize("page, marker", [("/api/docs/", "swagger"), ("/api/redoc/", "redoc")])
def test_the_api_docs_load_every_asset_from_the_service_itself(api_server, cast, page, marker):
    session = api_server.session("bob")
    response = session.get(f"{api_server.url}{page}", timeout=20)
    assert response.status_code == 200 and marker in response.text.lower()
    assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", response.text)
    assert assets, "the page names no script or stylesheet"
    for asset in assets:
        assert not re.match(r"(?i)^(https?:)?//", asset), f"{page} loads {asset} from another host"
        loaded = session.get(urljoin(f"{api_server.url}{page}", asset), timeout=20)
        assert loaded.status_code == 200 and loaded.content, f"{asset}: {loaded.status_code}"

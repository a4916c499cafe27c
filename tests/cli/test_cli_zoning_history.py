"""The zoning history through the real mTLS server: `/api/zoning-history/`, the images on an operation,
and `flexzone --zoning-history ROUTER` (admins only). The engine's tests show the images being taken
on the simulators (tests/operations/test_zoning_images.py); here they are rows as the engine writes
them, read through the API and the CLI."""

from __future__ import annotations

import json

import pytest

from operations.models import Operation, ZoningImage
from registry.models import Router

PROD = {"prod_oradb1_vmax": ["10:00:00:90:fa:c7:43:10", "50:00:09:73:f0:2c:51:04"]}
OURS = {"fz_z1_ve24_210000e08b103a02_20000004530001a0": ["20:00:00:04:53:00:01:a0", "21:00:00:e0:8b:10:3a:02"]}


@pytest.fixture
def history(cast):
    router = Router.objects.get(name="primary-rtr")
    Router.objects.filter(pk=router.pk).update(platform="brocade_fos", transport="ssh")
    op = Operation.objects.create(kind="add", state="succeeded", request={"site": "remote-site"})
    added = ZoningImage.objects.create(router=router, operation=op, before={"in_effect": "PROD", "zones": PROD},
                                       after={"in_effect": "PROD", "zones": {**PROD, **OURS}})
    return op, added


def test_admins_read_each_change_with_what_it_changed_and_how_to_put_it_back(call, history):
    op, added = history
    listing = call("root", "GET", "/api/zoning-history/", params={"router": "primary-rtr"})
    assert listing.status_code == 200, listing.text
    [image] = listing.json()["results"]
    assert (image["id"], image["router"], image["operation"]) == (added.pk, "primary-rtr", op.pk)
    assert image["changes"] == {"added": list(OURS), "removed": [], "changed": []}
    assert image["restore"] == [f'cfgremove "PROD", "{next(iter(OURS))}"', 'cfgenable "PROD"']
    assert call("root", "GET", "/api/zoning-history/", params={"router": "remote-rtr"}).json()["results"] == []
    detail = call("root", "GET", f"/api/operations/{op.pk}/").json()
    assert [image["id"] for image in detail["zoning_images"]] == [added.pk]
    rows = call("root", "GET", "/api/operations/").json()["results"]
    assert all("zoning_images" not in row for row in rows)  # with one operation read on its own only


def test_the_zoning_history_is_for_admins_only(call, history):
    op, _added = history
    assert call("alice", "GET", "/api/zoning-history/").status_code == 403
    assert "zoning_images" not in call("alice", "GET", f"/api/operations/{op.pk}/").json()


def test_the_cli_lists_the_history_and_prints_the_restore_without_sending_it(api_server, history,
                                                                              config_for, run_cli):
    _op, added = history
    config = config_for(api_server.url, "root")
    table = run_cli("flexzone", "--zoning-history", "primary-rtr", config=config)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ID", "TAKEN", "OPERATION", "IN", "EFFECT", "ADDED", "REMOVED", "CHANGED"]
    assert "PROD -> PROD" in lines[1] and next(iter(OURS)) in lines[1]
    assert f'#{added.pk}: cfgremove "PROD", "{next(iter(OURS))}"; cfgenable "PROD"' in table.stdout
    as_json = run_cli("flexzone", "zoning-history", "primary-rtr", "--json", config=config)
    assert json.loads(as_json.stdout)[0]["before"] == {"in_effect": "PROD", "zones": PROD}
    refused = run_cli("flexzone", "--zoning-history", "primary-rtr", config=config_for(api_server.url, "alice"))
    assert refused.returncode == 3, refused.stdout


def test_the_consoles_operation_page_shows_admins_the_images_and_the_restore(call, history):
    op, added = history
    page = call("root", "GET", f"/operations/{op.pk}/")
    assert page.status_code == 200
    assert f'id="zoning-image-{added.pk}"' in page.text and "PROD → PROD" in page.text
    assert "cfgenable &quot;PROD&quot;" in page.text and next(iter(OURS)) in page.text
    assert "zoning-image" not in call("alice", "GET", f"/operations/{op.pk}/").text

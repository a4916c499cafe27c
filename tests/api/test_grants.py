"""/api/grants/: which site may reach which device, shared or exclusive, until when, through the real
mTLS server. The engine's tests show connect, renewal, disconnect
and expiry making and ending them, these the read contract and its scope.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from operations.models import Grant, Operation
from registry.demo import load_demo
from registry.models import Device, Initiator, Site

REMOTE_WWN = "21:00:00:e0:8b:10:3a:02"  # the demo's management-server at remote-site
SEGMENT_WWN = "21:00:00:e0:8b:10:5e:01"  # the demo's segment-server at primary-site


@pytest.fixture
def grants(cast):
    """Three grants: remote-site shares primary-site's XRAID1 for an hour (connect, settled); primary-site
    holds remote-site's XRAID2 while its connect is still queued; west-site holds east-site's
    EAST-ARRAY1 for one host (a V1 addifcp took it)."""
    load_demo(fcip=True)
    Device.objects.filter(description="XRAID1").update(shareable=True)
    site = {name: Site.objects.get(name=name) for name in ("primary-site", "remote-site", "west-site")}
    done = Operation.objects.create(kind="add", state=Operation.State.SUCCEEDED, plan={"action": "add"})
    queued = Operation.objects.create(kind="add", state=Operation.State.QUEUED, plan={"action": "add"})
    v1 = Operation.objects.create(kind="invoke", state=Operation.State.SUCCEEDED, plan={"action": "add", "raw": True})
    until = timezone.now() + timedelta(hours=1)
    west_wwn = Initiator.objects.filter(host__site=site["west-site"]).order_by("wwn").values_list("wwn", flat=True)[0]
    made = {
        "remote": Grant.objects.create(device=Device.objects.get(description="XRAID1"), site=site["remote-site"],
                                            exclusive=False, expires_at=until, operation=done,
                                            initiators=[REMOTE_WWN]),
        "primary": Grant.objects.create(device=Device.objects.get(description="XRAID2"),
                                             site=site["primary-site"], operation=queued, initiators=[SEGMENT_WWN]),
        "west": Grant.objects.create(device=Device.objects.get(description="EAST-ARRAY1"), site=site["west-site"],
                                          operation=v1, initiators=[west_wwn]),
    }
    return made, until


def listing(call, who: str, **params) -> dict[str, dict]:
    response = call(who, "GET", "/api/grants/", params=params)
    assert response.status_code == 200, response.text
    return {f"{grant['site']}/{grant['device']}": grant for grant in response.json()["results"]}


def test_an_admin_reads_every_grant_with_who_owns_what_until_when_and_its_initiators(call, grants):
    made, until = grants
    every = listing(call, "root")
    assert sorted(every) == ["primary-site/XRAID2", "remote-site/XRAID1", "west-site/EAST-ARRAY1"]
    shared = every["remote-site/XRAID1"]
    assert shared["id"] == made["remote"].pk
    assert (shared["owner_site"], shared["zone"], shared["exclusive"]) == ("primary-site", 1, False)
    assert (shared["state"], shared["origin"], shared["initiators"]) == ("active", "connect", [REMOTE_WWN])
    assert shared["expires_at"] == until.isoformat().replace("+00:00", "Z")
    assert shared["operation"] == made["remote"].operation_id
    queued = every["primary-site/XRAID2"]
    assert (queued["state"], queued["exclusive"], queued["expires_at"]) == ("pending", True, None)
    assert every["west-site/EAST-ARRAY1"]["origin"] == "v1"
    one = call("root", "GET", f"/api/grants/{made['west'].pk}/")
    assert one.status_code == 200 and one.json()["initiators"] == made["west"].initiators


def test_filters_name_the_holding_site_the_device_or_its_owner(call, grants):
    assert sorted(listing(call, "root", site="remote-site")) == ["remote-site/XRAID1"]
    assert sorted(listing(call, "root", device="EAST-ARRAY1")) == ["west-site/EAST-ARRAY1"]
    assert sorted(listing(call, "root", owner_site="remote-site")) == ["primary-site/XRAID2"]
    refused = call("root", "GET", "/api/grants/", params={"site": "remote\x00site"})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "site"


def test_a_scoped_principal_sees_its_sites_grants_and_who_holds_its_devices_but_not_others_initiators(
        call, grants):
    made, _until = grants
    seen = listing(call, "carol")  # primary-site only
    assert sorted(seen) == ["primary-site/XRAID2", "remote-site/XRAID1"]
    assert seen["primary-site/XRAID2"]["initiators"] == [SEGMENT_WWN]  # its own site's grant
    assert seen["remote-site/XRAID1"]["initiators"] == []  # remote-site holds carol's device: no WWNs
    assert call("carol", "GET", f"/api/grants/{made['west'].pk}/").status_code == 404
    assert listing(call, "bob") == {}  # a viewer with no site in scope
    assert sorted(listing(call, "alice")) == ["primary-site/XRAID2", "remote-site/XRAID1"]
    assert listing(call, "alice")["remote-site/XRAID1"]["initiators"] == [REMOTE_WWN]


def test_grants_are_read_only_through_the_api(call, grants):
    made, _until = grants
    assert call("root", "POST", "/api/grants/", json={"site": "remote-site"}).status_code == 405
    assert call("root", "DELETE", f"/api/grants/{made['remote'].pk}/").status_code == 405
    assert Grant.objects.count() == 3


def test_the_schema_documents_grants(call, cast):
    schema = call("root", "GET", "/api/schema/", params={"format": "json"})
    assert schema.status_code == 200
    assert "/api/grants/" in schema.json()["paths"]
    grant = schema.json()["components"]["schemas"]["Grant"]["properties"]
    assert {"site", "device", "owner_site", "exclusive", "state", "origin", "initiators", "expires_at"} <= set(grant)

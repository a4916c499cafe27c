"""/api/hosts/ and the `hosts` of a connect or plan, through the real mTLS server.

A site's hosts are written by admins and read within a principal's site scope; their initiator WWNs are
what an FCIP link zones with the device.
"""

from __future__ import annotations

import pytest

from access.models import AuditEvent, Principal
from operations.models import Link, Operation
from registry.models import Host, Initiator
from tests.support.registry import demo_on_fcip

CONNECT = {"site": "remote-site", "device_description": "XRAID1"}
BACKUP = {"name": "backup-server", "site": "remote-site", "description": "Backup server",
          "initiators": ["10:00:00:10:9B:5E:C0:01", "10:00:00:10:9b:5e:c0:02"]}
SEGMENT_SERVER_WWN = "21:00:00:e0:8b:10:5e:01"


def names(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [host["name"] for host in response.json()["results"]]


def refused(response, status: int = 400) -> dict:
    """The first error of a refusal, as {field, rule, message}."""
    assert response.status_code == status, f"{response.status_code}: {response.text[:300]}"
    return response.json()["errors"][0]


@pytest.fixture
def fcip(cast):
    """The cast's two sites on FCIP switches (as in tests/registry/test_planner_fcip.py), plus a second host at
    remote-site, so plans show which initiators they zone."""
    demo_on_fcip()
    backup = Host.objects.create(site=cast["remote"], name="backup-server")
    Initiator.objects.create(host=backup, wwn="10:00:00:10:9b:5e:c0:01")
    return cast


# --- writes ------------------------------------------------------------------------------------


def test_an_admin_creates_updates_and_deletes_a_host_with_its_initiators_and_each_write_is_audited(call, cast):
    created = call("root", "POST", "/api/hosts/", json=BACKUP)
    assert created.status_code == 201, created.text
    host = created.json()
    assert (host["name"], host["site"], host["description"]) == ("backup-server", "remote-site", "Backup server")
    assert host["initiators"] == ["10:00:00:10:9b:5e:c0:01", "10:00:00:10:9b:5e:c0:02"]  # lower case out
    path = f"/api/hosts/{host['id']}/"
    Initiator.objects.filter(wwn="10:00:00:10:9b:5e:c0:02").update(description="HBA slot 2")

    changed = call("root", "PATCH", path, json={"initiators": ["10:00:00:10:9b:5e:c0:02", "10:00:00:10:9B:5E:C0:03"]})
    assert changed.status_code == 200, changed.text
    assert changed.json()["initiators"] == ["10:00:00:10:9b:5e:c0:02", "10:00:00:10:9b:5e:c0:03"]
    assert call("root", "GET", path).json()["initiators"] == changed.json()["initiators"]
    kept = Initiator.objects.get(wwn="10:00:00:10:9b:5e:c0:02")
    assert kept.description == "HBA slot 2"  # an initiator still listed is kept, not re-created
    renamed = call("root", "PATCH", path, json={"description": "Backup server, rack 4"})
    assert renamed.json()["initiators"] == changed.json()["initiators"]  # not given: unchanged

    update = AuditEvent.objects.filter(action="host.partial_update").order_by("id").first()
    assert update.before["initiators"] == host["initiators"] and update.after["initiators"] == changed.json()[
        "initiators"]
    assert (update.principal_name, update.outcome, update.target) == ("root", "allowed", f"host:{host['id']}")
    assert AuditEvent.objects.get(action="host.create").after["name"] == "backup-server"

    deleted = call("root", "DELETE", path)
    assert deleted.status_code == 204
    assert not Host.objects.filter(name="backup-server").exists()
    assert not Initiator.objects.filter(wwn__startswith="10:00:00:10:9b:5e:c0").exists()
    assert AuditEvent.objects.get(action="host.destroy").before["name"] == "backup-server"


def test_operators_and_viewers_cannot_write_hosts(call, cast):
    segment_server = Host.objects.get(name="segment-server")
    response = call("alice", "POST", "/api/hosts/", json=BACKUP)
    assert response.status_code == 403
    assert response.json()["detail"] == "Principal alice has role operator; POST /api/hosts/ needs role admin."
    assert call("bob", "DELETE", f"/api/hosts/{segment_server.pk}/").status_code == 403
    assert call("carol", "PATCH", f"/api/hosts/{segment_server.pk}/", json={"initiators": []}).status_code == 403
    assert Initiator.objects.filter(host=segment_server).count() == 2
    denied = AuditEvent.objects.filter(action__startswith="host.", outcome="denied")
    assert sorted(denied.values_list("principal_name", flat=True)) == ["alice", "bob", "carol"]


def test_a_second_host_with_the_same_name_at_a_site_is_a_409_with_the_constraints_message(call, cast):
    response = call("root", "POST", "/api/hosts/", json={"name": "segment-server", "site": "primary-site"})
    error = refused(response, 409)
    assert error == {"field": "name", "rule": "constraint", "message": "This site already has a host with this name."}


def test_an_initiator_wwn_another_host_has_is_a_409_with_the_constraints_message(call, cast):
    response = call("root", "POST", "/api/hosts/", json={**BACKUP, "initiators": [SEGMENT_SERVER_WWN.upper()]})
    error = refused(response, 409)
    assert error["rule"] == "constraint"
    assert error["message"] == "An initiator with this WWN already exists (WWNs compare without regard to case)."
    assert response.json()["code"] == "conflict"
    assert not Host.objects.filter(name="backup-server").exists()  # host and initiators: one transaction


def test_a_device_wwn_as_an_initiator_is_a_400_naming_its_position(call, cast):
    body = {**BACKUP, "initiators": ["10:00:00:10:9b:5e:c0:01", cast["xraid2"].wwn.upper()]}
    error = refused(call("root", "POST", "/api/hosts/", json=body))
    assert error["field"] == "initiators[1]" and error["rule"] == "target_wwn"
    assert error["message"] == "21:00:00:e0:8b:0e:95:17 is the WWN of device XRAID2; a port is either a target or an " \
                               "initiator here."


@pytest.mark.parametrize(
    "initiators, field, rule",
    [
        (["10:00:00:10:9b:5e:c0"], "initiators[0]", "wwn_format"),
        (["10:00:00:10:9b:5e:c0:01", "10:00:00:10:9b:5e:c0:0g"], "initiators[1]", "wwn_format"),
        (["10:00:00:10:9b:5e:c0:0\n"], "initiators[0]", "printable_ascii"),
        (["10:00:00:10:9b:5e:c0:01;"], "initiators[0]", "max_length"),
        (["１0:00:00:10:9b:5e:c0:01"], "initiators[0]", "printable_ascii"),
        ([" 10:00:00:10:9b:5e:c0:01"], "initiators[0]", "max_length"),
        ([7], "initiators[0]", "invalid"),  # a JSON string is required
        (["10:00:00:10:9b:5e:c0:01", "10:00:00:10:9B:5E:C0:01"], "initiators[1]", "duplicate"),
        ("10:00:00:10:9b:5e:c0:01", "initiators", "not_a_list"),
    ],
)
def test_a_bad_initiator_is_a_400_naming_its_position_and_the_rule(call, cast, initiators, field, rule):
    error = refused(call("root", "POST", "/api/hosts/", json={**BACKUP, "initiators": initiators}))
    assert (error["field"], error["rule"]) == (field, rule)
    assert not Host.objects.filter(name="backup-server").exists()


def test_a_host_of_an_unknown_site_or_with_a_hostile_name_is_a_400_naming_the_field(call, cast):
    assert refused(call("root", "POST", "/api/hosts/", json={**BACKUP, "site": "nowhere"}))["field"] == "site"
    assert refused(call("root", "POST", "/api/hosts/", json={**BACKUP, "name": "backup; reboot"}))["field"] == "name"
    assert refused(call("root", "POST", "/api/hosts/", json={**BACKUP, "wwn": "x"}))["field"] == "wwn"  # unknown


# --- scoped reads ------------------------------------------------------------------------------


def test_a_principal_reads_only_the_hosts_of_the_sites_in_its_scope(call, cast):
    management_server = Host.objects.get(name="management-server")
    assert names(call("carol", "GET", "/api/hosts/")) == ["segment-server"]  # carol: primary-site only
    missing = call("carol", "GET", f"/api/hosts/{management_server.pk}/")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert names(call("alice", "GET", "/api/hosts/")) == ["segment-server", "management-server"]
    assert names(call("bob", "GET", "/api/hosts/")) == []  # a viewer with no sites in scope
    Principal.objects.filter(name="bob").update(all_sites=True)
    assert sorted(names(call("bob", "GET", "/api/hosts/"))) == ["management-server", "segment-server"]
    detail = call("bob", "GET", f"/api/hosts/{management_server.pk}/").json()
    assert detail["initiators"] == ["21:00:00:e0:8b:10:3a:02"] and detail["site"] == "remote-site"
    assert len(names(call("root", "GET", "/api/hosts/"))) == 2


def test_hosts_are_filtered_by_site_and_name(call, cast):
    assert names(call("alice", "GET", "/api/hosts/", params={"site": "remote-site"})) == ["management-server"]
    assert names(call("alice", "GET", "/api/hosts/", params={"name": "segment-server"})) == ["segment-server"]
    assert names(call("carol", "GET", "/api/hosts/", params={"site": "remote-site"})) == []
    assert refused(call("alice", "GET", "/api/hosts/", params={"site": "remote-site\n"}))["field"] == "site"


# --- routers and links -------------------------------------------------------------------------


def test_a_router_vsan_outside_1_to_4093_or_the_reserved_4079_is_a_400_naming_vsan(call, cast):
    path = f"/api/routers/{cast['remote_rtr'].pk}/"
    assert call("bob", "GET", path).json()["vsan"] == 1
    for vsan in (0, 4079, 4094, 70000):
        error = refused(call("root", "PATCH", path, json={"vsan": vsan}))
        assert error["field"] == "vsan", vsan
    assert refused(call("root", "PATCH", path, json={"vsan": 4079}))["message"] == (
        "The VSAN must be between 1 and 4093 and not the reserved 4079.")
    changed = call("root", "PATCH", path, json={"vsan": 10})
    assert changed.status_code == 200 and changed.json()["vsan"] == 10


def test_a_link_shows_the_initiators_it_zones(call, cast):
    device = cast["xraid1"]
    Link.objects.create(site=cast["remote"], device=device, router=cast["primary_rtr"], port=8, zone=device.zone,
                        remote_ip="127.0.0.22", state="up", initiators=["21:00:00:e0:8b:10:3a:02"])
    [link] = call("alice", "GET", "/api/links/").json()["results"]  # remote-site is in alice's scope
    assert link["initiators"] == ["21:00:00:e0:8b:10:3a:02"]
    # carol sees the link (its device is her site's), but not remote-site's hosts' WWNs; bob, scoped to no
    # site, sees no one's links (access.permissions.visible).
    [link] = call("carol", "GET", "/api/links/").json()["results"]
    assert link["initiators"] == []
    assert call("bob", "GET", "/api/links/").json()["results"] == []


# --- connect and plan: `hosts` -----------------------------------------------------------------


def test_a_connect_naming_hosts_is_planned_and_journaled_with_them(call, fcip):
    response = call("alice", "POST", "/api/connect/", json={**CONNECT, "hosts": ["backup-server"]})
    assert response.status_code == 202, response.text
    operation = Operation.objects.get()
    assert operation.request["hosts"] == ["backup-server"]
    assert [step["initiators"] for step in operation.plan["steps"]] == [["10:00:00:10:9b:5e:c0:01"]] * 2


def test_an_unknown_host_is_a_plan_error_naming_hosts_with_close_matches(call, fcip):
    error = refused(call("alice", "POST", "/api/connect/", json={**CONNECT, "hosts": ["management-servr"]}))
    assert error["field"] == "hosts" and error["suggestions"] == ["management-server"]
    assert not Operation.objects.exists()


@pytest.mark.parametrize(
    "hosts, field",
    [([], "hosts"), (["management-server", "management-server"], "hosts[1]"), (["ok", "bad;name"], "hosts[1]"),
     (["management-server\n"], "hosts[0]"), ("management-server", "hosts")],
)
def test_bad_hosts_in_a_connect_are_a_400_naming_the_entry(call, cast, hosts, field):
    error = refused(call("alice", "POST", "/api/connect/", json={**CONNECT, "hosts": hosts}))
    assert error["field"] == field
    assert not Operation.objects.exists()


def test_a_disconnect_takes_no_hosts(call, cast):
    error = refused(call("alice", "POST", "/api/disconnect/", json={**CONNECT, "hosts": ["management-server"]}))
    assert (error["field"], error["rule"]) == ("hosts", "unknown_field")
    assert not Operation.objects.exists()


def test_the_plan_takes_hosts_as_a_repeated_query_parameter(call, fcip):
    query = [("site", "remote-site"), ("device_description", "XRAID1")]
    everyone = call("alice", "GET", "/api/plan/", params=query)
    assert everyone.status_code == 200, everyone.text
    assert everyone.json()["steps"][0]["initiators"] == ["10:00:00:10:9b:5e:c0:01", "21:00:00:e0:8b:10:3a:02"]
    both = call("alice", "GET", "/api/plan/",
                params=[*query, ("hosts", "backup-server"), ("hosts", "management-server")])
    assert both.json()["steps"][0]["initiators"] == everyone.json()["steps"][0]["initiators"]
    one = call("alice", "GET", "/api/plan/", params=[*query, ("hosts", "management-server")]).json()
    assert [step["initiators"] for step in one["steps"]] == [["21:00:00:e0:8b:10:3a:02"]] * 2
    assert [step["vsan"] for step in one["steps"]] == [None, 10]
    assert all(step["notes"] for step in one["steps"])
    twice = call("alice", "GET", "/api/plan/", params=[*query, ("hosts", "backup-server"), ("hosts", "backup-server")])
    assert refused(twice)["field"] == "hosts[1]"
    # A principal whose scope lacks remote-site gets the plan without remote-site's initiator WWNs.
    assert call("bob", "GET", "/api/plan/", params=query).json()["steps"][0]["initiators"] == []


def test_the_plan_of_a_disconnect_refuses_hosts(call, cast):
    query = {**CONNECT, "action": "disconnect", "hosts": "management-server"}
    error = refused(call("bob", "GET", "/api/plan/", params=query))
    assert (error["field"], error["rule"]) == ("hosts", "connect_only")


# --- schema ------------------------------------------------------------------------------------


def test_the_schema_describes_hosts_and_the_fcip_fields_of_plan_steps(api_server, cast):
    schema = api_server.session("bob").get(f"{api_server.url}/api/schema/", params={"format": "json"},
                                           timeout=20).json()
    assert "/api/hosts/" in schema["paths"] and "/api/hosts/{id}/" in schema["paths"]
    components = schema["components"]["schemas"]
    assert {"initiators", "vsan", "notes"} <= set(components["PlanStep"]["properties"])
    assert components["Host"]["properties"]["initiators"]["type"] == "array"
    assert "vsan" in components["Router"]["properties"]
    assert components["Link"]["properties"]["initiators"].get("readOnly") is True
    assert "hosts" in components["ConnectRequest"]["properties"]
    assert "hosts" not in components["TargetRequest"]["properties"]  # a disconnect removes the link for every host
    plan_parameters = {p["name"] for p in schema["paths"]["/api/plan/"]["get"]["parameters"]}
    assert "hosts" in plan_parameters

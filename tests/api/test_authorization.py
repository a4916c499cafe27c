"""Roles, scope and the audit trail, through the real mTLS server."""

from __future__ import annotations

import time

from access.models import AuditEvent, Principal
from operations.models import Operation
from registry.models import Site

CONNECT = {"site": "remote-site", "device_description": "XRAID1"}


def test_bob_the_viewer_reads_the_registry_but_cannot_connect(call, cast):
    for path in ("/api/sites/", "/api/zones/", "/api/devices/", "/api/routers/", "/api/links/", "/api/operations/"):
        assert call("bob", "GET", path).status_code == 200, path
    response = call("bob", "POST", "/api/connect/", json=CONNECT)
    assert response.status_code == 403
    assert response.json()["detail"] == "Principal bob has role viewer; POST /api/connect/ needs role operator."
    assert not Operation.objects.exists()
    denial = AuditEvent.objects.get(action="connect")
    assert (denial.principal_name, denial.outcome, denial.status_code) == ("bob", "denied", 403)


def test_alice_connects_and_gets_202_with_the_operation_url(call, cast, api_server):
    response = call("alice", "POST", "/api/connect/", json=CONNECT)
    assert response.status_code == 202
    operation = Operation.objects.get()
    assert response.headers["Location"] == f"{api_server.url}/api/operations/{operation.pk}/"
    assert response.json()["url"] == response.headers["Location"]
    assert (operation.kind, operation.principal.name, operation.state) == ("add", "alice", "queued")
    assert [step["router"] for step in operation.plan["steps"]] == ["primary-rtr", "remote-rtr"]
    followed = call("alice", "GET", f"/api/operations/{operation.pk}/").json()
    assert followed["state"] == "queued" and "transcript" not in followed
    event = AuditEvent.objects.get(action="connect")
    assert (event.principal_name, event.outcome, event.target) == ("alice", "allowed", f"operation:{operation.pk}")
    assert event.operation_id == operation.pk  # the trail names the operation it started


def test_wait_for_an_operation_that_does_not_finish_answers_202_with_it_still_queued(call, cast):
    started = time.monotonic()
    response = call("alice", "POST", "/api/disconnect/?wait=0.5", json=CONNECT)
    assert response.status_code == 202
    assert (response.json()["kind"], response.json()["state"]) == ("remove", "queued")
    assert time.monotonic() - started < 10  # the wait ends (timing itself is never asserted: see docs/architecture.md)


def test_wait_answers_200_once_the_operation_has_finished(call, cast):
    from threading import Timer

    def finish_the_next_operation():
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if Operation.objects.filter(state="queued").update(state="succeeded", phase="done"):
                return
            time.sleep(0.05)

    Timer(0.2, finish_the_next_operation).start()
    response = call("alice", "POST", "/api/connect/?wait=4", json=CONNECT)
    assert response.status_code == 200
    assert response.json()["state"] == "succeeded"


def test_carol_is_refused_outside_her_sites_and_zones(call, cast):
    # carol is scoped to primary-site and zone 1; XRAID2 is in zone 2, owned by remote-site.
    response = call("carol", "POST", "/api/connect/", json={"site": "primary-site", "device_description": "XRAID2"})
    assert response.status_code == 403
    assert response.json()["detail"] == "Principal carol is not scoped to site remote-site."
    Principal.objects.get(name="carol").sites.add(Site.objects.get(name="remote-site"))
    response = call("carol", "POST", "/api/connect/", json={"site": "primary-site", "device_description": "XRAID2"})
    assert response.status_code == 403
    assert response.json()["detail"] == "Principal carol is not scoped to zone 2."
    response = call("carol", "POST", "/api/invoke/", json={"router": "remote-rtr", "command": "lsifcp"})
    assert response.status_code == 202
    assert not Operation.objects.filter(kind="add").exists()


def test_v1_invoke_is_journaled_with_its_arguments(call, cast):
    body = {"router": "primary-rtr", "command": "addifcp", "port": 8, "zone": 3, "ifcpip": "127.0.0.22"}
    response = call("alice", "POST", "/api/invoke/", json=body)
    assert response.status_code == 202, response.text
    operation = Operation.objects.get()
    assert operation.kind == "invoke"
    assert operation.request == {"router": "primary-rtr", "command": "addifcp", "port": 8, "zone": 3,
                                 "remote_ip": "127.0.0.22"}
    unknown_gateway = call("alice", "POST", "/api/invoke/", json={**body, "ifcpip": "10.0.8.50"})
    assert unknown_gateway.status_code == 400
    assert unknown_gateway.json()["errors"][0]["field"] == "ifcpip"
    missing = call("alice", "POST", "/api/invoke/", json={"router": "primary-rtr", "command": "rmifcp"})
    assert missing.status_code == 400
    assert {error["field"] for error in missing.json()["errors"]} == {"port", "zone", "ifcpip"}


def test_v1_invoke_needs_the_scope_of_the_site_the_link_serves_too(call, cast):
    # carol is scoped to primary-site: its router is hers, but a link from it to remote-site's
    # gateway serves remote-site, which is not.
    body = {"router": "primary-rtr", "command": "addifcp", "port": 8, "zone": 1, "ifcpip": "127.0.0.22"}
    response = call("carol", "POST", "/api/invoke/", json=body)
    assert response.status_code == 403, response.text
    assert response.json()["detail"] == "Principal carol is not scoped to site remote-site."
    assert not Operation.objects.exists()


def test_reconcile_report_is_for_operators_and_repair_for_admins(call, cast):
    assert call("alice", "POST", "/api/reconcile/", json={}).status_code == 202
    repair = call("alice", "POST", "/api/reconcile/", json={"repair": True})
    assert repair.status_code == 403 and "repair needs admin" in repair.json()["detail"]
    assert call("root", "POST", "/api/reconcile/", json={"repair": True}).status_code == 202
    assert call("bob", "POST", "/api/reconcile/", json={}).status_code == 403


def test_a_reconcile_of_one_router_needs_the_scope_of_its_site(call, cast):
    one = call("carol", "POST", "/api/reconcile/", json={"router": "primary-rtr"})
    assert one.status_code == 202, one.text
    assert Operation.objects.get(pk=one.json()["id"]).request == {"repair": False, "policy": "registry",
                                                                  "router": "primary-rtr"}
    other = call("carol", "POST", "/api/reconcile/", json={"router": "remote-rtr"})
    assert other.status_code == 403 and other.json()["detail"] == "Principal carol is not scoped to site remote-site."
    unknown = call("root", "POST", "/api/reconcile/", json={"router": "no-such-rtr"})
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["field"] == "router", unknown.text


def test_only_admins_change_the_registry_and_every_change_is_recorded(call, cast):
    site = {"name": "third-site", "display_name": "THIRD", "msan_id": 3, "management_ip": "127.0.0.13",
            "data_ip": "127.0.0.23", "router_port": 2}
    assert call("alice", "POST", "/api/sites/", json=site).status_code == 403
    created = call("root", "POST", "/api/sites/", json=site)
    assert created.status_code == 201, created.text
    changed = call("root", "PATCH", f"/api/sites/{created.json()['id']}/", json={"router_port": 5})
    assert changed.status_code == 200
    update = AuditEvent.objects.get(action="site.partial_update")
    assert (update.before["router_port"], update.after["router_port"]) == (2, 5)
    assert update.principal_name == "root" and update.target == f"site:{created.json()['id']}"
    assert AuditEvent.objects.filter(action="site.create", outcome="denied", principal_name="alice").exists()


def test_a_duplicate_is_a_409_with_the_constraints_own_message(call, cast):
    site = {"name": "primary-site", "display_name": "OTHER", "msan_id": 9, "management_ip": "127.0.0.19",
            "data_ip": "127.0.0.29", "router_port": 2}
    response = call("root", "POST", "/api/sites/", json=site)
    assert response.status_code == 409
    assert response.json()["detail"] == "A site with this short name already exists."
    assert response.json()["errors"][0]["field"] == "name"
    protected = call("root", "DELETE", f"/api/sites/{cast['primary'].pk}/")
    assert protected.status_code == 409 and "remove those first" in protected.json()["detail"]


def test_principals_and_the_audit_log_are_for_admins_only(call, cast):
    for name in ("alice", "bob"):
        assert call(name, "GET", "/api/principals/").status_code == 403
        assert call(name, "GET", "/api/audit-events/").status_code == 403
    principals = call("root", "GET", "/api/principals/").json()["results"]
    alice = next(p for p in principals if p["name"] == "alice")
    assert alice["sites"] == ["primary-site", "remote-site"] and alice["zones"] == [1, 2, 3]
    assert call("root", "GET", "/api/audit-events/").status_code == 200


def test_routers_are_listed_without_their_secret_or_its_reference(call, cast):
    for name in ("bob", "root"):
        routers = call(name, "GET", "/api/routers/").json()["results"]
        assert routers and all("secret_ref" not in router and "secret" not in router for router in routers)
        assert "file:" not in call(name, "GET", f"/api/routers/{routers[0]['id']}/").text


def test_transcripts_are_shown_to_admins_only(call, cast):
    operation = Operation.objects.create(kind="list", transcript="primary-rtr> show ifcp\n(password ****)")
    assert "transcript" not in call("alice", "GET", f"/api/operations/{operation.pk}/").json()
    assert call("root", "GET", f"/api/operations/{operation.pk}/").json()["transcript"].startswith("primary-rtr>")


def test_the_plan_endpoint_answers_with_the_exact_router_commands(call, cast):
    response = call("bob", "GET", "/api/plan/", params={"site": "remote-site", "device_description": "XRAID1"})
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["zone"] == 1 and plan["devices"] == ["XRAID1"]
    assert [step["router"] for step in plan["steps"]] == ["primary-rtr", "remote-rtr"]
    assert all(step["commands"] for step in plan["steps"])
    # The delta (who holds what there) is for principals scoped to the plan's sites: not bob, alice.
    assert all("delta" not in step for step in plan["steps"])
    plan = call("alice", "GET", "/api/plan/", params={"site": "remote-site", "device_description": "XRAID1"}).json()
    assert [step["delta"] for step in plan["steps"]] == ["create", "create"]  # no link recorded yet
    unknown = call("bob", "GET", "/api/plan/", params={"site": "remote-site", "device_description": "XRAID9"})
    assert unknown.status_code == 400
    assert unknown.json()["errors"][0]["field"] == "device_description"
    assert "XRAID1" in unknown.json()["errors"][0]["suggestions"]

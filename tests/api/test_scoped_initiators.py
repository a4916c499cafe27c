"""Initiator WWNs are as scoped as hosts, through the real mTLS server: a principal that is neither admin
nor all_sites never reads another site's initiators in a plan, a link, an operation or a console page,
in colon form or inside an FCIP zone name. carol is scoped to primary-site; alice has both demo sites;
root is an admin.
"""

from __future__ import annotations

import pytest

from access.redaction import HIDDEN
from operations.models import Link, Operation
from operations.planner import plan_connect
from registry.models import Device, Initiator, Router, Site
from tests.support.registry import demo_on_fcip

SEGMENT_WWN = "21:00:00:e0:8b:10:5e:01"  # the demo's segment-server at primary-site


@pytest.fixture
def fcip_demo(cast):
    """The demo's two sites on FCIP switches (a FOS and an MDS): plans zone the requesting site's initiators."""
    demo_on_fcip()
    return cast


def remote_wwns() -> list[str]:
    wwns = sorted(Initiator.objects.filter(host__site__name="remote-site").values_list("wwn", flat=True))
    assert wwns, "the demo's remote site has initiators"
    return wwns


def shows_any(text: str, wwns: list[str]) -> list[str]:
    """The WWNs `text` names, with colons or without (as inside an FCIP zone name), in either case."""
    lowered = text.lower()
    return [wwn for wwn in wwns if wwn.lower() in lowered or wwn.replace(":", "").lower() in lowered]


def test_a_plan_for_another_site_hides_its_initiators_from_a_scoped_principal_only(call, fcip_demo):
    query = {"site": "remote-site", "device_description": "XRAID1"}
    wwns = remote_wwns()
    full = call("root", "GET", "/api/plan/", params=query)
    assert full.status_code == 200 and shows_any(full.text, wwns) == wwns  # an admin reads every one
    assert shows_any(call("alice", "GET", "/api/plan/", params=query).text, wwns) == wwns  # remote-site is hers
    scoped = call("carol", "GET", "/api/plan/", params=query)
    assert scoped.status_code == 200
    assert shows_any(scoped.text, wwns) == []
    steps = scoped.json()["steps"]
    assert [step["initiators"] for step in steps] == [[], []]
    assert all(HIDDEN in " ".join(step["commands"]) for step in steps)  # the command lines say something was
    assert [step["router"] for step in steps] == [step["router"] for step in full.json()["steps"]]
    # The device's WWN (the target) is not an initiator: it stays.
    assert all(step["wwn"] == Device.objects.get(description="XRAID1").wwn for step in steps)


def test_a_scoped_principal_reads_its_own_sites_initiators_in_its_plans(call, fcip_demo):
    own = call("carol", "GET", "/api/plan/", params={"site": "primary-site", "device_description": "XRAID2"})
    assert own.status_code == 200, own.text
    assert SEGMENT_WWN in own.json()["steps"][0]["initiators"] and HIDDEN not in own.text


def test_links_show_a_scoped_principal_only_its_own_sites_initiators_and_pairs(call, fcip_demo):
    wwns = remote_wwns()
    xraid1, xraid2 = (Device.objects.get(description=name) for name in ("XRAID1", "XRAID2"))
    primary, remote = Site.objects.get(name="primary-site"), Site.objects.get(name="remote-site")
    theirs = Link.objects.create(site=remote, device=xraid1, router=Router.objects.get(name="primary-rtr"), port=24,
                                 zone=xraid1.zone, remote_ip=remote.data_ip, state="up", initiators=wwns,
                                 pairs=[[wwn, xraid1.wwn] for wwn in wwns] + [[SEGMENT_WWN, xraid1.wwn]])
    mine = Link.objects.create(site=primary, device=xraid2, router=Router.objects.get(name="remote-rtr"), port=25,
                               zone=xraid2.zone, remote_ip=primary.data_ip, state="up", initiators=[SEGMENT_WWN],
                               pairs=[[SEGMENT_WWN, xraid2.wwn]])
    listing = call("carol", "GET", "/api/links/")
    assert listing.status_code == 200 and shows_any(listing.text, wwns) == []
    links = {link["id"]: link for link in listing.json()["results"]}
    # A pair of carol's own initiator on the shared link stays; the others' go.
    assert (links[theirs.pk]["initiators"], links[theirs.pk]["pairs"]) == ([], [[SEGMENT_WWN, xraid1.wwn]])
    assert (links[mine.pk]["initiators"], links[mine.pk]["pairs"]) == ([SEGMENT_WWN], [[SEGMENT_WWN, xraid2.wwn]])
    one = call("carol", "GET", f"/api/links/{theirs.pk}/")
    assert one.status_code == 200 and shows_any(one.text, wwns) == []
    assert call("root", "GET", f"/api/links/{theirs.pk}/").json()["initiators"] == wwns
    # The console's link page, the same way.
    page = call("carol", "GET", f"/links/{theirs.pk}/")
    assert page.status_code == 200 and shows_any(page.text, wwns) == []
    assert shows_any(call("root", "GET", f"/links/{theirs.pk}/").text, wwns) == wwns


def test_an_operation_of_another_site_hides_its_initiators_in_the_api_and_the_console(call, fcip_demo):
    wwns = remote_wwns()
    plan = plan_connect(site="remote-site", device_description="XRAID1").as_dict()
    op = Operation.objects.create(
        kind="add", state=Operation.State.FAILED, plan=plan,
        request={"site": "remote-site", "device_description": "XRAID1"},
        result={"links": [], "pairs": [[wwns[0], plan["steps"][0]["wwn"]]]},
        error=f"primary-rtr: zone fz_z1_ve24_{wwns[0].replace(':', '')}_x refused member {wwns[0].upper()}")
    for who, sees in (("root", True), ("alice", True), ("carol", False)):
        answer = call(who, "GET", f"/api/operations/{op.pk}/")
        assert answer.status_code == 200
        assert bool(shows_any(answer.text, wwns)) == sees, who
        page = call(who, "GET", f"/operations/{op.pk}/")
        assert page.status_code == 200
        assert bool(shows_any(page.text, wwns)) == sees, who
    scoped = call("carol", "GET", f"/api/operations/{op.pk}/").json()
    assert scoped["result"]["pairs"] == [] and HIDDEN in scoped["error"]
    assert scoped["request"] == op.request  # nothing else changes
    assert shows_any(call("carol", "GET", "/api/operations/").text, wwns) == []
    # A WWN the registry no longer knows (its host deleted since) stays hidden: only the principal's own
    # sites' initiators and devices' WWNs are ever shown.
    Initiator.objects.filter(host__site__name="remote-site").delete()
    assert shows_any(call("carol", "GET", f"/api/operations/{op.pk}/").text, wwns) == []
    assert shows_any(call("root", "GET", f"/api/operations/{op.pk}/").text, wwns) == wwns

"""Two sites that reach each other's devices of one zone share the zone's iFCP sessions (issue 21, item 1).

remote-site connects XRAID1 (primary-site's, zone 1); primary-site connects a device remote-site owns
in zone 1. Both need the same two sessions (primary-rtr port 8 towards remote-site's gateway,
remote-rtr port 4 towards primary-site's), so the second add reuses them. Whichever site disconnects
first, the sessions stay on the routers for the other, whose lock still needs them; the last
disconnect removes them. Over real telnet to the simulators.
"""

from __future__ import annotations

import pytest

from operations import execute, reconcile, submit
from operations.delta import with_delta
from operations.models import Grant, Link
from operations.planner import plan_connect, plan_disconnect
from registry.models import Device, Site, Zone
from tests.support.agreement import assert_agreement, router_keys

SESSIONS = {"primary": {(8, 1, "127.0.0.22")}, "remote": {(4, 1, "127.0.0.21")}}
CONNECTS = {
    "remote-site": {"site": "remote-site", "device_description": "XRAID1"},
    "primary-site": {"site": "primary-site", "device_description": "RAID-R1"},
}


@pytest.fixture
def both_connected(ops_lab):
    Device.objects.create(device_id="raid-r1", description="RAID-R1", wwn="21:00:00:e0:8b:0e:95:99",
                          zone=Zone.objects.get(zone_id=1), owner_site=Site.objects.get(name="remote-site"))
    for site, request in CONNECTS.items():
        # A dry run is the delta: the first connect creates both sessions, the second shares them.
        dry = with_delta(plan_connect(**request))
        if site == "remote-site":
            assert [step.delta for step in dry.steps] == ["create", "create"] and all(s.commands for s in dry.steps)
        else:
            assert [(step.delta, step.commands) for step in dry.steps] == [("shared", []), ("shared", [])]
            assert all("already up for remote-site's hold of XRAID1" in step.notes[-1] for step in dry.steps)
        sent = len(ops_lab.primary_sim.transcript()) + len(ops_lab.remote_sim.transcript())
        op = execute(submit("add", request).pk)
        assert op.state == "succeeded", op.error
        if site == "primary-site":  # and the run agrees: nothing is sent
            assert len(ops_lab.primary_sim.transcript()) + len(ops_lab.remote_sim.transcript()) == sent
    assert router_keys(ops_lab.primary_sim) == SESSIONS["primary"]
    assert router_keys(ops_lab.remote_sim) == SESSIONS["remote"]
    return ops_lab


def still_reachable(lab) -> None:
    assert router_keys(lab.primary_sim) == SESSIONS["primary"]
    assert router_keys(lab.remote_sim) == SESSIONS["remote"]
    assert_agreement(lab)
    report = reconcile().result["routers"]
    assert all(not r["missing"] and not r["extra"] for r in report.values()), report


@pytest.mark.django_db
@pytest.mark.parametrize("first, last", [("remote-site", "primary-site"), ("primary-site", "remote-site")])
def test_one_site_s_disconnect_keeps_the_sessions_another_site_s_hold_needs(both_connected, first, last):
    lab = both_connected
    # The dry run says so first: both steps kept, nothing to send.
    dry = with_delta(plan_disconnect(**CONNECTS[first]))
    assert [(step.delta, step.commands) for step in dry.steps] == [("kept", []), ("kept", [])]
    assert all(f"kept, still needed by {last}'s hold of" in step.notes[-1] for step in dry.steps)
    op = execute(submit("remove", CONNECTS[first]).pk)
    assert op.state == "succeeded", op.error
    assert not Grant.objects.filter(site__name=first).exists()
    assert Grant.objects.filter(site__name=last).exists()
    still_reachable(lab)
    assert set(Link.objects.filter(state="up").values_list("site__name", flat=True)) == {last}
    assert f"still needed by {last}'s hold of" in op.transcript

    dry = with_delta(plan_disconnect(**CONNECTS[last]))
    assert [step.delta for step in dry.steps] == ["remove", "remove"] and all(step.commands for step in dry.steps)
    op = execute(submit("remove", CONNECTS[last]).pk)
    assert op.state == "succeeded", op.error
    assert router_keys(lab.primary_sim) == set() and router_keys(lab.remote_sim) == set()
    assert not Grant.objects.exists() and not Link.objects.filter(state="up").exists()

"""Issue 45, item 6: the routers an operation touches are worked at the same time, not one after the
other. These tests commit their rows (the routers' threads have connections of their own, which see
committed rows only); the rest of the suite runs inside a transaction, where the same code works the
routers one after the other (operations.threads.at_once)."""

from __future__ import annotations

import time

import pytest

from operations import execute, reconcile, submit
from operations.models import Grant, Link
from operations.pool import pool
from routers.drivers.base import LinkSpec
from tests.support.agreement import assert_agreement, behind_the_registrys_back, router_keys
from tests.support.sims import Lab, wire

ADD_XRAID1 = {"site": "remote-site", "device_description": "XRAID1"}


@pytest.fixture
def slow_owner_lab(transactional_db, demo, ops_settings, sim_factory, secrets_dir):
    """primary-rtr (the owner's side, configured first when steps ran in order) an Eclipse whose login
    takes 0.6 s; remote-rtr a Nishan that answers at once. Each records when its state changed."""
    primary = sim_factory("mcdata_eclipse", telnet=("127.0.0.1", 0), scale=0.05)
    remote = sim_factory("nishan_ips3000", telnet=("127.0.0.1", 0))
    wire(demo["primary_rtr"], primary, secrets_dir, command_timeout=5.0)
    wire(demo["remote_rtr"], remote, secrets_dir, command_timeout=5.0)
    changed: dict[str, list[float]] = {"primary": [], "remote": []}
    primary.add_state_listener(lambda _links: changed["primary"].append(time.monotonic()))
    remote.add_state_listener(lambda _links: changed["remote"].append(time.monotonic()))
    yield Lab(primary, remote, demo["primary_rtr"], demo["remote_rtr"], demo), changed
    pool.close_all()


def test_an_add_works_both_routers_at_once_and_counts_the_slower_one(slow_owner_lab):
    lab, changed = slow_owner_lab
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "succeeded", op.error
    # In order, the requester's router was touched only once the owner's was done; at once, the fast
    # Nishan is configured while the Eclipse is still logging in.
    assert changed["remote"] and changed["primary"]
    assert changed["remote"][0] < changed["primary"][0], changed
    each = op.result["router_ms_each"]
    assert set(each) == {lab.primary_rtr.name, lab.remote_rtr.name}
    assert op.router_ms == pytest.approx(max(each.values()), abs=0.5)
    assert op.router_ms < sum(each.values())
    assert_agreement(lab)


def test_a_step_that_fails_rolls_back_what_the_other_router_did_at_the_same_time(slow_owner_lab):
    lab, changed = slow_owner_lab
    lab.primary_sim.add_fault("refuse_login")
    op = execute(submit("add", ADD_XRAID1).pk)
    assert op.state == "rolled_back", (op.state, op.error)
    assert len(changed["remote"]) == 2  # made while the owner's router refused, then taken off
    assert not router_keys(lab.remote_sim) and not router_keys(lab.primary_sim)
    assert not Grant.objects.exists() and not Link.active().exists()
    lab.primary_sim.clear_faults()
    assert execute(submit("add", ADD_XRAID1).pk).state == "succeeded"
    assert_agreement(lab)


def test_a_repair_converges_every_router_at_once(slow_owner_lab):
    """Issue 45, item 7: reconcile reads and repairs its routers at the same time (before: one after the
    other, ~1.1 s per router)."""
    lab, changed = slow_owner_lab
    assert execute(submit("add", ADD_XRAID1).pk).state == "succeeded"
    for sim in (lab.primary_sim, lab.remote_sim):  # routers rebuilt after a disaster: nothing of flexzone's
        for link in sim.links():
            behind_the_registrys_back(lab.primary_rtr if sim is lab.primary_sim else lab.remote_rtr, "remove",
                                      LinkSpec(port=link.port, zone=link.zone, remote_ip=link.remote_ip))
    pool.close_all()
    for times in changed.values():
        times.clear()
    op = reconcile(repair=True)
    assert op.state == "succeeded", op.error
    assert changed["remote"][0] < changed["primary"][0], changed  # the Nishan while the Eclipse logs in
    assert set(op.result["router_ms_each"]) == {lab.primary_rtr.name, lab.remote_rtr.name}
    assert_agreement(lab)
    assert not any(reconcile().result["routers"][name].get(kind) for name in op.result["routers"]
                   for kind in ("missing", "extra", "mismatched"))

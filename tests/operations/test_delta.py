"""A dry run's delta for records left mid-change: the run waits only for an operation still queued or
running; a record an ended operation left is taken over, as operations/adding.py does. The shared,
extended, kept and shrunk cases run against the simulators in test_cross_site_sharing.py and test_fcip.py.
"""

from __future__ import annotations

import pytest

from operations.delta import with_delta
from operations.models import Link, Operation
from operations.planner import plan_connect, plan_disconnect
from registry.models import Device

CONNECT = {"site": "remote-site", "device_description": "XRAID1"}


def record(demo, state: str, operation_state: str) -> Link:
    """The remote router's link of CONNECT, `state`, last changed by an operation now `operation_state`."""
    op = Operation.objects.create(kind="add", state=operation_state, plan={"action": "add"})
    step = plan_connect(**CONNECT).steps[1]
    assert step.router == "remote-rtr"
    xraid1 = Device.objects.get(description="XRAID1")
    return Link.objects.create(site=demo["remote"], device=xraid1, router=demo["remote_rtr"], port=step.port,
                               zone=xraid1.zone, remote_ip=step.remote_ip, state=state, operation=op)


@pytest.mark.django_db
@pytest.mark.parametrize("state", ["configuring", "removing"])
def test_a_record_an_operation_in_flight_is_changing_makes_the_dry_run_wait(demo, state):
    link = record(demo, state, Operation.State.RUNNING)
    for plan in (plan_connect(**CONNECT), plan_disconnect(**CONNECT)):
        steps = {step.router: step for step in with_delta(plan).steps}
        assert steps["remote-rtr"].delta == "waits"
        assert f"operation {link.operation_id} is changing this link ({state})" in steps["remote-rtr"].notes[-1]
        assert steps["primary-rtr"].delta == ("create" if plan.action == "add" else "remove")


@pytest.mark.django_db
@pytest.mark.parametrize("ended", [Operation.State.FAILED, Operation.State.ROLLED_BACK])
def test_a_record_an_ended_operation_left_mid_change_is_taken_over(demo, ended):
    link = record(demo, "configuring", ended)
    connect = {step.router: step for step in with_delta(plan_connect(**CONNECT)).steps}["remote-rtr"]
    assert connect.delta == "create" and connect.commands
    assert f"a record left configuring by operation {link.operation_id} is taken over" in connect.notes[-1]
    remove = {step.router: step for step in with_delta(plan_disconnect(**CONNECT)).steps}["remote-rtr"]
    assert remove.delta == "remove" and remove.commands


@pytest.mark.django_db
def test_journaled_plans_keep_their_shape_only_dry_runs_carry_a_delta(demo):
    plan = plan_connect(**CONNECT)
    assert all("delta" not in step for step in plan.as_dict()["steps"])
    assert [step["delta"] for step in with_delta(plan).as_dict()["steps"]] == ["create", "create"]

"""A router held by another operation is waited for within this operation's own time limit.

Nothing was sent while the router was busy, so there is nothing to undo: an add whose second router
is held a little longer than FLEXZONE_OPS_ROUTER_WAIT finishes once it is free, instead of rolling
back the first router's step.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from operations import execute, submit
from operations.locking import router_lock
from tests.support.agreement import assert_agreement, router_keys


def hold_router(router_id: int, seconds: float) -> tuple[threading.Thread, threading.Event]:
    """Another worker's session on the router (its own connection: the advisory lock is per session)."""
    held = threading.Event()

    def hold() -> None:
        try:
            with router_lock(router_id, 5.0):
                held.set()
                threading.Event().wait(seconds)
        finally:
            connection.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert held.wait(5), "the other worker never took the router"
    return thread, held


@pytest.mark.django_db(transaction=True)
def test_an_add_waits_for_a_router_held_longer_than_the_router_wait_and_succeeds(ops_lab, settings):
    settings.FLEXZONE_OPS_ROUTER_WAIT = 0.3
    op = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    second = op.plan["steps"][1]["router_id"]
    thread, _held = hold_router(second, 1.5)
    done = execute(op.pk)
    thread.join()
    assert done.state == "succeeded", done.error
    assert router_keys(ops_lab.primary_sim) and router_keys(ops_lab.remote_sim)
    assert_agreement(ops_lab)


@pytest.mark.django_db(transaction=True)
def test_an_add_whose_first_router_stays_busy_past_its_time_limit_is_rolled_back_on_the_other(ops_lab, settings):
    settings.FLEXZONE_OPS_ROUTER_WAIT = 0.3
    settings.FLEXZONE_OPS_TOTAL_TIMEOUT = 1.0
    op = submit("add", {"site": "remote-site", "device_description": "XRAID1"})
    thread, _held = hold_router(op.plan["steps"][0]["router_id"], 2.0)
    done = execute(op.pk)
    thread.join()
    # The other router, worked at the same time, was configured and then rolled back.
    assert done.state == "rolled_back", (done.state, done.error)
    assert "busy" in done.error
    assert router_keys(ops_lab.primary_sim) == set() and router_keys(ops_lab.remote_sim) == set()
    assert_agreement(ops_lab)

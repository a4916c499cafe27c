"""The McData Eclipse simulator at its real (seed) timing, driven by the Eclipse driver.

What the device makes a client wait is read from the simulator's served think time (its timing-profile
delays), never from the wall clock; what that comes to on the clock is printed by ``python -m bench routers``.
"""

from __future__ import annotations

import pytest

from routers.drivers.base import LinkSpec
from simulators.mcdata_eclipse import EclipsePersonality

SPEC = LinkSpec(port=2, zone=12, remote_ip="192.0.2.44")


@pytest.mark.slow
def test_the_driver_waits_out_the_eclipse_login_and_a_remove_costs_the_device_more_than_an_add(sim_factory,
                                                                                              driver_for):
    sim = sim_factory("mcdata_eclipse", scale=1.0)
    adder = driver_for(sim, connect=False, connect_timeout=30.0, command_timeout=30.0)
    adder.connect()
    login = sim.think_seconds
    adder.add_link(SPEC)
    adder.save_config()
    add = sim.think_seconds
    adder.close()

    remover = driver_for(sim, connect=False, connect_timeout=30.0, command_timeout=30.0)
    remover.connect()
    remover.remove_link(SPEC)
    remover.save_config()
    remove = sim.think_seconds - add

    timing = EclipsePersonality.timing
    assert login > (timing.connect_to_login + timing.after_password) * (1 - timing.jitter)  # the seed: ~12 s
    assert add < 20.0  # the seed: a whole add under 20 s
    assert remove > add  # the confirmation and the UNBIND wait: removes are slightly slower
    assert remover.take_router_seconds() > 0.95 * remove  # the driver counts the device's time as the router's
    assert sim.links() == []

"""The McData Eclipse simulator at its real (seed) timing, driven by the Eclipse driver."""

from __future__ import annotations

import time

import pytest

from routers.drivers.base import LinkSpec

SPEC = LinkSpec(port=2, zone=12, remote_ip="192.0.2.44")


@pytest.mark.slow
def test_a_cold_eclipse_add_takes_about_18_seconds_and_a_remove_a_little_longer(sim_factory, driver_for):
    sim = sim_factory("mcdata_eclipse", scale=1.0)
    start = time.monotonic()
    adder = driver_for(sim, connect=False, connect_timeout=30.0, command_timeout=30.0)
    adder.connect()
    login = time.monotonic() - start
    adder.add_link(SPEC)
    adder.save_config()
    add = time.monotonic() - start
    adder.close()

    start = time.monotonic()
    remover = driver_for(sim, connect=False, connect_timeout=30.0, command_timeout=30.0)
    remover.connect()
    remover.remove_link(SPEC)
    remover.save_config()
    remove = time.monotonic() - start

    assert 10.5 < login < 13.5, login  # the seed: up to 12 s to start a telnet management session
    assert 16.0 < add < 20.0, add  # the seed: a whole add under 20 s
    assert add < remove < 22.0, (add, remove)  # removes slightly slower
    assert remover.take_router_seconds() > 0.95 * remove
    assert sim.links() == []

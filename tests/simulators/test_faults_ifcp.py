"""Every fault knob of the iFCP simulators (McData Eclipse, Nishan IPS 3000) gives the driver a typed error,
never a hang; the fault fires as documented and the next session sees the true state."""

from __future__ import annotations

import time

import pytest

from routers.drivers import get_driver
from routers.drivers.base import (
    GarbledOutput,
    LinkExists,
    LinkSpec,
    RouterAuthError,
    RouterConnectError,
    RouterLink,
    RouterTimeout,
)
from simulators.faults import Fault, write_faults

SPEC = LinkSpec(port=3, zone=17, remote_ip="10.0.8.50")
LINK = RouterLink(3, 17, "10.0.8.50")
CONNECT_TIMEOUT = 2.0
COMMAND_TIMEOUT = 1.5


@pytest.fixture(params=["mcdata_eclipse", "nishan_ips3000"])
def platform(request):
    return request.param


@pytest.fixture
def quick(sim_target):
    """A driver factory with short timeouts, so a fault is noticed within a couple of seconds."""

    def make(sim):
        return get_driver(sim_target(sim, connect_timeout=CONNECT_TIMEOUT, command_timeout=COMMAND_TIMEOUT))

    return make


class Stopwatch:
    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.seconds = time.monotonic() - self.start


def test_refused_login_raises_auth_error_at_once(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("refuse_login", count=1)])
    with Stopwatch() as watch, pytest.raises(RouterAuthError):
        quick(sim).connect()
    assert watch.seconds < 3
    quick(sim).connect()  # the fault was spent: the next login works


def test_session_limit_raises_auth_error_at_once(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("session_limit")])
    with Stopwatch() as watch, pytest.raises(RouterAuthError, match="(?i)session"):
        quick(sim).connect()
    assert watch.seconds < 3


def test_a_prompt_that_never_comes_times_out_within_the_connect_timeout(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("stall_before_prompt")])
    with Stopwatch() as watch, pytest.raises(RouterTimeout, match=f"no prompt within {CONNECT_TIMEOUT:g} s"):
        quick(sim).connect()
    assert sim.transcript().splitlines()[-1].endswith("'< ********'")  # the password, then silence
    assert watch.seconds < CONNECT_TIMEOUT + 5  # only a guard against hanging


def test_a_short_stall_before_the_prompt_is_only_slow(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("stall_before_prompt", seconds=0.6, count=1)])
    driver = quick(sim)
    driver.connect()
    assert sim.faults == [Fault("stall_before_prompt", seconds=0.6, count=0)]  # it fired, and was waited out
    assert driver.list_links() == []
    driver.close()


def test_a_drop_before_apply_loses_the_command_and_the_connection(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("drop_before_apply", count=1)])
    driver = quick(sim)
    driver.connect()
    with Stopwatch() as watch, pytest.raises(RouterConnectError):
        driver.add_link(SPEC)
    assert watch.seconds < 3
    assert not driver.is_alive()
    assert sim.links() == []
    retry = quick(sim)
    retry.connect()
    retry.add_link(SPEC)
    assert sim.links() == [LINK]
    retry.close()


def test_a_drop_after_apply_keeps_the_change_but_loses_the_reply(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("drop_after_apply", count=1)])
    driver = quick(sim)
    driver.connect()
    assert driver.list_links() == []  # read-only commands are not selected without a pattern
    with Stopwatch() as watch, pytest.raises(RouterConnectError):
        driver.add_link(SPEC)
    assert watch.seconds < 3
    assert sim.links() == [LINK]
    retry = quick(sim)
    retry.connect()
    with pytest.raises(LinkExists):
        retry.add_link(SPEC)
    retry.close()


def test_a_command_that_is_never_answered_times_out_within_the_command_timeout(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("stall_command", match="^(show ifcp|ifcp list)", count=1)])
    driver = quick(sim)
    driver.connect()
    with Stopwatch() as watch, pytest.raises(RouterTimeout):
        driver.list_links()
    assert sim.faults[0].count == 0
    assert sim.transcript().splitlines()[-1].endswith(("'< show ifcp session'", "'< ifcp list'"))  # never answered
    assert watch.seconds < COMMAND_TIMEOUT + 5  # only a guard against hanging
    assert not driver.is_alive()


def test_garbled_output_raises_garbled_output_and_the_session_survives(sim_factory, quick, platform):
    pattern = "^(show ifcp|ifcp (list|create)|ifcp session add)"
    sim = sim_factory(platform, faults=[Fault("garble", match=pattern, count=2)])
    driver = quick(sim)
    driver.connect()
    with pytest.raises(GarbledOutput):
        driver.add_link(SPEC)
    with pytest.raises(GarbledOutput):
        driver.list_links()
    assert driver.list_links() == [LINK]  # the add happened; only its reply was damaged


def test_faults_can_be_armed_on_a_running_subprocess_simulator(sim_process_factory, sim_target, tmp_path, platform):
    process = sim_process_factory(platform, state_dir=tmp_path)
    driver = get_driver(sim_target(process, connect_timeout=CONNECT_TIMEOUT, command_timeout=COMMAND_TIMEOUT))
    driver.connect()
    write_faults(tmp_path, [Fault("drop_after_apply", count=1)])
    with pytest.raises(RouterConnectError):
        driver.add_link(SPEC)
    again = get_driver(sim_target(process))
    again.connect()
    assert again.list_links() == [LINK]
    again.close()


def test_faults_can_be_given_on_the_command_line(sim_process_factory, sim_target, platform):
    process = sim_process_factory(platform, args=["--fault", "refuse_login,count=1"])
    with pytest.raises(RouterAuthError):
        get_driver(sim_target(process)).connect()
    driver = get_driver(sim_target(process))
    driver.connect()
    driver.close()


def test_fragmented_output_and_prompts_do_not_confuse_the_driver(sim_factory, quick, platform):
    sim = sim_factory(platform, faults=[Fault("fragment", match="^(ifcp|show)", count=3)])
    driver = quick(sim)
    driver.connect()
    driver.add_link(SPEC)
    assert driver.list_links() == [LINK]
    with pytest.raises(LinkExists):
        driver.add_link(SPEC)
    assert sim.faults[0].count == 0

"""Every fault knob of the FOS and MDS simulators gives their drivers a typed error saying what went
wrong, never a hang, and the next session sees the true state. Timing is not asserted: the only
clock readings are guards against hanging, far above every timeout in play."""

from __future__ import annotations

import time

import pytest

from routers.drivers import get_driver
from routers.drivers.base import (
    GarbledOutput,
    LinkSpec,
    RouterAuthError,
    RouterConnectError,
    RouterLink,
    RouterTimeout,
)
from simulators.faults import Fault

CONNECT_TIMEOUT = 2.0
COMMAND_TIMEOUT = 1.5
HANG_GUARD = 30.0  # seconds: a wait that was not bounded by the driver's timeouts
SPECS = {
    "brocade_fos": LinkSpec(24, 7, "198.18.1.1", "198.18.0.1", "50:00:09:73:98:06:c8:08", ("10:00:00:10:9b:5e:b0:01",)),
    "cisco_mds": LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", "50:00:09:73:98:06:c8:08", ("10:00:00:10:9b:5e:b0:01",)),
}
LISTING = {"brocade_fos": "^(portcfgshow|cfgshow)", "cisco_mds": "^show running-config"}
# Every read a listing makes: each is judged by its structure when it arrives damaged.
GARBLED = {"brocade_fos": ["^cfgshow", "^portshow fciptunnel", "^portcfgshow fcipcircuit"],
           "cisco_mds": ["^show running-config fcip", "^show zone vsan", "^show zoneset active"]}


@pytest.fixture(params=[("brocade_fos", "ssh"), ("brocade_fos", "telnet"), ("cisco_mds", "ssh")],
                ids=["fos-ssh", "fos-telnet", "mds-ssh"])
def case(request):
    return request.param


@pytest.fixture
def start(sim_factory, sim_target, case):
    """start(faults) -> (sim, make_driver): a simulator of the case's platform and a quick-timeout driver factory."""
    platform, transport = case
    drivers = []

    def run(faults=()):
        sim = sim_factory(platform, **{transport: ("127.0.0.1", 0)}, faults=list(faults))

        def make(command_timeout=COMMAND_TIMEOUT):
            driver = get_driver(sim_target(sim, transport, connect_timeout=CONNECT_TIMEOUT,
                                           command_timeout=command_timeout))
            drivers.append(driver)
            return driver

        return sim, make

    yield run
    for driver in drivers:
        driver.close()


def test_a_refused_login_raises_auth_error_at_once(start):
    sim, make = start([Fault("refuse_login", count=1)])
    started = time.monotonic()
    with pytest.raises(RouterAuthError, match="(?i)authentication failed|login incorrect"):
        make().connect()
    assert time.monotonic() - started < HANG_GUARD
    make().connect()


def test_the_session_limit_raises_a_typed_error_at_once(start, case):
    sim, make = start([Fault("session_limit", count=1)])
    # Over telnet the message is always read: an auth error. Over SSH the device may close the channel
    # before netmiko reads it (netmiko writes first, into a closed channel): then it is a connect error.
    expected = RouterAuthError if case[1] == "telnet" else (RouterAuthError, RouterConnectError)
    started = time.monotonic()
    with pytest.raises(expected, match="(?i)session|exceeded|closed"):
        make().connect()
    assert time.monotonic() - started < HANG_GUARD
    make().connect()


def test_a_prompt_that_never_comes_times_out_in_the_login(start):
    sim, make = start([Fault("stall_before_prompt")])
    started = time.monotonic()
    with pytest.raises(RouterTimeout, match="^connect: .*(?:no prompt within|Pattern not detected)"):
        make().connect()
    assert time.monotonic() - started < HANG_GUARD


def test_a_command_that_is_never_answered_times_out_and_the_session_is_dropped(start, case):
    sim, make = start()
    driver = make()
    driver.connect()
    sim.faults = [Fault("stall_command", match=LISTING[case[0]], count=1)]
    started = time.monotonic()
    with pytest.raises(RouterTimeout, match=f"{LISTING[case[0]]}.*: Pattern not detected"):
        driver.list_links()
    assert time.monotonic() - started < HANG_GUARD
    assert sim.faults[0].count == 0  # it fired: the listing reached the router and was never answered
    assert not driver.is_alive()
    again = make()
    again.connect()
    assert again.list_links() == []


def test_a_drop_before_apply_changes_nothing(start, case):
    sim, make = start([Fault("drop_before_apply", count=1)])
    driver = make()
    driver.connect()
    with pytest.raises(RouterConnectError):
        driver.add_link(SPECS[case[0]])
    assert sim.links() == []


def test_a_drop_after_apply_keeps_the_change_and_the_retry_converges(start, case):
    spec = SPECS[case[0]]
    sim, make = start([Fault("drop_after_apply", count=1)])
    driver = make()
    driver.connect()
    started = time.monotonic()
    with pytest.raises(RouterConnectError, match="connection closed|closed the session"):
        driver.add_link(spec)
    assert time.monotonic() - started < HANG_GUARD
    retry = make()
    retry.connect()
    try:
        retry.add_link(spec)
    except Exception as exc:  # noqa: BLE001 - LinkExists is as good as success here
        assert type(exc).__name__ == "LinkExists"
    assert sim.links() == [RouterLink(spec.port, spec.zone, spec.remote_ip, "up")]


@pytest.mark.parametrize("read", range(3))
def test_a_garbled_listing_raises_garbled_output_and_the_session_survives(start, case, read):
    spec = SPECS[case[0]]
    sim, make = start()
    driver = make()
    driver.connect()
    driver.add_link(spec)
    sim.faults = [Fault("garble", match=GARBLED[case[0]][read], count=1)]
    with pytest.raises(GarbledOutput, match=r": (unrecognised|no |not |a |an |unknown|unreadable|the )"):
        driver.list_links()
    assert sim.faults[0].count == 0  # the damaged reply was the one read
    assert driver.list_links() == [RouterLink(spec.port, spec.zone, spec.remote_ip, "up")]


def test_a_garbled_pager_prompt_times_out_and_a_new_session_reads_the_truth(sim_factory, sim_target):
    spec = SPECS["brocade_fos"]
    sim = sim_factory("brocade_fos", telnet=("127.0.0.1", 0))  # telnet sessions page
    first = get_driver(sim_target(sim, "telnet", command_timeout=COMMAND_TIMEOUT))
    first.connect()
    first.add_link(spec)
    for host in range(2, 8):  # a cfgshow longer than one page
        first.zoning_edit(f'zonecreate "other{host}", "10:00:00:10:9b:5e:b0:{host:02x}; {spec.wwn}"')
    first.save()
    sim.faults = [Fault("garble", match="^cfgshow", count=1)]
    with pytest.raises((GarbledOutput, RouterTimeout)):
        first.list_links()
    first.close()
    again = get_driver(sim_target(sim, "telnet"))
    with again:
        assert again.run_paged("cfgshow").count("zone:") >= 8
        assert again.list_links() == [RouterLink(spec.port, spec.zone, spec.remote_ip, "up")]


def test_output_and_prompts_in_small_pieces_are_read_whole(start, case):
    """TCP may cut a reply anywhere: a listing, the pager's and the shell's prompts arriving 1-6 characters
    at a time are read as if they had come at once. The pieces come 5 ms apart, a few hundred bytes a second,
    so the wait per command is longer than the other tests'."""
    spec = SPECS[case[0]]
    sim, make = start([Fault("fragment", match=LISTING[case[0]], count=2)])
    driver = make(command_timeout=20)
    driver.connect()
    assert driver.list_links() == []
    driver.add_link(spec)
    assert driver.list_links() == [RouterLink(spec.port, spec.zone, spec.remote_ip, "up")]
    assert sim.faults[0].count == 0  # every piece of it was cut up
    assert sim.links() == [RouterLink(spec.port, spec.zone, spec.remote_ip, "up")]

"""Round trips: each platform's add, remove and list through the real driver over real sockets, counted by the
simulator (simulators.roundtrips), beside the least its commands need.

Each operation is what the engine does on a pooled, logged-in session (operations/steps.py): the change,
then the read that verifies it (a listing after an add, ``remnants`` after a remove). FOS and MDS start
with production zoning in force, as a real fabric does, and are reached over SSH; there a session of its
own per operation books its set-up as its login and leaves the commands as they are on the pooled one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from routers.drivers.base import LinkSpec, RouterDriver
from simulators.roundtrips import LEAST, least, turns_between

WWN = "50:06:01:60:3b:20:11:22"
HOST = "10:00:00:90:fa:c7:43:10"
SPECS = {
    "mcdata_eclipse": LinkSpec(port=3, zone=7, remote_ip="198.18.1.1"),
    "nishan_ips3000": LinkSpec(port=3, zone=7, remote_ip="198.18.1.1"),
    "brocade_fos": LinkSpec(port=24, zone=7, remote_ip="198.18.1.1", local_ip="198.18.0.1", wwn=WWN,
                            initiators=(HOST,)),
    "cisco_mds": LinkSpec(port=5, zone=7, remote_ip="198.18.1.1", local_ip="198.18.0.1", wwn=WWN,
                          initiators=(HOST,)),
}
def operations(driver: RouterDriver, spec: LinkSpec) -> dict[str, Callable[[], object]]:
    def add() -> None:
        driver.add_link(spec)
        assert spec.key in {link.key for link in driver.list_links()}

    def remove() -> None:
        driver.remove_link(spec)
        assert not driver.remnants(spec)

    return {"add": add, "list": driver.list_links, "remove": remove}


def measure(sim, driver: RouterDriver, spec: LinkSpec) -> dict[str, dict[str, int]]:
    counted = {}
    for name, operation in operations(driver, spec).items():
        before = sim.round_trips()
        operation()
        counted[name] = turns_between(before, sim.round_trips())
    return counted


@pytest.mark.parametrize("platform", sorted(LEAST))
def test_each_operation_takes_at_most_one_round_trip_more_than_its_commands_need(platform, sim_factory, driver_for):
    transport = {"ssh": ("127.0.0.1", 0)} if platform in ("brocade_fos", "cisco_mds") else {}
    sim = sim_factory(platform, production_zoning=True, **transport)
    driver = driver_for(sim)
    counted = measure(sim, driver, SPECS[platform])
    print(platform, {name: (turns["commands"], least(platform, name)) for name, turns in counted.items()})
    for name, turns in counted.items():
        assert turns["login"] == 0 and turns["sessions"] == 0  # the pooled session: nobody logged in again
        assert turns["commands"] >= least(platform, name)
        assert turns["commands"] <= least(platform, name) + 1, name


@pytest.mark.parametrize("platform", ["brocade_fos", "cisco_mds"])
def test_an_ssh_sessions_set_up_is_its_login_so_a_session_per_operation_stays_near_the_least(platform, sim_factory,
                                                                                             driver_for):
    """A fresh session per operation: netmiko's preparation (the prompt read with an empty line, NX-OS's
    terminal width and length) and the driver's `terminal dont-ask` are booked as the session's login, so
    the operation's commands are what they take on a pooled session, and so is the logout that ends the
    session."""
    sim = sim_factory(platform, production_zoning=True, ssh=("127.0.0.1", 0))
    spec = SPECS[platform]
    counted = {}
    for name in ("add", "list", "remove"):
        before = sim.round_trips()
        driver = driver_for(sim)
        set_up = turns_between(before, sim.round_trips())
        assert set_up["commands"] == 0 and set_up["login"] > 0 and set_up["sessions"] == 1, set_up
        operations(driver, spec)[name]()
        counted[name] = turns_between(before, sim.round_trips())
        done = sim.round_trips()
        driver.close()
        assert turns_between(done, sim.round_trips()) == {"commands": 0, "login": 1, "sessions": 0}  # exit
    print(platform, {name: (turns["commands"], turns["login"], least(platform, name))
                     for name, turns in counted.items()})
    for name, turns in counted.items():
        assert turns["login"] > 0, name
        assert least(platform, name) <= turns["commands"] <= least(platform, name) + 1, name


@pytest.mark.parametrize("platform", sorted(LEAST))
def test_a_save_after_a_change_takes_at_most_one_round_trip_more_than_it_needs(platform, sim_factory, driver_for):
    """The save the engine sends after each change (FLEXZONE_OPS_SAVE_CONFIG=each): on NX-OS the copy alone,
    whose reply proves it (netmiko's own save_config read the prompt twice before it)."""
    transport = {"ssh": ("127.0.0.1", 0)} if platform in ("brocade_fos", "cisco_mds") else {}
    sim = sim_factory(platform, production_zoning=platform in ("brocade_fos", "cisco_mds"), **transport)
    driver = driver_for(sim)
    operations(driver, SPECS[platform])["add"]()
    before = sim.round_trips()
    driver.save_config()
    turns = turns_between(before, sim.round_trips())
    assert turns["login"] == 0 and least(platform, "save") <= turns["commands"] <= least(platform, "save") + 1


def test_a_terminal_setting_sent_after_a_real_command_is_a_command_turn(sim_factory, driver_for):
    sim = sim_factory("cisco_mds", ssh=("127.0.0.1", 0))
    driver = driver_for(sim, connect=False)
    before = sim.round_trips()
    driver.connect()
    driver.run("show clock")
    after_command = sim.round_trips()
    driver.run("terminal length 0")
    driver.conn.find_prompt()  # an empty line
    assert turns_between(after_command, sim.round_trips()) == {"commands": 2, "login": 0, "sessions": 0}
    assert turns_between(before, after_command)["commands"] == 1


def test_a_turn_that_sends_preparation_and_a_real_command_together_is_a_command_turn(sim_factory, driver_for):
    sim = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    conn = driver_for(sim).conn
    before = sim.round_trips()
    conn.write_channel("\rcfgshow\r")  # an empty line, still set-up alone, and a command in the same send
    conn.read_until_pattern(pattern=r"cfgshow[\s\S]*>\s*$", read_timeout=5)
    assert turns_between(before, sim.round_trips()) == {"commands": 1, "login": 0, "sessions": 0}


def test_a_telnet_login_is_counted_apart_from_the_commands(sim_factory, driver_for):
    sim = sim_factory("nishan_ips3000")
    before = sim.round_trips()
    driver = driver_for(sim)
    login = turns_between(before, sim.round_trips())
    assert login == {"login": 2, "commands": 0, "sessions": 1}  # username, password; the prompt read once
    before = sim.round_trips()
    driver.list_links()
    assert turns_between(before, sim.round_trips()) == {"commands": 1, "login": 0, "sessions": 0}
    before = sim.round_trips()
    driver.close()  # the logout, sent alone: paid once per session, as the login
    assert turns_between(before, sim.round_trips()) == {"commands": 0, "login": 1, "sessions": 0}


def test_a_logout_sent_together_with_a_command_is_a_command_turn(sim_factory, driver_for):
    sim = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    conn = driver_for(sim).conn
    before = sim.round_trips()
    conn.write_channel("cfgshow\rexit\r")  # the session ends with this turn, which carried a command too
    conn.read_until_pattern(pattern=r"cfgshow", read_timeout=5)
    deadline = time.monotonic() + 5
    while turns_between(before, sim.round_trips())["commands"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the session's end, had it moved the turn
    assert turns_between(before, sim.round_trips()) == {"commands": 1, "login": 0, "sessions": 0}


def test_a_simulator_with_a_state_directory_keeps_its_count_there_for_another_process(sim_factory, driver_for,
                                                                                       tmp_path):
    from simulators.roundtrips import read_round_trips

    sim = sim_factory("nishan_ips3000", state_dir=tmp_path)
    driver_for(sim).list_links()
    kept = read_round_trips(tmp_path)
    assert kept["commands"] >= 1 and kept["login"] == 2 and kept == sim.round_trips()


def test_lines_sent_together_are_one_turn_and_a_keepalive_is_none(sim_factory, driver_for):
    sim = sim_factory("cisco_mds", ssh=("127.0.0.1", 0))
    driver = driver_for(sim)
    conn = driver.conn
    before = sim.round_trips()
    conn.write_channel("\0")  # netmiko's SSH keepalive (is_alive) waits for nothing
    conn.write_channel("show clock\nshow clock\n")
    output = conn.read_until_pattern(pattern=r"show clock[\s\S]*show clock[\s\S]*#\s*$", read_timeout=5)
    assert output.count("show clock") == 2
    assert turns_between(before, sim.round_trips())["commands"] == 1

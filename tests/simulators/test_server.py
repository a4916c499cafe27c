"""The simulator framework over real sockets: telnet NVT, newlines, echo, login, faults file, binding."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from netmiko._telnetlib import telnetlib

from routers.drivers import get_driver
from routers.drivers.base import RouterLink
from simulators import PERSONALITIES, available_platforms
from simulators.faults import Fault, FaultBook, parse_fault, read_faults, write_faults
from simulators.mcdata_eclipse import EclipsePersonality
from simulators.process import SimProcess
from simulators.server import SimRouter, check_bind_host
from tests.support.sims import PASSWORD, USERNAME

ROOT = Path(__file__).resolve().parents[2]  # where `python -m simulators` finds its package
PROMPT = b"ECL2640-A:eosi# "


def login(sim: SimRouter, user: str = USERNAME, password: str = PASSWORD) -> telnetlib.Telnet:
    host, port = sim.addresses["telnet"]
    client = telnetlib.Telnet(host, port, timeout=5)
    client.read_until(b"Username: ", 5)
    client.write(user.encode() + b"\r")
    client.read_until(b"Password: ", 5)
    client.write(password.encode() + b"\r")
    assert client.read_until(PROMPT, 5).endswith(PROMPT)
    return client


def read_quiet(client: telnetlib.Telnet, settle: float = 0.3) -> bytes:
    time.sleep(settle)
    return client.read_very_eager()


@pytest.mark.parametrize("newline", [b"\r\n", b"\r\x00", b"\r", b"\n"])
def test_each_telnet_newline_form_ends_a_line_exactly_once(sim_factory, newline):
    sim = sim_factory("mcdata_eclipse")
    client = login(sim)
    client.write(b"show version" + newline)
    reply = client.read_until(PROMPT, 5) + read_quiet(client)
    assert reply.count(PROMPT) == 1
    assert reply.startswith(b"show version\r\n")
    assert b"E/OSi" in reply
    client.close()


def test_an_empty_line_reprints_the_prompt(sim_factory):
    sim = sim_factory("mcdata_eclipse")
    client = login(sim)
    client.write(b"\r\n")
    assert client.read_until(PROMPT, 5) + read_quiet(client) == b"\r\n" + PROMPT
    client.close()


def test_the_password_is_not_echoed_and_not_logged(sim_factory, tmp_path):
    sim = sim_factory("mcdata_eclipse", state_dir=tmp_path)
    host, port = sim.addresses["telnet"]
    client = telnetlib.Telnet(host, port, timeout=5)
    client.read_until(b"Username: ", 5)
    client.write(USERNAME.encode() + b"\r")
    client.read_until(b"Password: ", 5)
    client.write(PASSWORD.encode() + b"\r")
    seen = client.read_until(PROMPT, 5)
    client.close()
    assert PASSWORD.encode() not in seen
    assert PASSWORD not in (tmp_path / "transcript.log").read_text()
    assert USERNAME in sim.transcript()


def test_wrong_password_prints_the_failure_and_asks_again(sim_factory):
    sim = sim_factory("mcdata_eclipse")
    host, port = sim.addresses["telnet"]
    client = telnetlib.Telnet(host, port, timeout=5)
    client.read_until(b"Username: ", 5)
    client.write(b"admin\r")
    client.read_until(b"Password: ", 5)
    client.write(b"wrong\r")
    assert b"% Authentication failed." in client.read_until(b"Username: ", 5)
    client.close()


def test_backspace_edits_the_line_before_it_runs(sim_factory):
    sim = sim_factory("mcdata_eclipse")
    client = login(sim)
    client.write(b"show versiox\x7fn\r\n")
    assert b"McDATA Eclipse 2640" in client.read_until(PROMPT, 5)
    client.close()


def test_typeahead_during_the_login_delay_is_discarded(sim_factory):
    sim = sim_factory("nishan_ips3000", scale=1.0, timing=None)
    sim.timing.connect_to_login, sim.timing.after_password, sim.timing.jitter = 0.0, 0.5, 0.0
    host, port = sim.addresses["telnet"]
    client = telnetlib.Telnet(host, port, timeout=5)
    client.read_until(b"login: ", 5)
    client.write(USERNAME.encode() + b"\r")
    client.read_until(b"Password: ", 5)
    client.write(PASSWORD.encode() + b"\r" + b"\r\n" * 5)
    reply = client.read_until(b"ips3000-a> ", 5) + read_quiet(client, 0.5)
    assert reply.count(b"ips3000-a> ") == 1
    client.close()


def test_state_listeners_hear_every_change(sim_factory):
    sim = sim_factory("mcdata_eclipse")
    heard: list[list[RouterLink]] = []
    sim.add_state_listener(heard.append)
    client = login(sim)
    client.write(b"ifcp session add fc-port 1 zone 2 remote-gateway 192.0.2.9\r\n")
    client.read_until(PROMPT, 5)
    client.close()
    assert heard == [[RouterLink(1, 2, "192.0.2.9")]]
    assert sim.links() == [RouterLink(1, 2, "192.0.2.9")]


def test_faults_written_to_the_state_dir_reach_a_running_simulator(sim_factory, tmp_path):
    sim = sim_factory("mcdata_eclipse", state_dir=tmp_path)
    write_faults(tmp_path, [Fault("garble", match="^show version", count=1)])
    client = login(sim)
    client.write(b"show version\r\n")
    first = client.read_until(PROMPT, 5)
    client.write(b"show version\r\n")
    second = client.read_until(PROMPT, 5)
    client.close()
    assert b"McDATA Eclipse 2640" not in first
    assert b"McDATA Eclipse 2640" in second
    assert read_faults(tmp_path) == [Fault("garble", match="^show version", count=0)]


def test_fault_options_parse_with_count_seconds_and_a_regex_containing_commas():
    assert parse_fault("drop-after-apply,count=1") == Fault("drop_after_apply", count=1)
    assert parse_fault("stall_before_prompt,seconds=2.5") == Fault("stall_before_prompt", seconds=2.5)
    assert parse_fault("garble,count=2,match=^show (a,b)") == Fault("garble", match="^show (a,b)", count=2)
    with pytest.raises(ValueError):
        parse_fault("explode")


def test_faults_without_a_pattern_select_mutating_commands_for_drops_and_any_command_otherwise():
    assert Fault("drop_after_apply").selects("ifcp session add", mutating=True)
    assert not Fault("drop_after_apply").selects("show ifcp session", mutating=False)
    assert Fault("garble").selects("show ifcp session", mutating=False)
    assert not Fault("garble", count=0).selects("show ifcp session", mutating=False)


def test_session_limit_is_enforced_when_all_sessions_are_busy(sim_factory):
    sim = sim_factory("mcdata_eclipse", max_sessions=1)
    first = login(sim)
    host, port = sim.addresses["telnet"]
    second = telnetlib.Telnet(host, port, timeout=5)
    assert b"management sessions are in use" in second.read_all()
    first.close()
    second.close()


def test_binding_is_limited_to_loopback_and_the_lab_network():
    check_bind_host("127.0.0.1")
    check_bind_host("::1")
    check_bind_host("198.19.4.2")
    for host in ("0.0.0.0", "10.0.8.50", "192.0.2.1"):
        with pytest.raises(ValueError):
            check_bind_host(host)
    with pytest.raises(ValueError):
        SimRouter("mcdata_eclipse", telnet="0.0.0.0:2323")


def test_a_platform_without_ssh_refuses_an_ssh_address():
    with pytest.raises(ValueError, match="telnet only"):
        SimRouter("nishan_ips3000", ssh="127.0.0.1:0")


def test_the_registry_names_every_platform_and_the_ifcp_ones_are_marked_synthetic():
    assert set(PERSONALITIES) == {"mcdata_eclipse", "nishan_ips3000", "brocade_fos", "cisco_mds"}
    assert {"mcdata_eclipse", "nishan_ips3000"} <= set(available_platforms())
    assert PERSONALITIES["mcdata_eclipse"].synthetic and PERSONALITIES["nishan_ips3000"].synthetic


def test_stop_closes_open_sessions_and_frees_the_port_for_a_restart(sim_factory):
    sim = sim_factory("nishan_ips3000")
    host, port = sim.addresses["telnet"]
    client = telnetlib.Telnet(host, port, timeout=5)
    client.read_until(b"login: ", 5)
    sim.stop()
    assert client.read_all() is not None
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's listener does
        probe.bind((host, port))
        probe.listen()


def test_an_idle_session_is_logged_out_and_the_driver_notices(sim_factory, driver_for):
    sim = sim_factory("nishan_ips3000", idle_timeout=0.5)
    driver = driver_for(sim)
    assert driver.list_links() == []
    time.sleep(1.0)
    assert not driver.is_alive()
    assert "auto-logout" in sim.transcript()


def test_the_faults_command_arms_shows_and_clears_faults_in_a_state_dir(tmp_path, capsys):
    from simulators.faults import main

    assert main([str(tmp_path), "drop_after_apply,count=1", "garble,match=^show"]) == 0
    assert read_faults(tmp_path) == [Fault("drop_after_apply", count=1), Fault("garble", match="^show")]
    assert main([str(tmp_path), "--show"]) == 0
    assert '"drop_after_apply"' in capsys.readouterr().out
    assert main([str(tmp_path)]) == 0
    assert read_faults(tmp_path) == []


def test_the_simulator_reads_its_password_from_a_file_and_keeps_it_off_the_command_line(tmp_path, sim_target):
    secret = tmp_path / "secret"
    secret.write_text("-dash-first-Pa55\n")
    options = ["--username", USERNAME, "--password-file", str(secret), "--timing-scale", "0"]
    process = SimProcess("nishan_ips3000", telnet="127.0.0.1:0", args=options)
    try:
        process.start()
        assert "dash-first" not in Path(f"/proc/{process.process.pid}/cmdline").read_text()
        driver = get_driver(sim_target(process, password="-dash-first-Pa55"))
        driver.connect()
        assert driver.list_links() == []
        driver.close()
    finally:
        process.stop()
    secret.write_text("")
    empty = subprocess.run([sys.executable, "-m", "simulators", "--platform", "nishan_ips3000", "--password-file",
                            str(secret)], capture_output=True, text=True, timeout=30, cwd=ROOT)  # fmt: skip
    assert empty.returncode == 2 and "is empty" in empty.stderr


class RecordingEclipse(EclipsePersonality):
    """The Eclipse CLI, remembering the sessions that ended (the hook FOS uses to abort a zoning
    transaction) and counting them in its state, to show the change is persisted."""

    def __init__(self, state, hostname):
        super().__init__(state, hostname)
        self.ended: list[tuple[int, str]] = []

    def session_ended(self, session):
        self.ended.append((session.id, session.username))
        self.state.running["sessions_ended"] = len(self.ended)


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def test_every_way_a_session_ends_is_told_to_the_personality_with_a_distinct_session_id(sim_factory, tmp_path):
    sim = sim_factory(RecordingEclipse, telnet=("127.0.0.1", 0), state_dir=tmp_path, idle_timeout=0.5,
                      faults=[Fault("drop_before_apply", match="^show version$", count=1)])
    ended = sim.personality.ended
    by_exit = login(sim)
    by_exit.write(b"exit\r\n")
    assert wait_until(lambda: len(ended) == 1)
    login(sim).close()  # EOF
    assert wait_until(lambda: len(ended) == 2)
    dropped = login(sim)
    dropped.write(b"show version\r\n")
    assert wait_until(lambda: len(ended) == 3)
    idle = login(sim)  # kept open (a dropped reference would close it) and left idle
    assert wait_until(lambda: len(ended) == 4)
    assert "auto-logout" in sim.transcript()
    open_at_stop = login(sim)
    sim.stop()
    assert [session_id for session_id, _ in ended] == [1, 2, 3, 4, 5]
    assert {user for _, user in ended} == {USERNAME}
    assert json.loads((tmp_path / "state.json").read_text())["running"]["sessions_ended"] == 5
    idle.close()
    open_at_stop.close()


def test_the_personality_reads_the_simulators_fault_book(sim_factory):
    sim = sim_factory("brocade_fos")
    assert sim.personality.faults is sim.faults_book
    assert not sim.personality.zoning_locked()
    sim.add_fault("zoning_locked")
    assert sim.personality.zoning_locked()
    assert sim.personality.zoning_locked()  # asking never spends it
    sim.clear_faults()
    assert not sim.personality.zoning_locked()


def test_zoning_locked_is_a_state_fault_that_checks_never_spend():
    assert parse_fault("zoning-locked") == Fault("zoning_locked")
    book = FaultBook([Fault("zoning_locked", count=2)])
    assert book.peek("zoning_locked", "", False) and book.peek("zoning_locked", "", False)
    assert book.get() == [Fault("zoning_locked", count=2)]
    assert book.take(("drop_before_apply", "garble"), "cfgsave", True) is None  # never fires as a command fault
    assert not FaultBook([Fault("zoning_locked", count=0)]).peek("zoning_locked", "", False)


def test_the_faults_command_arms_and_clears_zoning_locked(tmp_path):
    from simulators.faults import main

    assert main([str(tmp_path), "zoning_locked"]) == 0
    assert read_faults(tmp_path) == [Fault("zoning_locked")]
    assert main([str(tmp_path)]) == 0
    assert read_faults(tmp_path) == []


def test_production_zoning_seeds_a_new_state_only_and_persists_it(tmp_path):
    first = SimRouter("brocade_fos", state_dir=tmp_path, production_zoning=True)
    stored = json.loads((tmp_path / "state.json").read_text())
    assert stored["running"]["zoning"]["effective"]["cfg"] == "PROD"
    assert stored["saved"]["zoning"] == stored["running"]["zoning"]
    first.personality.state.running["zoning"]["effective"] = None
    first.state_changed()
    again = SimRouter("brocade_fos", state_dir=tmp_path, production_zoning=True)
    assert again.state().running["zoning"]["effective"] is None  # an existing state is never reseeded
    assert SimRouter("cisco_mds", production_zoning=True).state().running["active"]["1"]["name"] == "PROD"


def test_production_zoning_is_nothing_on_a_platform_without_zoning(tmp_path):
    plain = SimRouter("mcdata_eclipse", state_dir=tmp_path / "plain").state()
    seeded = SimRouter("mcdata_eclipse", state_dir=tmp_path / "seeded", production_zoning=True).state()
    assert seeded == plain


def test_the_production_zoning_option_reaches_the_simulator():
    from simulators.__main__ import build_parser

    assert build_parser().parse_args(["--platform", "cisco_mds", "--production-zoning"]).production_zoning
    assert not build_parser().parse_args(["--platform", "cisco_mds"]).production_zoning


def test_the_peak_of_each_account_s_sessions_open_at_once_is_kept(sim_factory):
    """The soak's session budget check reads how many of flexzone's sessions a router had open at once,
    apart from another admin's (an account of its own)."""
    sim = sim_factory("mcdata_eclipse", accounts={"other-admin": "other-secret"})
    first, second, other = login(sim), login(sim), login(sim, "other-admin", "other-secret")
    first.close()
    third = login(sim)
    assert sim.peak_by_account == {USERNAME: 2, "other-admin": 1}
    for client in (second, other, third):
        client.close()
    deadline = time.monotonic() + 5
    while sim.logged_in and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sim.logged_in and sim.peak_by_account[USERNAME] == 2

"""Simulator state survives restarts (in-process and `python -m simulators`); SSH transport basics."""

from __future__ import annotations

import json
import time

import paramiko
import pytest

from routers.drivers import get_driver
from routers.drivers.base import LinkSpec, RouterLink
from simulators.mcdata_eclipse import EclipsePersonality
from simulators.server import SimRouter
from tests.support.sims import PASSWORD, USERNAME

SPEC = LinkSpec(port=5, zone=9, remote_ip="2001:db8::7")
LINK = RouterLink(5, 9, "2001:db8::7")


@pytest.mark.parametrize("platform", ["mcdata_eclipse", "nishan_ips3000"])
def test_running_config_survives_an_in_process_restart(sim_factory, driver_for, tmp_path, platform):
    sim = sim_factory(platform, state_dir=tmp_path)
    driver = driver_for(sim)
    driver.add_link(SPEC)
    driver.close()
    sim.stop()
    again = sim_factory(platform, state_dir=tmp_path)
    assert again.links() == [LINK]
    assert driver_for(again).list_links() == [LINK]


def test_the_eclipse_saved_config_is_kept_apart_from_the_running_one(sim_factory, driver_for, tmp_path):
    sim = sim_factory("mcdata_eclipse", state_dir=tmp_path)
    driver = driver_for(sim)
    driver.add_link(SPEC)
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["saved"] == {}
    driver.save_config()
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["saved"]["connections"] == state["running"]["connections"]


@pytest.mark.parametrize("platform", ["mcdata_eclipse", "nishan_ips3000"])
def test_state_survives_a_subprocess_restart_on_the_same_port(sim_process_factory, sim_target, tmp_path, platform):
    first = sim_process_factory(platform, state_dir=tmp_path)
    driver = get_driver(sim_target(first))
    driver.connect()
    driver.add_link(SPEC)
    driver.save_config()
    driver.close()
    host, port = first.addresses["telnet"]
    assert first.stop() == 0
    second = sim_process_factory(platform, state_dir=tmp_path, telnet=f"{host}:{port}")
    assert second.addresses["telnet"] == (host, port)
    reader = get_driver(sim_target(second))
    reader.connect()
    assert reader.list_links() == [LINK]
    reader.close()
    assert "transcript.log" in {path.name for path in tmp_path.iterdir()}


def test_the_subprocess_refuses_a_non_loopback_address(sim_process_factory):
    with pytest.raises(RuntimeError, match="neither loopback"):
        sim_process_factory("nishan_ips3000", telnet="10.0.8.50:2323")


class EclipseOverSSH(EclipsePersonality):
    """The Eclipse grammar served over SSH, to exercise the framework's SSH transport."""

    transports = ("telnet", "ssh")


def ssh_shell(sim: SimRouter, password: str = PASSWORD) -> tuple[paramiko.SSHClient, paramiko.Channel]:
    host, port = sim.addresses["ssh"]
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect(host, port, USERNAME, password, allow_agent=False, look_for_keys=False, timeout=5)
    channel = client.invoke_shell()
    channel.settimeout(5)
    return client, channel


def read_until(channel: paramiko.Channel, marker: str, timeout: float = 5) -> str:
    data, deadline = "", time.monotonic() + timeout
    while marker not in data and time.monotonic() < deadline:
        data += channel.recv(4096).decode()
    return data


def test_ssh_sessions_log_in_with_a_password_and_echo_commands(sim_factory, tmp_path):
    sim = sim_factory(EclipseOverSSH, ssh=("127.0.0.1", 0), state_dir=tmp_path)
    client, channel = ssh_shell(sim)
    assert read_until(channel, "eosi# ").endswith("ECL2640-A:eosi# ")
    channel.resize_pty(width=132, height=50)  # out-of-band window change: not input, not the end
    channel.send("show version\r\n")
    reply = read_until(channel, "eosi# ")
    assert reply.startswith("show version\r\nMcDATA Eclipse 2640")
    assert reply.count("eosi# ") == 1
    client.close()
    assert (tmp_path / "ssh_host_key").stat().st_mode & 0o077 == 0


def test_ssh_refuses_a_wrong_password(sim_factory):
    sim = sim_factory(EclipseOverSSH, ssh=("127.0.0.1", 0))
    with pytest.raises(paramiko.AuthenticationException):
        ssh_shell(sim, password="wrong")


def test_the_ssh_host_key_is_kept_across_restarts(sim_factory, tmp_path):
    keys = []
    for _ in range(2):
        sim = sim_factory(EclipseOverSSH, ssh=("127.0.0.1", 0), state_dir=tmp_path)
        client, _channel = ssh_shell(sim)
        keys.append(client.get_transport().get_remote_server_key().get_base64())
        client.close()
        sim.stop()
    assert keys[0] == keys[1]

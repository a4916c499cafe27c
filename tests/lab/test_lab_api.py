"""The API experiments use: run and spawn in a site, router simulators on a site's management address."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.root

CONNECT = (
    "import socket, sys\n"
    "s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)\n"
    "s.settimeout(5)\n"
    "print(len(s.recv(4096)))\n"
)


def test_a_router_simulator_in_the_remote_site_is_reached_from_the_primary_across_the_wan(lab):
    ready = lab.start_router_sim("remote", "mcdata_eclipse", args=["--timing-scale", "0"])
    remote = lab.site("remote")
    assert ready["telnet"] == [remote.mgmt_addr, 23]
    greeting = lab.run("primary", [sys.executable, "-c", CONNECT, remote.mgmt_addr, "23"], timeout=30)
    assert int(greeting.stdout) > 0
    assert lab.status()["processes"]["sim-remote"] == ready["pid"]

    lab.stop("sim-remote")
    refused = lab.run("primary", [sys.executable, "-c", CONNECT, remote.mgmt_addr, "23"], check=False, timeout=30)
    assert "ConnectionRefusedError" in refused.stderr


def test_spawned_processes_run_inside_their_site_and_are_stopped_by_down(lab):
    proc = lab.spawn("sleeper", "primary", ["sleep", "60"])
    netns = lab.run("primary", ["ip", "netns", "identify", str(proc.pid)]).stdout.strip()
    assert netns == lab.site("primary").netns
    lab.down()
    assert proc.wait(timeout=5) is not None

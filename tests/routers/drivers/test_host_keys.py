"""SSH host keys: a router is logged into only when it presents the key trusted for it; otherwise the
login fails before any password is sent, naming the router and both fingerprints."""

from __future__ import annotations

import base64

import paramiko
import pytest

from routers import hostkeys
from routers.drivers import get_driver
from routers.drivers.base import RouterHostKeyError
from simulators.server import SimRouter


def other_key_line() -> str:
    blob = paramiko.ECDSAKey.generate().asbytes()
    return f"ecdsa-sha2-nistp256 {base64.b64encode(blob).decode()}"


@pytest.fixture
def fos(sim_factory):
    return sim_factory("brocade_fos", ssh=("127.0.0.1", 0))


def test_the_key_read_over_the_wire_is_the_simulators_own(fos):
    presented = hostkeys.fetch(*fos.addresses["ssh"])
    assert hostkeys.normalize(presented) == fos.host_key_line()
    assert hostkeys.fingerprint(presented).startswith("SHA256:") and fos.passwords_received == 0


def test_a_router_presenting_its_trusted_key_is_logged_into(fos, sim_target):
    driver = get_driver(sim_target(fos, "ssh", host_key=fos.host_key_line()))
    with driver:
        assert driver.list_links() == []
    assert fos.passwords_received == 1


def test_a_router_with_no_trusted_key_gets_no_password(fos, sim_target):
    driver = get_driver(sim_target(fos, "ssh", host_key=""))
    with pytest.raises(RouterHostKeyError) as refused:
        driver.connect()
    message = str(refused.value)
    assert "sim-brocade_fos" in message and hostkeys.fingerprint(fos.host_key_line()) in message
    assert "manage.py routers trust" in message
    assert fos.passwords_received == 0


def test_a_changed_host_key_fails_before_the_password_naming_both_fingerprints(fos, sim_target):
    trusted = other_key_line()  # what was trusted: the router (or a machine in the middle) now differs
    driver = get_driver(sim_target(fos, "ssh", host_key=trusted))
    with pytest.raises(RouterHostKeyError) as refused:
        driver.connect()
    message = str(refused.value)
    assert f"trusted {hostkeys.fingerprint(trusted)}" in message
    assert f"presented {hostkeys.fingerprint(fos.host_key_line())}" in message
    assert fos.passwords_received == 0


def test_a_simulator_keeps_its_host_key_in_its_state_directory(tmp_path):
    first = SimRouter("cisco_mds", ssh=("127.0.0.1", 0), state_dir=tmp_path, scale=0.0)
    second = SimRouter("cisco_mds", ssh=("127.0.0.1", 0), state_dir=tmp_path, scale=0.0)
    elsewhere = SimRouter("cisco_mds", ssh=("127.0.0.1", 0), state_dir=tmp_path / "other", scale=0.0)
    assert first.host_key_line() == second.host_key_line() != elsewhere.host_key_line()


@pytest.mark.parametrize("line", ["", "ssh-ed25519", "ssh-dss AAAAB3NzaC1kc3M=", "ssh-ed25519 !!!notbase64",
                                  "mismatch"])
def test_what_is_not_a_public_key_line_is_refused(line):
    if line == "mismatch":  # an ECDSA key's blob under the ed25519 name
        line = "ssh-ed25519 " + other_key_line().split()[1]
    with pytest.raises(hostkeys.HostKeyError):
        hostkeys.parse(line)

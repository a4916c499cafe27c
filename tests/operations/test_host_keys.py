"""Router host keys in the registry: `manage.py routers trust`, and an operation that meets a key
other than the trusted one fails before any password is sent, naming the router and both keys."""

from __future__ import annotations

import base64
import io

import paramiko
import pytest
from django.core.management import call_command

from operations import execute, submit
from registry.models import Router, Site
from routers import hostkeys
from tests.support.agreement import router_keys
from tests.support.sims import wire


@pytest.fixture
def mds_pair(demo, ops_settings, sim_factory, secrets_dir):
    sims = {}
    for router in (demo["primary_rtr"], demo["remote_rtr"]):
        sims[router.name] = sim_factory("cisco_mds", ssh=("127.0.0.1", 0))
        wire(router, sims[router.name], secrets_dir, command_timeout=5.0)
    return sims


def trust(*args: str) -> str:
    out = io.StringIO()
    call_command("routers", "trust", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_trust_records_the_key_the_router_presents_and_says_its_fingerprint(mds_pair):
    Router.objects.filter(transport="ssh").update(ssh_host_key="")
    said = trust("primary-rtr", "--yes")
    sim = mds_pair["primary-rtr"]
    fingerprint = hostkeys.fingerprint(sim.host_key_line())
    assert f"presents ssh-ed25519 {fingerprint}" in said and f"primary-rtr: trusted {fingerprint}" in said
    router = Router.objects.get(name="primary-rtr")
    assert router.ssh_host_key == sim.host_key_line() and router.ssh_host_key_sha256 == fingerprint
    assert Router.objects.get(name="remote-rtr").ssh_host_key == ""  # only the router named
    assert "already trusted" in trust("primary-rtr", "--yes")
    assert sim.passwords_received == 0


@pytest.mark.django_db
def test_an_add_meeting_a_changed_host_key_fails_before_any_password_naming_both(mds_pair):
    impostor = f"ecdsa-sha2-nistp256 {base64.b64encode(paramiko.ECDSAKey.generate().asbytes()).decode()}"
    Router.objects.filter(name="remote-rtr").update(ssh_host_key=impostor)
    op = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert op.state == "rolled_back", op.error  # primary-rtr's step, done first, is undone
    remote = mds_pair["remote-rtr"]
    assert "remote-rtr" in op.error and f"trusted {hostkeys.fingerprint(impostor)}" in op.error
    assert f"presented {hostkeys.fingerprint(remote.host_key_line())}" in op.error
    assert remote.passwords_received == 0
    assert all(router_keys(sim) == set() for sim in mds_pair.values())  # the other router's step undone
    assert op.attempts <= 3  # refused at once, not retried as if the network had hiccuped


@pytest.mark.django_db
def test_listing_says_which_routers_speak_plaintext(demo):
    Site.objects.get(name="primary-site")
    out = io.StringIO()
    call_command("routers", "list", stdout=out)
    lines = {line.split()[0]: line for line in out.getvalue().splitlines()}
    assert "plaintext" in lines["primary-rtr"] and "plaintext" in lines["remote-rtr"]

"""Fixtures shared by every test package: the fixed cast of the DICE testbed, and the plugins in
tests/support/fixtures (pytest reads `pytest_plugins` only here, in the top-level conftest)."""

import pytest

pytest_plugins = [
    "tests.support.fixtures.sims",
    "tests.support.fixtures.api",
    "tests.support.fixtures.operations",
    "tests.support.fixtures.cli",
    "tests.support.fixtures.fast_lists",
]


@pytest.fixture
def secrets_dir(tmp_path, settings):
    """Router secrets for this test only (generated, never committed)."""
    path = tmp_path / "secrets"
    settings.FLEXZONE_SECRETS_DIR = path
    return path


@pytest.fixture
def demo(db, secrets_dir):
    """The demo registry's two-site cast: primary-site (GSFC-DICEL1) with the Segment Server, remote-site with
    the Management Server, zones 1-3, XRAID1-3 (not the FCIP pair that `manage.py loaddemo` adds)."""
    from registry.demo import load_demo

    load_demo(fcip=False)
    from registry.models import Device, Router, Site, Zone

    return {
        "primary": Site.objects.get(name="primary-site"),
        "remote": Site.objects.get(name="remote-site"),
        "primary_rtr": Router.objects.get(name="primary-rtr"),
        "remote_rtr": Router.objects.get(name="remote-rtr"),
        "xraid1": Device.objects.get(description="XRAID1"),
        "xraid2": Device.objects.get(description="XRAID2"),
        "xraid3": Device.objects.get(description="XRAID3"),
        "zones": {z.zone_id: z for z in Zone.objects.all()},
    }

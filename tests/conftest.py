"""Fixtures shared by every test package: the fixed cast of the DICE testbed, and the plugins in
tests/support/fixtures (pytest reads `pytest_plugins` only here, in the top-level conftest)."""

import os
from collections.abc import Iterator

import pytest

pytest_plugins = [
    "tests.support.fixtures.sims",
    "tests.support.fixtures.api",
    "tests.support.fixtures.operations",
    "tests.support.fixtures.cli",
    "tests.support.fixtures.fast_lists",
]


def pytest_configure(config: pytest.Config) -> None:
    """Once per run, in the process that starts the xdist workers (they inherit the environment): a migrated
    template database, which every test database and every lab or bench database of the run copies."""
    from urllib.parse import urlsplit

    from lab.database import TEMPLATE_ENV

    if hasattr(config, "workerinput") or TEMPLATE_ENV in os.environ:
        return
    url = os.environ.get("DATABASE_URL", "")
    if urlsplit(url).scheme in ("postgres", "postgresql"):
        from tests.support.database import ensure_template

        os.environ[TEMPLATE_ENV] = ensure_template(url)


@pytest.hookimpl(trylast=True)  # after pytest-django has put the database tests in its order
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `slow` first, spread over the xdist workers: a long test started last would finish
    alone, minutes after the others.

    `--dist worksteal` first hands each worker an equal, contiguous share of this order, then moves tests
    from the end of a busy worker's share to an idle one. So each share here starts with its part of the
    slow tests and goes on with the next stretch of the others, in their order (a module's tests stay
    together, and so do its fixtures). Every worker collects, and orders, the same."""
    slow = [item for item in items if item.get_closest_marker("slow")]
    rest = [item for item in items if not item.get_closest_marker("slow")]
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    ordered: list[pytest.Item] = []
    taken = 0  # of the others
    for share in range(workers):
        size = (len(items) - len(ordered)) // (workers - share)  # as worksteal divides what is left
        its_slow = slow[share::workers]
        its_rest = rest[taken:taken + max(0, size - len(its_slow))]
        ordered += its_slow + its_rest
        taken += len(its_rest)
    items[:] = ordered + rest[taken:]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """The test database (one per xdist worker) is a copy of the run's template: `migrate` then finds
    nothing to do."""
    from django.conf import settings

    from lab.database import TEMPLATE_ENV

    if os.environ.get(TEMPLATE_ENV) and settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        settings.DATABASES["default"].setdefault("TEST", {})["TEMPLATE"] = os.environ[TEMPLATE_ENV]


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete() -> Iterator[None]:
    from tests.support.database import flushing_by_delete

    with flushing_by_delete():
        yield


@pytest.fixture(autouse=True)
def _ledger_witness(tmp_path_factory, settings) -> None:
    """Each test's own witness of the ledger's signed heads (operations/witness.py): a head another test
    signed over another chain in this database is not this test's."""
    settings.FLEXZONE_LEDGER_WITNESS = str(tmp_path_factory.mktemp("witness") / "ledger-heads.jsonl")


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

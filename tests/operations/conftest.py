"""Fixtures for the operations engine: the demo registry wired to real simulators on loopback.

`ops_lab` starts an McData Eclipse simulator for primary-rtr and a Nishan IPS 3000 simulator for
remote-rtr (tiny delays), points the registry's routers at them, writes their passwords as router
secrets, and runs operations only when the test calls `execute` (FLEXZONE_OPS_QUEUE=manual).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from bench.soak import SOAK_SETTINGS
from operations.chores import stop_chores_thread
from operations.pool import pool
from registry.models import Router
from tests.routers.conftest import sim_factory, sim_process_factory  # noqa: F401 - fixtures
from tests.support.sims import wire

FAST = SOAK_SETTINGS  # short retries and timeouts, a worker presumed dead after 1.5 s (as the soak runs)


@pytest.fixture
def ops_settings(settings):
    for name, value in FAST.items():
        setattr(settings, name, value)
    yield settings
    stop_chores_thread()
    pool.close_all()


@dataclass
class Lab:
    primary_sim: Any
    remote_sim: Any
    primary_rtr: Router
    remote_rtr: Router
    demo: dict

    def sim_of(self, router: Router):
        return self.primary_sim if router.pk == self.primary_rtr.pk else self.remote_sim


@pytest.fixture
def lab_factory(demo, ops_settings, sim_factory, secrets_dir):  # noqa: F811
    """Build the lab with simulator options (timing `scale`, `max_sessions`, `faults`...)."""

    def make(**sim_kwargs: Any) -> Lab:
        primary = sim_factory("mcdata_eclipse", telnet=("127.0.0.1", 0), **sim_kwargs)
        remote = sim_factory("nishan_ips3000", telnet=("127.0.0.1", 0), **sim_kwargs)
        wire(demo["primary_rtr"], primary.addresses["telnet"], secrets_dir)
        wire(demo["remote_rtr"], remote.addresses["telnet"], secrets_dir)
        return Lab(primary, remote, demo["primary_rtr"], demo["remote_rtr"], demo)

    return make


@pytest.fixture
def ops_lab(lab_factory):
    return lab_factory()

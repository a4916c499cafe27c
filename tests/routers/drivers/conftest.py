"""Fixtures the driver tests share: a simulated MDS over SSH and another administrator's session to it."""

from __future__ import annotations

import pytest

from simulators.admin import FabricAdmin


@pytest.fixture
def mds(sim_factory):
    return sim_factory("cisco_mds", ssh=("127.0.0.1", 0))


@pytest.fixture
def mds_admin(mds):
    session = FabricAdmin(mds, "cisco_mds")
    yield session
    session.close()

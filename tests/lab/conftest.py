"""Lab fixtures: a real testbed under a per-test name prefix and run dir, always torn down.

Root-only tests are marked `root`; without root they are skipped (CI runs as root, so they run there).
No Django here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.backends import FallbackBackend
from lab.testbed import Lab
from tests.support.lab import namespaces_with_prefix


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces); CI runs as root")
    for item in items:
        if "root" in item.keywords and str(item.fspath).startswith(str(Path(__file__).parent)):
            item.add_marker(skip)


@pytest.fixture
def lab_prefix() -> str:
    """A prefix no other test (or a developer's `lab up`) uses."""
    return f"fzt{uuid.uuid4().hex[:6]}"


@pytest.fixture
def new_lab(lab_prefix: str, tmp_path: Path) -> Iterator[Lab]:
    """A Lab object that is not up yet; whatever the test brings up is torn down afterwards."""
    lab = Lab(prefix=lab_prefix, run_dir=tmp_path / "lab")
    try:
        yield lab
    finally:
        Lab(prefix=lab_prefix, run_dir=tmp_path / "lab").down()
        assert namespaces_with_prefix(lab_prefix) == []


@pytest.fixture
def lab(new_lab: Lab) -> Lab:
    """A two-site lab (primary, remote), up, on the nft/NFQUEUE fallback.

    The fallback is forced so these tests exercise the same backend on every kernel (it needs only
    nft numgen and the NFQUEUE target); the tc-netem backend is tested by the commands it renders.
    """
    return new_lab.up(2, backend=FallbackBackend.name)

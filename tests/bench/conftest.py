"""Benchmarks run quick, on the test database, with the engine's fast test settings."""

from tests.operations.conftest import ops_settings  # noqa: F401 - fixture

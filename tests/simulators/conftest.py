"""The simulator tests start simulators as the router tests do: the fixtures of tests/routers/conftest.py."""

from tests.routers.conftest import driver_for, sim_factory, sim_process_factory, sim_target  # noqa: F401 - fixtures

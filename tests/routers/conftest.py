"""Shared fixtures for router tests: simulators of any platform on free loopback ports, torn down after.

* ``sim_factory(platform, **kwargs) -> SimRouter``: an in-process simulator, already started, with
  tiny delays (``scale`` defaults to 0.0; pass ``scale=1.0`` for the platform's real timing).
  kwargs go to ``SimRouter`` (``state_dir``, ``faults``, ``telnet``/``ssh`` addresses, ``timing``...).
  With no transport given, every transport the platform serves is started on 127.0.0.1:0.
* ``sim_target(sim, transport=None, **overrides) -> RouterTarget``: where a driver should connect to
  reach `sim`, with short timeouts (connect 10 s, command 3 s) so a fault fails a test fast.
* ``sim_process_factory(platform, state_dir=..., args=[...]) -> SimProcess``: the same simulator as a
  ``python -m simulators`` child process (``.addresses``), terminated after the test.
* ``driver_for(sim, transport=None, **overrides) -> RouterDriver``: a connected driver for `sim`,
  closed after the test.

No Django here: router tests run without a database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from routers import hostkeys
from routers.drivers import get_driver
from routers.drivers.base import RouterDriver, RouterTarget
from routers.platforms import Platform, Transport
from simulators import personality_class
from simulators.process import SimProcess
from simulators.server import SimRouter
from tests.support.sims import PASSWORD, USERNAME


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., SimRouter]]:
    started: list[SimRouter] = []

    def start(platform: str, **kwargs: Any) -> SimRouter:
        kwargs.setdefault("scale", 0.0)
        kwargs.setdefault("username", USERNAME)
        kwargs.setdefault("password", PASSWORD)
        kwargs.setdefault("seed", 7)
        if "telnet" not in kwargs and "ssh" not in kwargs:
            transports = personality_class(platform).transports
            for transport in transports:
                kwargs[transport] = ("127.0.0.1", 0)
        sim = SimRouter(platform, **kwargs)
        sim.start()
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


def _target(platform: str, addresses: dict[str, tuple[str, int]], transport: str | None,
            overrides: dict[str, Any]) -> RouterTarget:
    chosen = Transport(transport) if transport else Transport(next(iter(addresses)))
    host, port = addresses[chosen.value]
    fields: dict[str, Any] = {
        "platform": Platform(platform),
        "host": host,
        "port": port,
        "transport": chosen,
        "username": USERNAME,
        "password": PASSWORD,
        "name": f"sim-{platform}",
        "connect_timeout": 10.0,
        "command_timeout": 3.0,
    }
    if chosen == Transport.SSH:
        fields["host_key"] = hostkeys.fetch(host, port)  # trusted as `manage.py routers trust` would
    fields.update(overrides)
    return RouterTarget(**fields)


@pytest.fixture
def sim_target() -> Callable[..., RouterTarget]:
    def make(sim: SimRouter | SimProcess, transport: str | None = None, *, platform: str | None = None,
             **overrides: Any) -> RouterTarget:
        name = platform or getattr(sim, "platform", None)
        if name is None:
            raise ValueError("platform: needed for a SimProcess")
        return _target(name, sim.addresses, transport, overrides)

    return make


@pytest.fixture
def driver_for(sim_target: Callable[..., RouterTarget]) -> Iterator[Callable[..., RouterDriver]]:
    drivers: list[RouterDriver] = []

    def make(sim: SimRouter, transport: str | None = None, connect: bool = True, **overrides: Any) -> RouterDriver:
        driver = get_driver(sim_target(sim, transport, **overrides))
        drivers.append(driver)
        if connect:
            driver.connect()
        return driver

    yield make
    for driver in drivers:
        driver.close()


@pytest.fixture
def sim_process_factory(tmp_path: Path) -> Iterator[Callable[..., SimProcess]]:
    started: list[SimProcess] = []

    def start(platform: str, *, state_dir: Path | None = None, args: list[str] | None = None,
              telnet: str | None = None, ssh: str | None = None) -> SimProcess:
        if telnet is None and ssh is None:
            transports = personality_class(platform).transports
            telnet = "127.0.0.1:0" if "telnet" in transports else None
            ssh = "127.0.0.1:0" if "ssh" in transports else None
        options = ["--username", USERNAME, "--password", PASSWORD, "--timing-scale", "0", *(args or [])]
        process = SimProcess(platform, state_dir=state_dir, telnet=telnet, ssh=ssh, args=options)
        started.append(process)
        process.start()
        return process

    yield start
    for process in started:
        process.stop()

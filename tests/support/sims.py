"""Simulated routers as the tests reach them: their account, and the one way to point at a simulator, whether
from a registry router (`wire`) or from a driver (`target`). Both trust the SSH host key the simulator
presents, as `manage.py routers trust` does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from registry.models import Router
from routers import hostkeys
from routers.drivers.base import RouterTarget
from routers.platforms import Platform, Transport

USERNAME = "admin"
PASSWORD = "s3cret-Pa55"


def transport_of(sim, transport: str | None = None) -> Transport:
    """The transport to reach `sim` over: `transport`, or else the first the simulator serves."""
    return Transport(transport) if transport else Transport(next(iter(sim.addresses)))


def presented_key(address: tuple[str, int], transport: str) -> str:
    """The SSH host key to trust for a simulator at `address`: the one it presents (none over telnet)."""
    return hostkeys.fetch(*address) if transport == Transport.SSH else ""


def wire(router, sim, secrets_dir: Path, *, transport: str | None = None, command_timeout: float = 2.0) -> None:
    """Make a registry router the simulator `sim` (its platform, reached over `transport` as `transport_of`
    chooses), and give the service the simulator's password (a `file:` secret in `secrets_dir`)."""
    chosen = transport_of(sim, transport)
    router.platform, router.transport = sim.platform, chosen.value
    router.host, router.port = sim.addresses[chosen.value]
    router.connect_timeout, router.command_timeout = 5.0, command_timeout
    router.ssh_host_key = presented_key(sim.addresses[chosen.value], chosen)
    router.save()
    secrets_dir.mkdir(parents=True, exist_ok=True)
    (secrets_dir / router.secret_ref.removeprefix("file:")).write_text(PASSWORD + "\n")


def target(sim, transport: str | None = None, *, platform: str | None = None, **overrides: Any) -> RouterTarget:
    """Where a driver connects to reach `sim` (a SimRouter or a SimProcess) over `transport` as
    `transport_of` chooses, with short timeouts so that a fault fails a test fast."""
    chosen = transport_of(sim, transport)
    name = platform or sim.platform
    address = sim.addresses[chosen.value]
    fields: dict[str, Any] = {
        "platform": Platform(name),
        "host": address[0],
        "port": address[1],
        "transport": chosen,
        "username": USERNAME,
        "password": PASSWORD,
        "name": f"sim-{name}",
        "connect_timeout": 10.0,
        "command_timeout": 3.0,
        "host_key": presented_key(address, chosen),
    }
    return RouterTarget(**{**fields, **overrides})


def play_the_demo(demo: dict, sim_factory: Callable, secrets_dir: Path, *, command_timeout: float = 2.0,
                  **sim_kwargs: Any) -> tuple[Any, Any]:
    """Start an McData Eclipse simulator for the demo's primary-rtr and a Nishan IPS 3000 for its remote-rtr
    (telnet, options `sim_kwargs`) and wire the routers to them; returns (primary, remote)."""
    primary = sim_factory("mcdata_eclipse", telnet=("127.0.0.1", 0), **sim_kwargs)
    remote = sim_factory("nishan_ips3000", telnet=("127.0.0.1", 0), **sim_kwargs)
    wire(demo["primary_rtr"], primary, secrets_dir, command_timeout=command_timeout)
    wire(demo["remote_rtr"], remote, secrets_dir, command_timeout=command_timeout)
    return primary, remote


@dataclass
class Lab:
    """The demo's two routers wired to simulators (`play_the_demo`), as the operations tests use them."""

    primary_sim: Any
    remote_sim: Any
    primary_rtr: Router
    remote_rtr: Router
    demo: dict

    def sim_of(self, router: Router):
        return self.primary_sim if router.pk == self.primary_rtr.pk else self.remote_sim

"""Simulated routers as the tests reach them: their account, and the one way to point a registry router
at a simulator."""

from __future__ import annotations

from pathlib import Path

from routers import hostkeys

USERNAME = "admin"
PASSWORD = "s3cret-Pa55"


def wire(router, address: tuple[str, int], secrets_dir: Path, *, command_timeout: float = 2.0) -> None:
    """Point a registry router at a simulator listening on `address`, and give the service the simulator's
    password (a `file:` secret in `secrets_dir`). SSH: trust the key the simulator presents, as
    `manage.py routers trust` does."""
    router.host, router.port = address
    router.connect_timeout, router.command_timeout = 5.0, command_timeout
    router.ssh_host_key = hostkeys.fetch(*address) if router.transport == "ssh" else ""
    router.save()
    secrets_dir.mkdir(parents=True, exist_ok=True)
    (secrets_dir / router.secret_ref.removeprefix("file:")).write_text(PASSWORD + "\n")

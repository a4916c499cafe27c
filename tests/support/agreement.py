"""What the simulated routers and the registry hold, compared; changes made behind the registry's back."""

from __future__ import annotations

from operations.models import Link
from operations.steps import router_target
from registry.models import Router, Site
from routers.drivers import get_driver
from routers.drivers.base import LinkSpec

# A link no operation made (zone 3, towards remote-site's gateway on port 9).
STRAY = LinkSpec(port=9, zone=3, remote_ip="127.0.0.22")


def router_keys(sim) -> set[tuple[int, int, str]]:
    return {link.key for link in sim.links()}


def registry_keys(router) -> set[tuple[int, int, str]]:
    return {link.key for link in Link.objects.filter(router=router, state="up")}


def assert_agreement(lab) -> None:
    for router in (lab.primary_rtr, lab.remote_rtr):
        assert registry_keys(router) == router_keys(lab.sim_of(router)), router.name


def behind_the_registrys_back(router, action: str, spec: LinkSpec) -> None:
    """Add or remove a link on the router with its driver, as an admin at the CLI would."""
    driver = get_driver(router_target(router))
    driver.connect()
    try:
        (driver.add_link if action == "add" else driver.remove_link)(spec)
    finally:
        driver.close()


def add_third_site() -> Site:
    site = Site.objects.create(
        name="third-site",
        display_name="THIRD",
        msan_id=3,
        management_ip="127.0.0.13",
        data_ip="127.0.0.23",
        router_port=2,
    )
    Router.objects.create(
        site=site,
        name="third-rtr",
        platform="nishan_ips3000",
        transport="telnet",
        host="127.0.0.13",
        port=2325,
        username="admin",
        secret_ref="file:third-rtr",
    )
    return site

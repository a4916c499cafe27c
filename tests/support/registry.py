"""Variations of the demo cast (tests/conftest.py's `demo` fixture loads it)."""

from __future__ import annotations


def demo_on_fcip() -> None:
    """The demo's two sites on FCIP switches: primary-rtr a Brocade FOS (VE 24), remote-rtr a Cisco MDS
    (fcip 25, vsan 10), so plans zone the requesting site's initiators."""
    from registry.models import Router, Site

    Site.objects.filter(name="primary-site").update(router_port=24)
    Site.objects.filter(name="remote-site").update(router_port=25)
    Router.objects.filter(name="primary-rtr").update(platform="brocade_fos", transport="ssh")
    Router.objects.filter(name="remote-rtr").update(platform="cisco_mds", transport="ssh", vsan=10)

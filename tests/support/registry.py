"""Variations of the demo cast (tests/conftest.py's `demo` fixture loads it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


def demo_on_fcip() -> None:
    """The demo's two sites on FCIP switches: primary-rtr a Brocade FOS (VE 24), remote-rtr a Cisco MDS
    (fcip 25, vsan 10), so plans zone the requesting site's initiators."""
    from registry.models import Router, Site

    Site.objects.filter(name="primary-site").update(router_port=24)
    Site.objects.filter(name="remote-site").update(router_port=25)
    Router.objects.filter(name="primary-rtr").update(platform="brocade_fos", transport="ssh")
    Router.objects.filter(name="remote-rtr").update(platform="cisco_mds", transport="ssh", vsan=10)


@contextmanager
def behind_the_rules() -> Iterator[None]:
    """Writes as the database's superuser can make them with triggers switched off for the session
    (`session_replication_role = replica`): a registry changed under live links, which the registry's
    `in_use` trigger (operations migration 0006) refuses anyone else, to show what the engine does then.
    Foreign keys go unchecked meanwhile too."""
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET session_replication_role")

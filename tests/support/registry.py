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


def database_refuses(model, pk: int, **values) -> bool:
    """Whether the database's own `in_use` rule refuses this write, which skips every model rule (a
    queryset update, as from the shell); the write is rolled back either way."""
    from django.db import DatabaseError, transaction

    from registry import in_use

    try:
        with transaction.atomic():
            model.objects.filter(pk=pk).update(**values)
            transaction.set_rollback(True)
    except DatabaseError as exc:
        assert in_use.from_database(exc) is not None, exc
        return True
    return False


def models_refuse(row, column: str, value) -> bool:
    """Whether the models' `in_use` rule (full_clean, as the API and the admin's forms run it) refuses
    setting `column` of `row` to `value`; the row is not saved."""
    from django.core.exceptions import ValidationError

    from registry import in_use

    setattr(row, column, value)
    try:
        row.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        return in_use.refused(exc)
    return False

"""Values a router carries cannot change under the links made with them.

A link is configured from the registry as it stood at connect time: the site's data-path IP and
router port, the router's site, platform and VSAN, the device's WWN and zone, the initiators of the
requesting site's hosts. The grants that need it are read with today's values, so an edit of one of
those values while a site holds a device through it would make the desired state name another link
than the one on the router. Such an edit is refused (rule `in_use`, a 409 from the API) naming who
holds what, and so is a delete of such a value (a host or initiator an FCIP link zones, a device a
site holds), by whatever path; once they are disconnected it goes through. Descriptions, names and
how flexzone reaches a router (its address, transport, credentials, timeouts) stay free: a link names
its router by id and keeps the values it was made with, and nothing on a router follows them. Who
holds what is the engine's to say (links and locks are its records): it answers through `answer_with`
when its app is ready.

The models ask before they write (`clean()`, a delete's pre_delete), for a refusal that names the field.
The database holds the same rule for every path that skips them (a queryset `update()`, a `save()`
without `full_clean()`, raw SQL): the engine's migration 0006 puts a trigger on each of these tables
that fails the statement with SQLSTATE 23F09 (an IntegrityError), which a model's save, the API and the
admin turn into the same refusal (`from_database`).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import psycopg
from django.core.exceptions import ValidationError
from django.db import DatabaseError, models
from django.db.backends.base.base import BaseDatabaseWrapper

RULE = "in_use"
SHOWN = 3
SQLSTATE = "23F09"  # the database's refusal (operations/migrations/0006_in_use_rule.py)
ADVISORY_KEY = 4045_2026_0006  # writes to the guarded tables take it, a submit holds it shared (`held_still`)
HELD_WAIT = 10.0  # s a submit waits for a registry edit's transaction to end


class Subject(enum.Enum):
    """What an edited value belongs to; the engine answers who holds a device through it."""

    SITE = "site"  # its links' remote gateway address and its router's FC port (keys: sites)
    HOST = "host"  # the initiators the FCIP links of its site zone (keys: hosts)
    ROUTER = "router"  # the links on it and on its site's routers (keys: sites, routers)
    DEVICE = "device"  # the links and locks of that device (keys: devices)


# "<site> holds <device>" for each hold through the subject, in name order. Links and locks are the
# engine's (operations): it registers the answer when its app is ready, so that the registry imports
# nothing of the engine's. Without the engine nothing can hold anything.
Holders = Callable[..., list[str]]
_holders: Holders = lambda subject, **keys: []  # noqa: E731


def answer_with(holders: Holders) -> None:
    """Called by the engine's app config: who holds what through a subject."""
    global _holders
    _holders = holders


def changed_fields(instance: models.Model, fields: list[str]) -> list[str]:
    """Those of `fields` whose value in `instance` differs from the stored row ([] for a new object)."""
    if instance.pk is None:
        return []
    attnames = {name: _column(instance, name) for name in fields}
    stored = type(instance)._default_manager.filter(pk=instance.pk).values(*attnames.values()).first()
    if stored is None:
        return []
    return [name for name, attname in attnames.items() if getattr(instance, attname) != stored[attname]]


def _column(instance: models.Model, name: str) -> str:
    field = instance._meta.get_field(name)
    if not isinstance(field, models.Field):  # a reverse relation: no column in this row
        raise TypeError(f"{type(instance).__name__}.{name} is not a field of its own row")
    return field.attname


def refuse(changed: list[str], what: str, subject: Subject, **keys: Sequence[int | None]) -> None:
    """Raise a ValidationError on each changed field if anyone holds a device through the subject."""
    if not changed:
        return
    message = _in_use(what, subject, "change it", keys)
    if message:
        raise ValidationError({name: ValidationError(message, code=RULE) for name in changed})


def refuse_unsharing(device: models.Model, shareable: bool, what: str) -> None:
    """A device stops being shareable only while at most one site holds it: with several, each would keep
    a hold the device no longer allows (a ValidationError on `shareable`)."""
    if shareable or "shareable" not in changed_fields(device, ["shareable"]):
        return
    held = _holders(Subject.DEVICE, devices=[device.pk])
    if len(held) > 1:
        message = (f"{what} is held by several sites ({_shown(held)}): it cannot stop being shareable while more "
                   "than one site holds it. Disconnect all but one first, then change it.")
        raise ValidationError({"shareable": ValidationError(message, code=RULE)})


def refuse_delete(what: str, subject: Subject, **keys: Sequence[int | None]) -> None:
    """Raise a ValidationError (no field: the object itself) if anyone holds a device through the subject.

    Called at every delete of what routers carry (pre_delete: the API, the admin, a queryset, a cascade),
    so that a delete is refused exactly as an edit of the same value is."""
    message = _in_use(what, subject, "delete it", keys)
    if message:
        raise ValidationError(message, code=RULE)


def from_database(exc: DatabaseError) -> ValidationError | None:
    """The database's refusal of a statement as this rule's ValidationError (on the column's field), or
    None if `exc` is another error."""
    cause = exc.__cause__
    if not isinstance(cause, psycopg.Error) or cause.sqlstate != SQLSTATE:
        return None
    message, field = cause.diag.message_primary or str(cause), cause.diag.column_name
    error = ValidationError(message, code=RULE)
    return ValidationError({field: error}) if field else error


@contextmanager
def database_refusals() -> Iterator[None]:
    """Writes within raise the database's refusal as this rule's ValidationError."""
    try:
        yield
    except DatabaseError as exc:
        refusal = from_database(exc)
        if refusal is None:
            raise
        raise refusal from exc


def held_still(connection: BaseDatabaseWrapper, wait: float = HELD_WAIT) -> bool:
    """Inside a transaction that plans from the registry and then writes the grant the plan is for: until
    it commits, no write of a value this rule guards starts (each takes ADVISORY_KEY first, migration
    0006), and one under way has committed, so an edit either happened before the plan read the registry
    or finds the grant and is refused. Shared: submits do not wait for each other. False if an edit's
    transaction keeps it longer than `wait` s (the caller refuses rather than hang). PostgreSQL only."""
    if connection.vendor != "postgresql":
        return True
    deadline = time.monotonic() + wait
    with connection.cursor() as cursor:
        while True:  # a try: a request queued behind a waiting edit does not pass it (PostgreSQL's lock queue)
            cursor.execute("SELECT pg_try_advisory_xact_lock_shared(%s)", [ADVISORY_KEY])
            if cursor.fetchone()[0]:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def refused(exc: ValidationError) -> bool:
    """Whether a ValidationError is this rule's refusal (and nothing else)."""
    errors = [e for es in exc.error_dict.values() for e in es] if hasattr(exc, "error_dict") else exc.error_list
    return bool(errors) and all(error.code == RULE for error in errors)


def _in_use(what: str, subject: Subject, then: str, keys: dict[str, Sequence[int | None]]) -> str:
    held = _holders(subject, **{name: [pk for pk in pks if pk is not None] for name, pks in keys.items()})
    if not held:
        return ""
    return (f"{what} is in use by live links ({_shown(held)}): the routers carry its current value, and a "
            f"disconnect plans from it. Disconnect those first, then {then}.")


def _shown(held: list[str]) -> str:
    return ", ".join(held[:SHOWN]) + (f" and {len(held) - SHOWN} more" if len(held) > SHOWN else "")

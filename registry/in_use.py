"""Values a router carries cannot change under the links made with them.

A link is configured from the registry as it stood at connect time: the site's data-path IP and
router port, the router's address, platform and VSAN, the device's WWN and zone, the initiators of
the requesting site's hosts. A disconnect plans from the registry as it stands then, so an edit of
one of those values while a site holds a device through it would leave the old link on the router,
out of flexzone's sight. Such an edit is refused (rule `in_use`, a 409 from the API) naming who
holds what; once they are disconnected it goes through. Descriptions and other values no router
sees stay free. Who holds what is the engine's to say (links and locks are its records): it answers
through `answer_with` when its app is ready.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from django.core.exceptions import ValidationError
from django.db import models

RULE = "in_use"
SHOWN = 3


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
    held = _holders(subject, **{name: [pk for pk in pks if pk is not None] for name, pks in keys.items()})
    if not held:
        return
    shown = ", ".join(held[:SHOWN]) + (f" and {len(held) - SHOWN} more" if len(held) > SHOWN else "")
    message = (f"{what} is in use by live links ({shown}): the routers carry its current value, and a "
               "disconnect plans from it. Disconnect those first, then change it.")
    raise ValidationError({name: ValidationError(message, code=RULE) for name in changed})

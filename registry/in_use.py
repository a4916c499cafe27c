"""Values a router carries cannot change under the links made with them.

A link is configured from the registry as it stood at connect time: the site's data-path IP and
router port, the router's address, platform and VSAN, the device's WWN and zone, the initiators of
the requesting site's hosts. A disconnect plans from the registry as it stands then, so an edit of
one of those values while a site holds a device through it would leave the old link on the router,
out of flexzone's sight. Such an edit is refused (rule `in_use`, a 409 from the API) naming who
holds what; once they are disconnected it goes through. Descriptions and other values no router
sees stay free.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

RULE = "in_use"
SHOWN = 3


def changed_fields(instance: models.Model, fields: list[str]) -> list[str]:
    """Those of `fields` whose value in `instance` differs from the stored row ([] for a new object)."""
    if instance.pk is None:
        return []
    attnames = {name: instance._meta.get_field(name).attname for name in fields}
    stored = type(instance)._default_manager.filter(pk=instance.pk).values(*attnames.values()).first()
    if stored is None:
        return []
    return [name for name, attname in attnames.items() if getattr(instance, attname) != stored[attname]]


def holders(locks: models.QuerySet, links: models.QuerySet) -> list[str]:
    """"<site> holds <device>" for each lock and each link still active, in name order."""
    pairs = set(locks.values_list("site__name", "device__description"))
    pairs |= set(links.values_list("site__name", "device__description"))
    return [f"{site} holds {device}" for site, device in sorted(pairs)]


def refuse(changed: list[str], what: str, locks: models.QuerySet, links: models.QuerySet) -> None:
    """Raise a ValidationError on each changed field if anyone holds a device through `what`."""
    if not changed:
        return
    held = holders(locks, links)
    if not held:
        return
    shown = ", ".join(held[:SHOWN]) + (f" and {len(held) - SHOWN} more" if len(held) > SHOWN else "")
    message = (f"{what} is in use by live links ({shown}): the routers carry its current value, and a "
               "disconnect plans from it. Disconnect those first, then change it.")
    raise ValidationError({name: ValidationError(message, code=RULE) for name in changed})

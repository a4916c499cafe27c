"""Initiator WWNs are as scoped as the hosts they belong to.

A principal that is not admin and not `all_sites` sees the hosts of its own sites only, so it must not
learn another site's initiator port WWNs from anything else either: not from a plan (the zone members
and the command lines, where a WWN also appears without colons inside FCIP zone names), a link's
initiators and pairs, an operation's request, plan, result or error, an error answer, or the console
pages built on them. Everything else in those answers stays as it is: which site holds which device is
not hidden.

The rule is an allowlist, so that nothing the registry has forgotten (a host deleted since, a WWN
read from a switch) slips through: every WWN in an answer (eight colon-separated bytes, or sixteen
hex digits without colons as in a zone name) is hidden unless it is an initiator of one of the
principal's own sites or a device's (a target's) WWN. `redact` takes hidden WWNs out of any JSON-like
value: a list item that is one, or a pair holding one, is left out; inside any other text the WWN
becomes `HIDDEN`.
"""

from __future__ import annotations

import re
from typing import Any

from access.models import Principal
from access.permissions import scoped_site_ids
from registry.models import Device, Initiator

HIDDEN = "<initiator hidden>"
WWN_TOKEN = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{2}:){7}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:])"
                       r"|(?<![0-9A-Fa-f])[0-9A-Fa-f]{16}(?![0-9A-Fa-f])")


def _canonical(token: str) -> str:
    digits = token.replace(":", "").lower()
    return ":".join(digits[i:i + 2] for i in range(0, 16, 2))


class Hidden:
    """What one principal may see of WWNs: everything (`visible` None), or only the WWNs in `visible`."""

    def __init__(self, visible: set[str] | None) -> None:
        self.visible = None if visible is None else frozenset(wwn.lower() for wwn in visible)

    def hides(self, token: str) -> bool:
        return self.visible is not None and _canonical(token) not in self.visible

    def _hides_item(self, item: Any) -> bool:
        if isinstance(item, str):
            return WWN_TOKEN.fullmatch(item) is not None and self.hides(item)
        return isinstance(item, (list, tuple)) and any(self._hides_item(part) for part in item if isinstance(part, str))

    def redact(self, value: Any) -> Any:
        """`value` with every hidden WWN taken out (see the module's docstring); unchanged for a principal
        who sees every site."""
        if self.visible is None:
            return value
        if isinstance(value, str):
            return WWN_TOKEN.sub(lambda found: HIDDEN if self.hides(found.group()) else found.group(), value)
        if isinstance(value, (list, tuple)):
            return [self.redact(item) for item in value if not self._hides_item(item)]
        if isinstance(value, dict):
            return {self.redact(key): self.redact(item) for key, item in value.items()}
        return value


NOTHING = Hidden(None)


def hidden_initiators(principal: Principal | None) -> Hidden:
    """What `principal` may see: every WWN for an admin or an all_sites principal, else its own sites'
    initiators and the devices' WWNs only."""
    sites = scoped_site_ids(principal)
    if sites is None:
        return NOTHING
    own = set(Initiator.objects.filter(host__site__in=sites).values_list("wwn", flat=True))
    return Hidden(own | set(Device.objects.values_list("wwn", flat=True)))


def for_request(request) -> Hidden:
    """`hidden_initiators` of the request's principal (a console page's, or the API's authenticated
    user's), worked out once per request."""
    if not hasattr(request, "_hidden_initiators"):
        principal = getattr(request, "principal", None) or getattr(getattr(request, "user", None), "principal", None)
        request._hidden_initiators = hidden_initiators(principal)
    return request._hidden_initiators


class InitiatorsScoped:
    """A serializer whose answers name initiator WWNs: those outside the requesting principal's sites
    are taken out (access/redaction.py)."""

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        return for_request(request).redact(data) if request is not None else data

"""Initiator WWNs are as scoped as the hosts they belong to.

A principal that is not admin and not `all_sites` sees the hosts of its own sites only, so it must not
learn another site's initiator port WWNs from anything else either: not from a plan (the zone members
and the command lines, where a WWN also appears without colons inside FCIP zone names), a link's
initiators and pairs, an operation's request, plan, result or error, or the console pages built on
them. Everything else in those answers stays as it is: which site holds which device is not hidden.

`hidden_initiators` names the WWNs a principal must not see: those of the hosts of every site outside
its scope, and those recorded on the grants and links of such sites (a host deleted since keeps its
WWNs there). A WWN one of its own sites' hosts has is never hidden. `redact` takes them out of any
JSON-like value: a list item that is such a WWN, or a pair holding one, is left out; inside any other
text the WWN (with or without colons, in either case) becomes `HIDDEN`.
"""

from __future__ import annotations

import re
from typing import Any

from api.permissions import scoped_site_ids
from operations.models import Grant, Link
from registry.models import Initiator, Principal

HIDDEN = "<initiator hidden>"


class Hidden:
    """The initiator WWNs one principal must not see, with the pattern that finds them in text."""

    def __init__(self, wwns: set[str]) -> None:
        self.wwns = frozenset(wwn.lower() for wwn in wwns)
        forms = sorted({form for wwn in self.wwns for form in (wwn, wwn.replace(":", ""))}, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, forms)), re.IGNORECASE) if forms else None

    def __bool__(self) -> bool:
        return bool(self.wwns)

    def _hides(self, item: Any) -> bool:
        if isinstance(item, str):
            return item.lower() in self.wwns
        return isinstance(item, (list, tuple)) and any(isinstance(part, str) and part.lower() in self.wwns
                                                         for part in item)

    def redact(self, value: Any) -> Any:
        """`value` with every hidden WWN taken out (see the module's docstring); unchanged when none is."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self._pattern.sub(HIDDEN, value)
        if isinstance(value, (list, tuple)):
            return [self.redact(item) for item in value if not self._hides(item)]
        if isinstance(value, dict):
            return {key: self.redact(item) for key, item in value.items()}
        return value


NOTHING = Hidden(set())


def hidden_initiators(principal: Principal | None) -> Hidden:
    """The WWNs of initiators outside the principal's sites (none for an admin or an all_sites principal)."""
    sites = scoped_site_ids(principal)
    if sites is None:
        return NOTHING
    outside = set(Initiator.objects.exclude(host__site__in=sites).values_list("wwn", flat=True))
    for model in (Grant, Link):
        for wwns in model.objects.exclude(site__in=sites).exclude(initiators=[]).values_list(
                "initiators", flat=True).distinct():
            outside.update(wwns)
    own = set(Initiator.objects.filter(host__site__in=sites).values_list("wwn", flat=True))
    return Hidden({wwn.lower() for wwn in outside} - {wwn.lower() for wwn in own})


def for_request(request) -> Hidden:
    """`hidden_initiators` of the request's principal (a console page's, or the API's authenticated
    user's), worked out once per request."""
    if not hasattr(request, "_hidden_initiators"):
        principal = getattr(request, "principal", None) or getattr(getattr(request, "user", None), "principal", None)
        request._hidden_initiators = hidden_initiators(principal)
    return request._hidden_initiators


class InitiatorsScoped:
    """A serializer whose answers name initiator WWNs: those outside the requesting principal's sites
    are taken out (api/redaction.py)."""

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        return for_request(request).redact(data) if request is not None else data

"""The registry's answers: a site, device, zone or router named the ways people name them, each
site's routers and initiators. Every miss is a QueryError naming the input at fault, with the closest
names the registry knows.

Planning (which routers, which commands) is the engine's (`operations.planner`); this module only
looks things up.
"""

from __future__ import annotations

import difflib

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.db.models.functions import Lower

from registry.models import Device, Host, Router, Site, Zone
from registry.validators import normalize_wwn


class QueryError(ValueError):
    """A question the registry cannot answer. `field` names the input at fault; `suggestions` are
    the closest names it knows."""

    def __init__(self, field: str, message: str, suggestions: list[str] | None = None) -> None:
        self.field = field
        self.message = message
        self.suggestions = suggestions or []
        text = f"{field}: {message}"
        if self.suggestions:
            text += f" Did you mean: {', '.join(self.suggestions)}?"
        super().__init__(text)

    def as_dict(self) -> dict:
        return {"field": self.field, "message": self.message, "suggestions": self.suggestions}



def find_site(value: str | int) -> Site:
    """A site named by short name, display name or MSAN id (in that order of preference)."""
    text = site_text(value)
    return pick_site(text, sites_matching(text))


def site_text(value: str | int) -> str:
    text = str(value).strip()
    if not text:
        raise QueryError("site", "a site is required (short name, display name or MSAN id).")
    return text


def sites_matching(text: str, also: set[int] | frozenset[int] = frozenset()) -> list[Site]:
    """The sites `text` may name (at most one per way of naming one), and the sites whose ids are in `also`."""
    match = Q(name=text) | Q(lower_display_name=text.lower())
    if text.isdigit():
        match |= Q(msan_id=int(text))
    if also:
        match |= Q(pk__in=also)
    return list(Site.objects.annotate(lower_display_name=Lower("display_name")).filter(match)[: 3 + len(also)])


def pick_site(text: str, candidates: list[Site]) -> Site:
    for matches in (
        lambda s: s.name == text,
        lambda s: text.isdigit() and s.msan_id == int(text),
        lambda s: s.display_name.lower() == text.lower(),
    ):
        site = next((s for s in candidates if matches(s)), None)
        if site is not None:
            return site
    names = [name for pair in Site.objects.values_list("name", "display_name") for name in pair]
    raise QueryError("site", f"no site is named {text!r}.", close_matches(text, names))


def find_device(
    *, description: str | None = None, wwn: str | None = None, related: tuple[str, ...] = ("zone", "owner_site")
) -> Device:
    """A device by description (any letter case) or WWN (any notation), with `related` rows joined in."""
    devices = Device.objects.select_related(*related)
    if description is not None:
        text = description.strip()
        device: Device | None = devices.annotate(lower=Lower("description")).filter(lower=text.lower()).first()
        if device is None:
            names = list(Device.objects.values_list("description", flat=True))
            raise QueryError("device_description", f"no device is described as {text!r}.", close_matches(text, names))
        return device
    if wwn is not None:
        try:
            canonical = normalize_wwn(wwn)
        except ValidationError as exc:
            raise QueryError("wwn", exc.messages[0]) from None
        device = devices.filter(wwn=canonical).first()
        if device is None:
            wwns = list(Device.objects.values_list("wwn", flat=True))
            raise QueryError("wwn", f"no device has WWN {canonical}.", close_matches(canonical, wwns))
        return device
    raise QueryError("device", "name the device by description or WWN.")


def zone_number(value: str | int) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise QueryError("zone", f"a zone is a number, got {value!r}.") from None


def find_zone(value: str | int) -> Zone:
    zone_id = zone_number(value)
    zone = Zone.objects.filter(zone_id=zone_id).first()
    if zone is None:
        known = [str(z) for z in Zone.objects.values_list("zone_id", flat=True)]
        raise QueryError("zone", f"zone {zone_id} does not exist.", close_matches(str(zone_id), known))
    return zone


def find_router(name: str) -> Router:
    """A router by its name, with its site joined in; QueryError with the closest names otherwise."""
    text = str(name)
    router = Router.objects.select_related("site").filter(name=text).first()
    if router is None:
        known = list(Router.objects.values_list("name", flat=True))
        raise QueryError("router", f"no router is named {name!r}.", close_matches(text, known))
    return router


def close_matches(text: str, candidates: list[str]) -> list[str]:
    lowered = {candidate.lower(): candidate for candidate in candidates}
    return [lowered[match] for match in difflib.get_close_matches(text.lower(), list(lowered), n=3, cutoff=0.5)]


def site_initiators(site: Site, hosts: list[str] | None) -> list[str]:
    """The site's initiator WWNs, of the named hosts only when `hosts` is given (one query)."""
    rows = list(Host.objects.filter(site_id=site.pk).values_list("name", "initiators__wwn"))  # a LEFT JOIN
    if hosts is not None:
        known = sorted({name for name, _wwn in rows})
        for name in hosts:
            if name not in known:
                raise QueryError("hosts", f"site {site.name} has no host named {name!r}.", close_matches(name, known))
        rows = [(name, wwn) for name, wwn in rows if name in hosts]
    return sorted({wwn for _name, wwn in rows if wwn})

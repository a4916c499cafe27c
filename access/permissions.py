"""Roles and scope.

viewer: read everything except principals and the audit log; of who holds what (grants, links) and of
the sites' hosts, only what belongs to the sites in its scope. operator: also connect, disconnect,
reconcile and V1 invoke, but only for the sites and zones in its scope. admin: everything, in every
scope. A view names the role it needs for reading (`read_role`) and for writing (`write_role`).

One rule decides what a principal sees of rows that belong to sites (`visible`): a model names the
sites a row belongs to (`SCOPE_SITES`, lookups to them: a grant or a link belongs to the holding site
and to the device's owner, a host to its site), and a principal sees the rows that belong to a site in
its scope, all of them for an admin or an `all_sites` principal, none without a site. The inventory
(sites, zones, devices, routers) has no `SCOPE_SITES`: every principal sees it. Every list, detail,
filter and console page showing such rows goes through `visible`; what a principal may act on goes
through `require_scope`.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q, QuerySet
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from access.models import Principal, Role
from registry.models import Site, Zone

_RANK: dict[str, int] = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}


def has_role(principal: Principal, needed: str) -> bool:
    return _RANK.get(principal.role, -1) >= _RANK[Role(needed)]


class SameOriginWrites(BasePermission):
    """Refuse a write that a browser sent on behalf of another site's page (cross-site request forgery).

    Browsers present an installed client certificate on any request to this service, including one
    a foreign page makes them send; they also say where the request came from (`Origin`, and
    `Sec-Fetch-Site` in current browsers). A write is refused when either says another origin. The
    CLI, curl and automation send neither, and keep working. (Writes also accept JSON bodies only, so
    a plain HTML form cannot produce one: see DEFAULT_PARSER_CLASSES.)
    """

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return True
        ours = f"{request.scheme}://{request.get_host()}"
        origin = request.headers.get("Origin")
        if origin is not None and origin.rstrip("/").lower() != ours.lower():
            raise exceptions.PermissionDenied(
                f"Cross-site request refused: this {request.method} came from a page at {origin[:200]}, not from "
                f"{ours}. Use the flexzone CLI or the API from a program (no Origin header), or this service's "
                "own pages."
            )
        fetch_site = request.headers.get("Sec-Fetch-Site")
        if fetch_site is not None and fetch_site not in ("same-origin", "none"):
            raise exceptions.PermissionDenied(
                f"Cross-site request refused: the browser marked this {request.method} as {fetch_site[:40]} "
                f"(Sec-Fetch-Site), not same-origin."
            )
        return True


class RolePermission(BasePermission):
    """The principal's role must reach the view's `read_role` (safe methods) or `write_role`."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        if user is None or not getattr(user, "is_authenticated", False):
            raise exceptions.NotAuthenticated("A client certificate is required (mutual TLS).")
        safe = request.method in SAFE_METHODS
        needed = getattr(view, "read_role", Role.VIEWER) if safe else getattr(view, "write_role", Role.ADMIN)
        if not has_role(user.principal, needed):
            raise exceptions.PermissionDenied(
                f"Principal {user.principal.name} has role {user.principal.role}; "
                f"{request.method} {request.path} needs role {needed}."
            )
        return True


def require_scope(principal: Principal, *, sites: Iterable[Site] = (), zones: Iterable[Zone] = ()) -> None:
    """Raise PermissionDenied naming the first site or zone outside the principal's scope."""
    if principal.role == Role.ADMIN:
        return
    if not principal.all_sites:
        allowed = set(principal.sites.values_list("pk", flat=True))
        for site in sites:
            if site.pk not in allowed:
                raise exceptions.PermissionDenied(f"Principal {principal.name} is not scoped to site {site.name}.")
    if not principal.all_zones:
        allowed = set(principal.zones.values_list("pk", flat=True))
        for zone in zones:
            if zone.pk not in allowed:
                raise exceptions.PermissionDenied(f"Principal {principal.name} is not scoped to zone {zone.zone_id}.")


def scoped_site_ids(principal: Principal | None) -> set[int] | None:
    """The ids of the sites in the principal's scope; None for an admin or an `all_sites` principal
    (no limit), and none at all without a principal."""
    if principal is None:
        return set()
    if principal.role == Role.ADMIN or principal.all_sites:
        return None
    return set(principal.sites.values_list("pk", flat=True))


def visible(queryset: QuerySet, principal: Principal | None) -> QuerySet:
    """The rows of `queryset` the principal may see (the module's rule): those that belong, by any of their
    model's `SCOPE_SITES` lookups, to a site in its scope. Rows out of scope do not exist for the
    principal (a detail answers 404, not 403)."""
    lookups: tuple[str, ...] = getattr(queryset.model, "SCOPE_SITES", ())
    return _in_scope(queryset, principal, lookups) if lookups else queryset


def within_site_scope(queryset: QuerySet, principal: Principal | None, site_lookup: str) -> QuerySet:
    """The rows whose site (reached by `site_lookup`) is in the principal's scope; all of them for an
    admin or an `all_sites` principal. Rows out of scope do not exist for the principal (404, not 403)."""
    return _in_scope(queryset, principal, (site_lookup,))


def _in_scope(queryset: QuerySet, principal: Principal | None, lookups: Iterable[str]) -> QuerySet:
    """The rows whose site, reached by any of `lookups`, is in the principal's scope (`scoped_site_ids`)."""
    sites = scoped_site_ids(principal)
    if sites is None:
        return queryset
    belongs = Q()
    for lookup in lookups:
        belongs |= Q(**{f"{lookup}__in": sites})
    return queryset.filter(belongs)


def within_zone_scope(queryset: QuerySet, principal: Principal | None, zone_lookup: str) -> QuerySet:
    """The rows whose zone (reached by `zone_lookup`) is in the principal's scope, as `within_site_scope`."""
    if principal is None:
        return queryset.none()
    if principal.role == Role.ADMIN or principal.all_zones:
        return queryset
    return queryset.filter(**{f"{zone_lookup}__in": principal.zones.all()})

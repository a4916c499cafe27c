"""Roles and scope.

viewer: read everything except principals and the audit log, and a site's hosts only for the sites in
its scope. operator: also connect, disconnect and V1 invoke, but only for the sites and zones in its
scope. admin: everything, in every scope. A view names the role it needs for reading (`read_role`)
and for writing (`write_role`).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from registry.models import Principal, Role, Site, Zone

_RANK = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}


def has_role(principal: Principal, needed: str) -> bool:
    return _RANK.get(principal.role, -1) >= _RANK[Role(needed)]


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


def within_site_scope(queryset: QuerySet, principal: Principal | None, site_lookup: str) -> QuerySet:
    """The rows whose site (reached by `site_lookup`) is in the principal's scope; all of them for an
    admin or an `all_sites` principal. Rows out of scope do not exist for the principal (404, not 403)."""
    if principal is None:
        return queryset.none()
    if principal.role == Role.ADMIN or principal.all_sites:
        return queryset
    return queryset.filter(**{f"{site_lookup}__in": principal.sites.all()})

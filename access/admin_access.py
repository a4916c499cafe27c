"""The Django admin behind the same mutual TLS as the API: signed in by client certificate, admins only.

The admin is served by the API's own server (gunicorn, TLS, client certificate required), never by
Django's development server, and has no password sign-in: a request to /admin/ is let in only with
a client certificate that is valid, not revoked and registered to a principal whose role is admin.
That principal is the Django user the admin sees (a staff account made for it, without a usable
password), so the admin's own history names who changed what.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpResponseForbidden

from access import writers
from access.audit import record_refusal
from access.authentication import certificate_principal
from access.models import Principal, Role

ADMIN_PREFIX = "/admin/"


def admin_principal(request) -> tuple[Principal | None, str, str]:
    """(the admin principal the request's client certificate belongs to, "", "") or (None, why not,
    the stage that refused: "authentication" or "authorization")."""
    principal, why = certificate_principal(request)
    if principal is None:
        return None, why, "authentication"
    if principal.role != Role.ADMIN:
        return (None, f"Principal {principal.name} has role {principal.role}; the admin site is for admins only.",
                "authorization")
    return principal, "", ""


def staff_user_for(principal: Principal):
    """The Django account standing for an admin principal in the admin (no password: certificate only)."""
    user, created = get_user_model().objects.get_or_create(
        username=f"principal:{principal.name}"[:150],
        defaults={"is_staff": True, "is_superuser": True, "is_active": True},
    )
    if created or not (user.is_staff and user.is_superuser and user.is_active) or user.has_usable_password():
        user.is_staff = user.is_superuser = user.is_active = True
        user.set_unusable_password()
        user.save()
    return user


class AdminByCertificateMiddleware:
    """For /admin/: the admin principal's staff account, or 403 saying why (no password sign-in)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(ADMIN_PREFIX):
            principal, why, stage = admin_principal(request)
            if principal is None:
                record_refusal(request, 403, why, "admin.access", stage)
                return HttpResponseForbidden(why + "\n", content_type="text/plain; charset=utf-8")
            request.user = staff_user_for(principal)
            if request.method not in ("GET", "HEAD", "OPTIONS"):  # its writes are the principal's (access.writers)
                with writers.acting(principal.name, f"admin {request.method} {request.path}"):
                    return self.get_response(request)
        return self.get_response(request)

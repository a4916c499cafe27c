"""Who is looking at a console page: the same client certificate, principal and roles as the API.

There is no second login: the browser presents its client certificate in the TLS handshake (as the
CLI does), and a page is shown to the principal it is registered to, if that principal's role
reaches the page's. Refusals are answered with a page that says why, audited and counted like the
API's. Console pages never write: their forms post JSON to the API (see console.js), where the same
roles, scopes and same-origin checks apply.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import cast

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from access import audit
from access.authentication import certificate_principal
from access.models import Principal, Role
from access.permissions import has_role

# Only this service's own scripts, styles and API: nothing from another host, no inline script, and
# no page of ours inside another site's frame.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


class ConsoleRequest(HttpRequest):
    """A request a console page was let through for: it carries the principal it was shown to."""

    principal: Principal


def role_refusal(principal: Principal, needed: str, what: str) -> str:
    return f"Principal {principal.name} has role {principal.role}; {what} needs role {needed}."


def refuse(request: HttpRequest, status: int, why: str, action: str) -> HttpResponse:
    audit.record_refusal(request, status, why, action, "authentication" if status == 401 else "authorization")
    context = {"why": why, "status": status, "demo": settings.DEBUG}
    response = render(request, "console/refused.html", context, status=status)
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response


def console_page(needed: str = Role.VIEWER) -> Callable:
    """Decorate a console view: the caller's principal must reach role `needed` (viewer by default);
    the view gets it as `request.principal`. A monitor principal (metrics only) is refused."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            principal, why = certificate_principal(request)
            if principal is None:
                return refuse(request, 401, why, "console.auth")
            if not has_role(principal, needed):
                return refuse(request, 403, role_refusal(principal, needed, "this page"), "console.view")
            shown = cast(ConsoleRequest, request)
            shown.principal = principal
            response = view(shown, *args, **kwargs)
            response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
            return response

        return wrapper

    return decorate

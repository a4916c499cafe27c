"""Record who did what through the API: every write and every refusal, as an AuditEvent row."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError
from prometheus_client import Counter
from rest_framework.permissions import SAFE_METHODS

from access.models import AuditEvent, AuditOutcome

log = logging.getLogger("flexzone.audit")

refusals_total = Counter(
    "flexzone_refusals",
    "Requests refused: in the TLS handshake (tls), for the certificate or principal (authentication, 401), "
    "for the role, scope or origin (authorization, 403).",
    ["stage"],
)


def count_refusal(stage: str) -> None:
    """Count one refusal: "authentication" (no usable certificate or principal) or "authorization" (the
    role, scope or origin); the TLS handshake's are counted by the gunicorn worker as "tls"."""
    refusals_total.labels(stage).inc()


class _Refusal:
    """A refusal answered outside DRF, as `record` reads a response: its status and reason."""

    def __init__(self, status_code: int, why: str) -> None:
        self.status_code, self.data = status_code, {"detail": why}


def record_refusal(request, status_code: int, why: str, action: str, stage: str) -> None:
    """Count and audit a refusal answered outside DRF (the console's pages, the admin site)."""
    count_refusal(stage)
    try:
        record(request, _Refusal(status_code, why), action)
    except DatabaseError:
        log.exception("could not write the audit record for %s %s", request.method, request.path)


def should_record(method: str, status_code: int) -> bool:
    return method not in SAFE_METHODS or status_code in (401, 403)


def record(request, response, action: str) -> AuditEvent:
    """Write one AuditEvent for this request (outside the request's transaction, so a failed write is kept)."""
    django_request = getattr(request, "_request", request)
    identity = getattr(django_request, "flexzone_identity", None)
    principal = getattr(django_request, "flexzone_principal", None)
    extra = getattr(django_request, "flexzone_audit", {})
    status_code = response.status_code
    if status_code in (401, 403):
        outcome = AuditOutcome.DENIED
    elif status_code >= 400:
        outcome = AuditOutcome.FAILED
    else:
        outcome = AuditOutcome.ALLOWED
    detail = ""
    if status_code >= 400 and isinstance(getattr(response, "data", None), dict):
        detail = str(response.data.get("detail", ""))
    event = AuditEvent.objects.create(
        principal=principal,
        principal_name=principal.name if principal else "",
        cert_sha256=identity.sha256 if identity else "",
        cert_subject=storable(identity.subject)[:500] if identity else "",
        action=storable(action)[:64],
        method=storable(request.method)[:8],
        path=storable(django_request.get_full_path())[:500],
        outcome=outcome,
        status_code=status_code,
        detail=storable(detail)[:2000],
        target=storable(extra.get("target", ""))[:200],
        before=storable(extra.get("before")),
        after=storable(extra.get("after")),
        operation_id=extra.get("operation"),
        remote_addr=storable(django_request.META.get("REMOTE_ADDR", ""))[:64],
    )
    log.info(
        "%s %s %s by %s -> %s %s",
        event.action, event.method, event.path, event.principal_name or "(unknown)", status_code, outcome,
    )
    return event


def storable(value: Any) -> Any:
    """`value` with every NUL character written as the text `\\x00`: PostgreSQL's text and jsonb cannot
    hold one, and a refusal quoting what a client sent (a name with a NUL in it) must still be recorded."""
    if isinstance(value, str):
        return value.replace("\x00", "\\x00")
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def note(request, **fields) -> None:
    """Attach target/before/after/operation to the request's audit record."""
    django_request = getattr(request, "_request", request)
    current = getattr(django_request, "flexzone_audit", {})
    django_request.flexzone_audit = {**current, **fields}

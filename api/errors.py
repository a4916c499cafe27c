"""Every error the API returns is JSON of one shape:

    {"detail": "<one human sentence>", "code": "<machine code>",
     "errors": [{"field": "<input name>", "rule": "<validator code>", "message": "<what is wrong>"}]}

`errors` is present for validation failures (400) and conflicts (409); an edit of a value live links
were configured with is a 409 `in_use` (registry/in_use.py). Bad input never becomes a 500:
database refusals (IntegrityError, ProtectedError) are explained with the constraint's own message.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, IntegrityError
from django.db.models import ProtectedError
from django.http import JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from access import audit, redaction
from api.parsers import BodyRefused
from operations.errors import DeviceBusy
from operations.planner import PlanError
from registry import in_use
from registry.errors import explain_integrity_error

log = logging.getLogger("flexzone.api")


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The request conflicts with the registry's current state."


def flatten(detail, field: str | None = None) -> list[dict]:
    """DRF's nested {field: [ErrorDetail]} as a flat list of {field, rule, message}."""
    out: list[dict] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = key if field is None else f"{field}.{key}"
            if key == api_settings.NON_FIELD_ERRORS_KEY:
                name = field or key
            out.extend(flatten(value, name))
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            sub = f"{field}[{index}]" if isinstance(value, dict | list) else field
            out.extend(flatten(value, sub))
    else:
        out.append({"field": field or api_settings.NON_FIELD_ERRORS_KEY, "rule": getattr(detail, "code", None) or
                    "invalid", "message": str(detail)})
    return out


def _error(status_code: int, detail: str, code: str, errors: list[dict] | None = None, headers=None) -> Response:
    body: dict = {"detail": detail, "code": code}
    if errors is not None:
        body["errors"] = errors
    return Response(body, status=status_code, headers=headers)


# A body over the limit is read on to this many bytes and dropped, so that a client that sends all of
# its body before it reads the answer (most do) gets the JSON refusal instead of a reset connection.
DRAIN_LIMIT = 64 << 20


def too_large(request) -> Response:
    """413: the request body is over DATA_UPLOAD_MAX_MEMORY_SIZE; nothing of it was used."""
    stream = getattr(request, "_stream", None)
    remaining = min(int(request.META.get("CONTENT_LENGTH") or 0), DRAIN_LIMIT)
    try:
        while stream is not None and remaining > 0 and (chunk := stream.read(min(remaining, 1 << 20))):
            remaining -= len(chunk)
    except OSError:
        pass  # the client went away: the answer below is for the log and the audit trail
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    message = f"The request body is larger than the {limit} bytes this service accepts; nothing was done."
    return _error(413, message, "request_too_large", [{"field": "body", "rule": "max_size", "message": message}])


def exception_handler(exc, context):
    """Every error as JSON of the one shape; initiator WWNs outside the principal's sites taken out."""
    response = _handled(exc, context)
    request = context.get("request")
    if response is not None and request is not None and isinstance(response.data, dict | list):
        response.data = redaction.for_request(request).redact(response.data)
    return response


def _handled(exc, context):
    if isinstance(exc, RequestDataTooBig):
        request = context.get("request")
        return too_large(getattr(request, "_request", request))
    if isinstance(exc, DatabaseError) and (refusal := in_use.from_database(exc)) is not None:
        exc = refusal  # the database's own `in_use` rule (a write that skipped the models', a race): a 409 too
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))  # codes kept: an `in_use` refusal is a 409
    if isinstance(exc, BodyRefused):
        return _error(400, str(exc.detail), "parse_error", [{"field": "body", "rule": exc.rule,
                                                               "message": str(exc.detail)}])
    if isinstance(exc, DeviceBusy):
        errors = [{"field": exc.field, "rule": "device_busy", "message": exc.message}]
        return _error(409, str(exc), "device_busy", errors)
    if isinstance(exc, PlanError):
        errors = [{"field": exc.field, "rule": "lookup", "message": exc.message, "suggestions": exc.suggestions}]
        return _error(400, str(exc), "plan_error", errors)
    # ProtectedError is an IntegrityError: test it first.
    if isinstance(exc, ProtectedError):
        names = sorted({f"{type(obj).__name__.lower()}:{obj.pk}" for obj in exc.protected_objects})[:10]
        message = f"Still referenced by {', '.join(names)}; remove those first."
        errors = [{"field": "non_field_errors", "rule": "protected", "message": message}]
        return _error(409, message, "protected", errors)
    if isinstance(exc, IntegrityError):
        field, message = explain_integrity_error(exc)
        log.info("conflict: %s", message)
        return _error(409, message, "conflict", [{"field": field, "rule": "constraint", "message": message}])
    if isinstance(exc, exceptions.ValidationError):
        errors = flatten(exc.detail)
        if errors and all(e["rule"] == in_use.RULE for e in errors):
            # Valid input the registry's live links forbid for now: a conflict, not bad input (with
            # bad input beside it, the 400 below lists both).
            return _error(409, errors[0]["message"], in_use.RULE, errors)
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:3])
        return _error(400, f"Invalid input. {summary}", "invalid", errors)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        audit.count_refusal("authentication")
    elif isinstance(exc, exceptions.PermissionDenied):
        audit.count_refusal("authorization")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data.get("detail", "") if isinstance(response.data, dict) else str(response.data)
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    headers = {key: value for key, value in response.items()}
    return _error(response.status_code, str(detail), code, headers=headers)


def _api_path(request) -> bool:
    return request.path.startswith("/api/")


def not_found(request, exception=None):
    """Django's 404 for a path no route matches: JSON under /api/, the usual page elsewhere."""
    if not _api_path(request):
        return defaults.page_not_found(request, exception)
    return JsonResponse({"detail": f"No API endpoint at {request.path}.", "code": "not_found"}, status=404)


class JsonNotFoundUnderApi:
    """Middleware: with DEBUG on, Django answers a path no route matches with its technical page, not
    handler404; under /api/ that answer is the JSON 404 as well, so the contract holds in the demo."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # Only a path no route matched: a view's own 404 (an object that does not exist) stays its own.
        if (response.status_code == 404 and _api_path(request) and getattr(request, "resolver_match", None) is None
                and "json" not in response.get("Content-Type", "")):
            return not_found(request)
        return response


def bad_request(request, exception=None):
    """Django's 400 (a request refused before any view: a malformed host, too many fields, a body over
    the limit outside DRF's parsing): JSON under /api/."""
    if not _api_path(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        response = too_large(request)
        return JsonResponse(response.data, status=response.status_code)
    return JsonResponse({"detail": "The request could not be read.", "code": "bad_request"}, status=400)


def server_error(request):
    """Django's 500: JSON under /api/ (the error itself is logged, never shown)."""
    if not _api_path(request):
        return defaults.server_error(request)
    return JsonResponse({"detail": "The service failed to answer this request; it was logged.",
                         "code": "server_error"}, status=500)

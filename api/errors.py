"""Every error the API returns is JSON of one shape:

    {"detail": "<one human sentence>", "code": "<machine code>",
     "errors": [{"field": "<input name>", "rule": "<validator code>", "message": "<what is wrong>"}]}

`errors` is present for validation failures (400) and conflicts (409); an edit of a value live links
were configured with is a 409 `in_use` (registry/in_use.py). Bad input never becomes a 500:
database refusals (IntegrityError, ProtectedError) are explained with the constraint's own message.
"""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import ProtectedError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from api import audit
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


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {api_settings.NON_FIELD_ERRORS_KEY: exc.messages}
        )
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

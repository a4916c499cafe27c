"""The OpenAPI schema states the rules the service enforces, so that a client built from it sends what
is accepted and is refused only for what the schema forbids:

- string fields carry the pattern of the validator that checks them (names, descriptions, WWNs,
  printable ASCII);
- each list's filters are query parameters typed from the model field they filter on, and a value
  that field could not hold is a 400 naming the parameter and the rule (`QueryFilter`);
- every operation lists the error statuses it can answer (`document_errors`, a postprocessing hook).

`tests/api/test_contract.py` runs schemathesis from outside against the served schema to hold this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from django.core import validators as django_validators
from django.core.exceptions import FieldDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from django.db.models.fields.related import RelatedField
from django.db.models.fields.reverse_related import ForeignObjectRel
from drf_spectacular import openapi
from drf_spectacular.utils import OpenApiParameter

from api.fields import PRINTABLE_ASCII_PATTERN, invalid, validate_printable_ascii, whole_number
from registry.models import VSAN_MAX, VSAN_MIN, VSAN_RESERVED, validate_vsan
from registry.validators import (
    DESCRIPTION_PATTERN,
    SECRET_REF_PATTERN,
    SHORT_NAME_PATTERN,
    validate_description,
    validate_host,
    validate_secret_ref,
    validate_short_name,
)
from routers.platforms import WWN_ANY_CASE_PATTERN, WWN_PATTERN

# Most specific first: a field checked by several takes the first one's pattern (each implies the last).
PATTERNS = {
    validate_short_name: SHORT_NAME_PATTERN,
    validate_description: DESCRIPTION_PATTERN,
    validate_secret_ref: SECRET_REF_PATTERN,
    validate_printable_ascii: PRINTABLE_ASCII_PATTERN,
}
# Validators whose rule is not a pattern, as the schema states it (it replaces a printable-ASCII pattern).
FRAGMENTS = {
    validate_host: {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}, {"format": "hostname"}]},
    validate_vsan: {"minimum": VSAN_MIN, "maximum": VSAN_MAX, "not": {"enum": [VSAN_RESERVED]}},
}


# A filter that matches in any letter case states its field's pattern in any case too.
ANY_CASE = {WWN_PATTERN: WWN_ANY_CASE_PATTERN}


def pattern_of(field) -> str | None:
    """The pattern a serializer or model field's validators enforce, as the schema states it (for a
    relation written as a natural key, its key's)."""
    field = getattr(field, "key_field", field)
    explicit = getattr(field, "schema_pattern", None)
    if explicit:
        return explicit
    regexes = [_source(v.regex) for v in field.validators if isinstance(v, django_validators.RegexValidator)]
    if regexes:
        return regexes[0]
    return next((pattern for validator, pattern in PATTERNS.items() if validator in field.validators), None)


def _source(regex: str | re.Pattern[str]) -> str:
    return regex if isinstance(regex, str) else regex.pattern


@dataclass(frozen=True)
class QueryFilter:
    """A list's query parameter: `?param=value` keeps the rows whose `lookup` is value. The value must
    be one the model field at the end of the lookup could hold, by the same rules as a write."""

    param: str
    lookup: str
    model: type[models.Model]

    @cached_property
    def field(self) -> models.Field:
        model: type[models.Model] | None = self.model
        field: models.Field | ForeignObjectRel | None = None
        for part in self.lookup.split("__"):
            if model is None:
                break  # a lookup such as iexact
            try:
                field = model._meta.get_field(part)
            except FieldDoesNotExist:
                break
            model = field.related_model
        if field is None:
            raise ValueError(f"{self.model.__name__}: {self.lookup!r} names no field")
        if isinstance(field, RelatedField | ForeignObjectRel):  # a relation filters on its target's key
            return field.target_field
        return field

    @property
    def any_case(self) -> bool:
        return self.lookup.endswith("__iexact")

    def bounds(self) -> tuple[int, int]:
        low, high = (1 if self.field.primary_key else 0), 2**63 - 1
        for validator in self.field.validators:
            if isinstance(validator, django_validators.MinValueValidator):
                low = max(low, validator.limit_value)
            elif isinstance(validator, django_validators.MaxValueValidator):
                high = min(high, validator.limit_value)
        return low, high

    def schema(self) -> dict:
        field = self.field
        if isinstance(field, models.IntegerField):
            low, high = self.bounds()
            return {"type": "integer", "minimum": low, "maximum": high}
        if field.choices:
            return {"type": "string", "enum": [value for value, _label in field.choices]}
        pattern = pattern_of(field) or PRINTABLE_ASCII_PATTERN
        if self.any_case:
            pattern = ANY_CASE.get(pattern, pattern)
        schema = {"type": "string", "minLength": 1, "pattern": pattern}
        if field.max_length:
            schema["maxLength"] = field.max_length
        return schema

    def parameter(self) -> OpenApiParameter:
        path = self.lookup.replace("__iexact", " (in any letter case)").replace("__", ".")
        return OpenApiParameter(self.param, type=self.schema(), description=f"only those whose {path} is this")

    def clean(self, raw: str):
        """The value to filter by, or a 400 naming the parameter and the rule."""
        if isinstance(self.field, models.IntegerField):
            return whole_number(raw, self.param, *self.bounds())
        if raw == "":
            raise invalid(self.param, "A value is required: leave the parameter out to have every row.", "blank")
        try:
            validate_printable_ascii(raw)
            self.field.clean(raw.lower() if self.any_case else raw, None)
        except DjangoValidationError as exc:
            raise invalid(self.param, exc.messages[0], exc.error_list[0].code or "invalid") from None
        return raw


def query_filters(model: type[models.Model], filters: dict[str, str]) -> list[QueryFilter]:
    return [QueryFilter(param, lookup, model) for param, lookup in filters.items()]


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema, with the rules of our validators and the filters of each list."""

    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)
        # Only what a client writes: read-only text (a transcript, an audit detail) is whatever happened.
        if field.read_only:
            return
        fragment = getattr(field, "schema_fragment", None) or next(
            (fragment for validator, fragment in FRAGMENTS.items() if validator in field.validators), None)
        if fragment:
            schema.update(fragment)
            if "anyOf" in fragment:
                schema.pop("pattern", None)
            return
        if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema:
            pattern = pattern_of(field)
            if pattern:
                schema["pattern"] = pattern

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        if self.method == "GET" and self._is_list_view() and hasattr(self.view, "query_filters"):
            parameters += [query_filter.parameter() for query_filter in self.view.query_filters()]
        return parameters


_ERROR = {"$ref": "#/components/schemas/Error"}
_WHY = {
    400: "invalid input: errors name each field and the rule it broke",
    401: "no client certificate this service trusts",
    403: "the principal's role or scope does not allow this",
    404: "no such object",
    409: "a conflict with the registry's state or another site's grant",
    413: "the body is over the size this service accepts",
    415: "writes take application/json only",
}
# Answered by gunicorn before the API sees the request, so without the API's JSON body.
_URI_TOO_LONG = {"description": "the request line is longer than the server reads (8190 bytes)"}


def _statuses(path: str, method: str, operation: dict) -> list[int]:
    if path.startswith("/api/health/"):
        return []  # no authentication; 503 is documented with its own body
    statuses = [401, 403]
    takes_input = operation.get("requestBody") or any(p["in"] == "query" for p in operation.get("parameters", []))
    if takes_input:
        statuses.append(400)
    if "{" in path or any(p["name"] == "format" for p in operation.get("parameters", [])):
        statuses.append(404)  # no object with that id; or no renderer for that format
    if method in ("post", "put", "patch", "delete"):
        statuses += [409, 413, 415]
    return statuses


def document_errors(result, generator, request, public):
    """Postprocessing hook: each operation lists every error status it can answer, with the one
    error body (`Error`) the service gives for all of them; request bodies take no field they do not
    list (a misspelt field is a 400, api.serializers.KnownFieldsOnly)."""
    schemas = result.get("components", {}).get("schemas", {})
    for name, component in schemas.items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
            # What a read returns may be sent back on a write and is ignored (KnownFieldsOnly).
            read = schemas.get(name.removeprefix("Patched").removesuffix("Request"), {}).get("properties", {})
            for field, spec in read.items():
                if spec.get("readOnly") and field not in component.setdefault("properties", {}):
                    component["properties"][field] = {"readOnly": True, "description": "ignored on a write"}
    for path, methods in result.get("paths", {}).items():
        for method, operation in methods.items():
            responses = operation.setdefault("responses", {})
            for status in _statuses(path, method, operation):
                responses.setdefault(str(status), {"content": {"application/json": {"schema": _ERROR}},
                                                   "description": _WHY[status]})
            responses.setdefault("414", dict(_URI_TOO_LONG))
    return result

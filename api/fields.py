"""Serializer fields that refuse what DRF's defaults quietly accept.

DRF's IntegerField calls int(), which reads fullwidth and other Unicode digits ("８" -> 8); its
CharField trims whitespace, turning "XRAID1\\n" into "XRAID1". Inputs that may reach a router command
line must be exactly what was typed, in printable ASCII.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from rest_framework import exceptions, serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.relations import MANY_RELATION_KWARGS

from registry.validators import normalize_wwn
from routers.platforms import WWN_ANY_CASE_PATTERN

_ASCII_INT = re.compile(r"\A-?[0-9]{1,10}\Z")
_DIGITS = re.compile(r"\A[0-9]+\Z")
# Longer digit strings are out of every range here; int() of them would only cost time.
_MAX_DIGITS = 30
PRINTABLE_ASCII_PATTERN = r"^[\x20-\x7e]*$"  # as the API's schema states it (api/schema.py)
_PRINTABLE_ASCII = re.compile(r"\A[\x20-\x7e]*\Z")


def validate_printable_ascii(value: str) -> None:
    """Printable ASCII only: no control characters (newline, NUL, ESC...), no Unicode look-alikes."""
    if not _PRINTABLE_ASCII.match(value):
        raise ValidationError(
            "Use printable ASCII only (no control characters such as newlines, and no non-ASCII letters or "
            "digits that look like ASCII ones).",
            code="printable_ascii",
        )


def whole_number(raw: str, param: str, minimum: int, maximum: int | None = None) -> int:
    """`raw` as an int within [minimum, maximum], or a 400 naming `param` and the rule it broke."""
    if not _DIGITS.match(raw):
        raise invalid(param, "A whole number written with ASCII digits is required.", "integer")
    value = int(raw) if len(raw) <= _MAX_DIGITS else 10**_MAX_DIGITS
    if value < minimum:
        raise invalid(param, f"At least {minimum}.", "min_value")
    if maximum is not None and value > maximum:
        raise invalid(param, f"At most {maximum}.", "max_value")
    return value


def invalid(param: str, message: str, rule: str) -> exceptions.ValidationError:
    return exceptions.ValidationError({param: [ErrorDetail(message, code=rule)]})


class StrictCharField(serializers.CharField):
    """A CharField that keeps whitespace as given and accepts printable ASCII only."""

    default_error_messages = {"invalid": "A string is required."}

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        self.validators.append(validate_printable_ascii)

    def to_internal_value(self, data):
        if not isinstance(data, str):  # DRF's CharField would take 0 as "0"; the schema says string
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """An integer given as a JSON number, or, where the input is text (a query parameter: `text=True`),
    as ASCII digits; never a bool, float, string in a JSON body, or Unicode digit."""

    default_error_messages = {"invalid": "A whole number written with ASCII digits is required."}

    def __init__(self, *, text: bool = False, **kwargs) -> None:
        self.text = text
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, int):
            value = data
        elif self.text and isinstance(data, str) and _ASCII_INT.match(data):
            value = int(data)
        else:
            self.fail("invalid")
        self.run_validators(value)
        return value


class StrictFloatField(serializers.FloatField):
    """A number given as a JSON number; never a bool or a string (DRF's FloatField reads true as 1.0
    and "５" as 5.0)."""

    default_error_messages = {"invalid": "A number (JSON) is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class NaturalKeyField(serializers.SlugRelatedField):
    """A relation written as the target's natural key (a site's name, a zone's number).

    The key is checked by the key field's own rule before it reaches a query, so "８" is not zone 8.
    """

    def __init__(self, key_field: serializers.Field | None = None, **kwargs) -> None:
        self.key_field = key_field or StrictCharField(max_length=100)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        try:
            key = self.key_field.run_validation(data)
        except serializers.ValidationError as exc:
            raise serializers.ValidationError(exc.detail) from None
        return super().to_internal_value(key)

    @classmethod
    def many_init(cls, *args, **kwargs):
        # As RelatedField.many_init, but a list only: DRF's ManyRelatedField iterates any iterable, so
        # {} or {"a": 1} would be read as a list of its keys.
        list_kwargs = {key: value for key, value in kwargs.items() if key in MANY_RELATION_KWARGS}
        return ListOnlyRelatedField(child_relation=cls(*args, **kwargs), **list_kwargs)


class ListOnlyRelatedField(serializers.ManyRelatedField):
    def to_internal_value(self, data):
        if not isinstance(data, list):
            self.fail("not_a_list", input_type=type(data).__name__)
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only: DRF's BooleanField also takes 0, 1, "yes", "off" and more, none of which
    the schema's boolean allows."""

    default_error_messages = {"invalid": "true or false (a JSON boolean) is required."}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        self.fail("invalid")


class StrictIPAddressField(serializers.IPAddressField):
    """An IP address exactly as given: no surrounding whitespace, printable ASCII."""

    schema_fragment = {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        self.validators.insert(0, validate_printable_ascii)


class WWNField(StrictCharField):
    """A WWN as typed (printable ASCII, no padding), in any letter case; its value is the lower-case form."""

    schema_pattern = WWN_ANY_CASE_PATTERN

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_length", 23)
        super().__init__(**kwargs)

    def run_validation(self, data=serializers.empty):
        value = super().run_validation(data)
        try:
            return normalize_wwn(value)
        except ValidationError as exc:
            raise serializers.ValidationError(exc.messages[0], code="wwn_format") from None

"""Strict validators for everything a user can type into the registry.

Anything that may end up on a router command line (names, ports, zones, IPs, WWNs) is checked
against a whitelist here, before it is stored; the drivers check again before they send.
"""

import ipaddress
import re

from django.core.exceptions import ValidationError

WWN_PATTERN = r"^[0-9a-f]{2}(:[0-9a-f]{2}){7}$"
_WWN_ANY_CASE = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){7}$")
_SHORT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_DESCRIPTION = re.compile(r"^[A-Za-z0-9 _.,:/()#+@-]*$")
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_SECRET_REF = re.compile(r"^(env:[A-Z_][A-Z0-9_]{0,127}|file:[A-Za-z0-9][A-Za-z0-9._-]{0,127})$")


def normalize_wwn(value: str) -> str:
    """Return the canonical (lower-case) WWN or raise ValidationError naming the rule."""
    text = (value or "").strip()
    if not _WWN_ANY_CASE.fullmatch(text):
        raise ValidationError(
            "A WWN is eight colon-separated hex bytes, e.g. 21:00:00:e0:8b:0e:95:17; got %(value)r.",
            code="wwn_format",
            params={"value": value},
        )
    return text.lower()


def validate_short_name(value: str) -> None:
    if not _SHORT_NAME.fullmatch(value or ""):
        raise ValidationError(
            "Use 1-63 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit.",
            code="short_name",
        )


def validate_description(value: str) -> None:
    if not _DESCRIPTION.fullmatch(value or ""):
        raise ValidationError(
            "Use ASCII letters, digits, spaces and . , : / ( ) # + @ _ - only (no control characters, quotes, "
            "or shell/CLI metacharacters).",
            code="description",
        )


def validate_host(value: str) -> None:
    try:
        ipaddress.ip_address(value)
        return
    except ValueError:
        pass
    labels = (value or "").rstrip(".").split(".")
    if len(value or "") > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
        raise ValidationError("Enter an IP address or a DNS host name.", code="host")


def validate_secret_ref(value: str) -> None:
    if not _SECRET_REF.fullmatch(value or ""):
        raise ValidationError(
            'Use "env:VARIABLE_NAME" or "file:NAME" (a file in the secrets directory).', code="secret_ref"
        )

"""Strict validators for everything a user can type into the registry.

Anything that may end up on a router command line (names, ports, zones, IPs, WWNs) is checked
against a whitelist here, before it is stored; the drivers check again before they send.
"""

import ipaddress
import re

from django.core.exceptions import ValidationError

from routers import hostkeys, platforms

# The patterns are public so that the API's schema states the same rules (api/schema.py).
SHORT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"
DESCRIPTION_PATTERN = r"^[A-Za-z0-9 _.,:/()#+@-]*$"
_SHORT_NAME = re.compile(SHORT_NAME_PATTERN)
_DESCRIPTION = re.compile(DESCRIPTION_PATTERN)
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
# Router secrets come from environment variables under one prefix only (an admin must not be able to
# point a router at a host of their own and receive DATABASE_URL or the proxy secret as its login
# password), or from plain file names inside the secrets directory (no path, no leading dot).
SECRET_ENV_PREFIX = "FLEXZONE_ROUTER_SECRET_"
_SECRET_ENV = re.compile(rf"^{SECRET_ENV_PREFIX}[A-Z0-9_]{{1,100}}$")
_SECRET_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# The same rule as one pattern, for the API's schema ("no .." is the lookahead).
SECRET_REF_PATTERN = rf"^(env:{SECRET_ENV_PREFIX}[A-Z0-9_]{{1,100}}|file:(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{{0,127}})$"


def normalize_wwn(value: str) -> str:
    """Return the canonical (lower-case) WWN or raise ValidationError naming the rule (routers.platforms')."""
    try:
        return platforms.normalize_wwn(value)
    except ValueError as exc:
        raise ValidationError(str(exc), code="wwn_format") from None


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


def secret_ref_problem(value: str) -> str | None:
    """Why `value` is not an acceptable secret reference, or None."""
    scheme, colon, name = (value or "").partition(":")
    if scheme == "env" and colon:
        if not _SECRET_ENV.fullmatch(name):
            return (f'An "env:" reference names a variable {SECRET_ENV_PREFIX}<NAME> (upper-case letters, digits, '
                    f'underscores), e.g. env:{SECRET_ENV_PREFIX}PRIMARY_RTR; other variables are not router secrets.')
        return None
    if scheme == "file" and colon:
        if not _SECRET_FILE.fullmatch(name) or ".." in name:
            return ('A "file:" reference is a plain file name inside the secrets directory (letters, digits, ".", '
                    '"_", "-"; no "/", no leading ".", no ".."), e.g. file:primary-rtr.password.')
        return None
    return f'Use "env:{SECRET_ENV_PREFIX}<NAME>" or "file:NAME" (a file in the secrets directory).'


def validate_secret_ref(value: str) -> None:
    if problem := secret_ref_problem(value):
        raise ValidationError(problem, code="secret_ref")


def validate_ssh_host_key(value: str) -> None:
    if not value:
        return
    try:
        hostkeys.parse(value)
    except hostkeys.HostKeyError as exc:
        raise ValidationError(f"{exc}, e.g. the line `manage.py routers trust` shows.", code="ssh_host_key") from None

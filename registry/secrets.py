"""Resolve a router's secret reference at the moment of use; secrets never enter the database."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from registry.validators import secret_ref_problem


class SecretUnavailable(LookupError):
    pass


def resolve_secret(ref: str) -> str:
    """`env:FLEXZONE_ROUTER_SECRET_X` reads that environment variable; `file:NAME` reads
    FLEXZONE_SECRETS_DIR/NAME. The reference is checked again here (a row written before the rules,
    or by hand in the database, must not reach another variable or file either)."""
    if problem := secret_ref_problem(ref):
        raise SecretUnavailable(f"secret_ref: {ref!r} is refused: {problem}")
    scheme, _, name = ref.partition(":")
    if scheme == "env":
        value = os.environ.get(name)
        if value is None:
            raise SecretUnavailable(f"secret_ref: environment variable {name} is not set")
        return value
    if scheme == "file":
        path = Path(settings.FLEXZONE_SECRETS_DIR) / name
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise SecretUnavailable(f"secret_ref: cannot read {path}: {exc.strerror}") from None
    raise SecretUnavailable(f"secret_ref: unknown scheme in {ref!r} (use env: or file:)")

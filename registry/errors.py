"""Turn a database refusal back into the human message declared on the constraint it broke."""

from __future__ import annotations

from django.apps import apps
from django.db import IntegrityError

# Foreign keys are created by Django with generated names; these prefixes identify them.
_FOREIGN_KEY_MESSAGES = {
    "registry_device_zone_id": ("zone", "A device must belong to an existing zone."),
    "registry_device_owner_site_id": ("owner_site", "A device must be owned by an existing site."),
    "operations_link_router_id": ("router", "A link must use an existing router."),
    "registry_link_router_id": ("router", "A link must use an existing router."),  # a table moved, not renamed
    "registry_router_site_id": ("site", "A router must belong to an existing site."),
}
_NOT_NULL_MESSAGES = {
    ("registry_device", "zone_id"): ("zone", "A device must belong to a zone."),
}


def _declared_constraints() -> dict[str, tuple[str, str]]:
    found = {}
    for model in apps.get_models():  # the registry's and the engine's (links and locks)
        for constraint in model._meta.constraints:
            fields = list(getattr(constraint, "fields", ()) or ())
            field = fields[-1] if fields else "non_field_errors"
            found[constraint.name] = (field, str(constraint.violation_error_message))
    return found


def explain_integrity_error(exc: IntegrityError) -> tuple[str, str]:
    """Return (field, message) for an IntegrityError raised by the registry's tables."""
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    constraint = getattr(diag, "constraint_name", None) or ""
    text = str(exc)
    declared = _declared_constraints()
    for name, explained in declared.items():
        if name == constraint or name in text:
            return explained
    for prefix, explained in _FOREIGN_KEY_MESSAGES.items():
        if constraint.startswith(prefix) or prefix in text:
            return explained
    column = getattr(diag, "column_name", None) or ""
    table = getattr(diag, "table_name", None) or ""
    if (table, column) in _NOT_NULL_MESSAGES:
        return _NOT_NULL_MESSAGES[(table, column)]
    if "FOREIGN KEY" in text.upper():
        return ("non_field_errors", "A referenced object does not exist.")
    return ("non_field_errors", "The change conflicts with the registry's rules.")

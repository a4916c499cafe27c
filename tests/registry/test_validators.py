"""Validators accept exactly their whitelist: nothing may ride along after a valid value."""

import pytest
from django.core.exceptions import ValidationError

from registry import validators


@pytest.mark.parametrize(
    ("validator", "value"),
    [
        ("validate_short_name", "primary-rtr\n"),
        ("validate_description", "XRAID1\n"),
        ("validate_secret_ref", "file:primary-rtr\n"),
        ("validate_host", "router.example\n"),
    ],
)
def test_validators_refuse_a_trailing_newline(validator, value):
    with pytest.raises(ValidationError):
        getattr(validators, validator)(value)
    getattr(validators, validator)(value.rstrip("\n"))

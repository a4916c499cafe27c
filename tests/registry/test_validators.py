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


def test_resolving_a_secret_refuses_a_reference_outside_the_rules_even_if_it_is_stored(monkeypatch, tmp_path,
                                                                                       settings):
    from registry.secrets import SecretUnavailable, resolve_secret

    monkeypatch.setenv("DATABASE_URL", "postgres://flexzone:hunter2@db/flexzone")
    monkeypatch.setenv("FLEXZONE_ROUTER_SECRET_PRIMARY", "s3cret")
    settings.FLEXZONE_SECRETS_DIR = tmp_path / "secrets"
    settings.FLEXZONE_SECRETS_DIR.mkdir()
    (tmp_path / "outside").write_text("not a router secret")
    (settings.FLEXZONE_SECRETS_DIR / "primary.password").write_text("filed\n")
    assert resolve_secret("env:FLEXZONE_ROUTER_SECRET_PRIMARY") == "s3cret"
    assert resolve_secret("file:primary.password") == "filed"
    for ref in ("env:DATABASE_URL", "file:../outside", "file:.."):
        with pytest.raises(SecretUnavailable, match="refused"):
            resolve_secret(ref)

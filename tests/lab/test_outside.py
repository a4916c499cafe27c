"""The lab drives flexzone from outside (REST through the cli package, manage.py commands, the processes it
starts): the service does not install it as an app. Which packages the lab may import, and that the service
imports none of it, is checked with every other package's imports in tests/test_layout.py."""

from __future__ import annotations

from django.conf import settings


def test_the_lab_is_not_an_app_of_the_service():
    assert not [app for app in settings.INSTALLED_APPS if app.split(".")[0] in ("lab", "netem")]

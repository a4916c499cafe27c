"""WSGI entry point (served by gunicorn with mutual TLS; see docs/architecture.md): Django, behind the registry's
read cache (serving/read_cache.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
django_application = get_wsgi_application()

from serving.read_cache import RegistryReadCache  # noqa: E402  (needs the settings configured first)

application = RegistryReadCache(django_application)

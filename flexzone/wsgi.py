"""WSGI entry point (served by gunicorn with mutual TLS; see docs/architecture.md): Django, behind the registry's
read cache (serving/read_cache.py), behind the link and operation lists' one-statement path (api/fast_lists.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
django_application = get_wsgi_application()

from api.fast_lists import FastLists  # noqa: E402  (these need the settings configured first)
from serving.read_cache import RegistryReadCache  # noqa: E402

application = FastLists(RegistryReadCache(django_application))

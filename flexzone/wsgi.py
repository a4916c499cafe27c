"""WSGI entry point (served by gunicorn with mutual TLS; see README)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
application = get_wsgi_application()

"""Serving the web app: gunicorn's configuration and worker (mutual TLS, refused handshakes audited),
`manage.py serve`, and the read cache in front of Django (see wsgi)."""

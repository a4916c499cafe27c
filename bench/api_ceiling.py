"""The ceiling `bench api` measures flexzone against: a bare WSGI app, no Django, one fixed JSON body.

`bench api` serves it with serving.gunicorn_conf unchanged but for the app (the same gthread worker,
threads, keep-alive, certificates, client certificate required and CRL checked in the handshake),
and times it with the same client in the same run. What a flexzone request costs beyond this app's
is flexzone's own work: routing, middleware, authentication, the database, serializing.
"""

BODY = b'{"count":0,"next":null,"previous":null,"results":[]}'


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))])
    return [BODY]

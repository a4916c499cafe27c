"""Raw HTTPS requests to a test server, presenting a principal's client certificate."""

from __future__ import annotations

import http.client
import json
import ssl
from urllib.parse import urlsplit


def connection_for(server, name: str) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=server.pki.ca_file)
    context.load_cert_chain(*server.pki.pair(name))
    parts = urlsplit(server.url)
    return http.client.HTTPSConnection(parts.hostname, parts.port, context=context, timeout=10)


def get(connection: http.client.HTTPSConnection, path: str) -> tuple[int, dict]:
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, json.loads(response.read() or b"{}")

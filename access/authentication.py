"""Who is calling: the verified client certificate, from the TLS socket, mapped to a Principal.

The certificate comes from the live `ssl.SSLSocket` gunicorn puts in the WSGI environ
(`gunicorn.socket`): a key no HTTP header can produce, since headers arrive as `HTTP_*`. Behind nginx
(FLEXZONE_TRUST_PROXY_HEADERS), the proxy's X-Client-* headers are believed only on a request that came
over the unix socket (REMOTE_ADDR is empty) with the shared secret, when one is configured.

The CRL is checked here again although the handshake already did: a keep-alive connection opened
before a revocation is never re-handshaken, and a proxy may reload its CRL late.
"""

from __future__ import annotations

import hmac
import ssl
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import cast
from urllib.parse import unquote

from cryptography import x509
from django.conf import settings
from django.db import connection
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication

from access import pki
from access.models import Principal

_crl_cache: pki.CRLCache | None = None


def crl_cache() -> pki.CRLCache:
    global _crl_cache
    if _crl_cache is None or (_crl_cache.crl_path, _crl_cache.ca_path) != (
        settings.FLEXZONE_TLS_CRL,
        settings.FLEXZONE_TLS_CA,
    ):
        _crl_cache = pki.CRLCache(settings.FLEXZONE_TLS_CRL, settings.FLEXZONE_TLS_CA)
    return _crl_cache


@dataclass(frozen=True)
class ClientIdentity:
    """The verified client certificate of one request (`request.auth`)."""

    cert: x509.Certificate
    source: str  # "tls" (gunicorn socket) or "proxy" (nginx headers over the unix socket)

    @cached_property
    def sha256(self) -> str:
        return pki.fingerprint(self.cert)

    @cached_property
    def serial(self) -> str:
        return pki.serial_hex(self.cert)

    @cached_property
    def issuer(self) -> str:
        return pki.issuer_dn(self.cert)

    @property
    def subject(self) -> str:
        return self.cert.subject.rfc4514_string()


@dataclass(frozen=True)
class PrincipalUser:
    """What DRF sees as `request.user`: the principal, marked authenticated."""

    principal: Principal
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def role(self) -> str:
        return self.principal.role

    def __str__(self) -> str:
        return self.principal.name


def client_identity(request) -> ClientIdentity | None:
    """The verified client certificate of `request`, or None if the transport gave none."""
    meta = request.META
    sock = meta.get("gunicorn.socket")
    if isinstance(sock, ssl.SSLSocket):
        der = sock.getpeercert(binary_form=True)
        return _tls_identity(der) if der else None
    if settings.FLEXZONE_TRUST_PROXY_HEADERS and meta.get("REMOTE_ADDR", None) in ("", None):
        secret = settings.FLEXZONE_PROXY_SECRET  # required in proxy mode (checked at start-up)
        if not secret or not hmac.compare_digest(meta.get("HTTP_X_FLEXZONE_PROXY_SECRET", ""), secret):
            return None
        if meta.get("HTTP_X_CLIENT_VERIFY") == "SUCCESS" and meta.get("HTTP_X_CLIENT_CERT"):
            pem = unquote(meta["HTTP_X_CLIENT_CERT"]).encode()
            try:
                return ClientIdentity(x509.load_pem_x509_certificate(pem), "proxy")
            except ValueError:
                return None
    return None


@lru_cache(maxsize=1024)
def _tls_identity(der: bytes) -> ClientIdentity:
    """The parsed certificate and its fingerprint, issuer and serial, worked out once per certificate
    (a function of its bytes alone: whether it is revoked, or whose it is, is asked afresh every time)."""
    return ClientIdentity(x509.load_der_x509_certificate(der), "tls")


def find_principal(identity: ClientIdentity) -> Principal | None:
    """By fingerprint first, then by issuer and serial; never by subject or CN.

    Read from the database on every request, never cached: a principal revoked (or given another role)
    by any process, even by an UPDATE behind the ORM's back, is refused on its very next request, and
    nothing short of asking the database tells a process that. The query is written out rather than
    built by the ORM, whose query building costs more than the round trip itself; both columns are unique.
    """
    return _principal_where("cert_sha256 = %s", [identity.sha256]) or _principal_where(
        "cert_issuer = %s AND cert_serial = %s", [identity.issuer, identity.serial]
    )


def _principal_where(condition: str, params: list[str]) -> Principal | None:
    fields = Principal._meta.concrete_fields
    table, quote = Principal._meta.db_table, connection.ops.quote_name
    columns = [cast(str, field.column) for field in fields]  # a concrete field always has its column
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(quote(column) for column in columns)} FROM {quote(table)} WHERE {condition}", params
        )
        row = cursor.fetchone()
    if row is None:
        return None
    values = []
    for field, value in zip(fields, row, strict=True):
        # The backend's own converters, as the ORM applies them (SQLite: text dates, integer booleans).
        column = field.get_col(table)
        for convert in connection.ops.get_db_converters(column) + column.get_db_converters(connection):
            value = convert(value, column, connection)
        values.append(value)
    return Principal.from_db(connection.alias, [field.attname for field in fields], values)


def certificate_principal(request) -> tuple[Principal | None, str]:
    """The principal the request's client certificate speaks for, or (None, why not): no certificate,
    a revoked certificate, an unusable CRL (refuse everyone), an unregistered certificate or a revoked
    principal. The one check behind the API, the console and the admin. Leaves the identity and the
    principal on the request for the audit record."""
    identity = client_identity(request)
    request.flexzone_identity = identity
    if identity is None:
        return None, "A client certificate is required (mutual TLS)."
    try:
        if crl_cache().is_revoked(identity.cert):
            return None, "Your client certificate has been revoked."
    except pki.CRLUnusable as exc:
        return None, f"Refusing every client: {exc}."
    principal = find_principal(identity)
    if principal is None:
        return None, f"Your client certificate (SHA-256 {identity.sha256}) is not registered to any principal."
    request.flexzone_principal = principal
    if principal.revoked_at is not None:
        return None, f"Principal {principal.name} has been revoked."
    return principal, ""


class ClientCertificateAuthentication(BaseAuthentication):
    """DRF authentication from the TLS client certificate; see the module docstring."""

    def authenticate(self, request):
        principal, why = certificate_principal(request._request)
        if request._request.flexzone_identity is None:
            return None  # DRF answers 401 "not authenticated" (the role check says a certificate is required)
        if principal is None:
            raise exceptions.AuthenticationFailed(why)
        return PrincipalUser(principal), request._request.flexzone_identity

    def authenticate_header(self, request) -> str:
        # Any value makes DRF answer 401 (not 403) when no credentials were presented.
        return 'TLS-Client-Certificate realm="flexzone"'

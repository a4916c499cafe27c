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
from functools import cached_property
from urllib.parse import unquote

from cryptography import x509
from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication

from api import pki
from registry.models import Principal

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

    @property
    def serial(self) -> str:
        return pki.serial_hex(self.cert)

    @property
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
        if der:
            return ClientIdentity(x509.load_der_x509_certificate(der), "tls")
        return None
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


def find_principal(identity: ClientIdentity) -> Principal | None:
    """By fingerprint first, then by issuer and serial; never by subject or CN."""
    principal = Principal.objects.filter(cert_sha256=identity.sha256).first()
    if principal is None:
        principal = Principal.objects.filter(cert_issuer=identity.issuer, cert_serial=identity.serial).first()
    return principal


class ClientCertificateAuthentication(BaseAuthentication):
    """DRF authentication from the TLS client certificate; see the module docstring."""

    def authenticate(self, request):
        identity = client_identity(request._request)
        request._request.flexzone_identity = identity
        if identity is None:
            return None
        try:
            revoked = crl_cache().is_revoked(identity.cert)
        except pki.CRLUnusable as exc:
            raise exceptions.AuthenticationFailed(f"Refusing every client: {exc}.") from None
        if revoked:
            raise exceptions.AuthenticationFailed("Your client certificate has been revoked.")
        principal = find_principal(identity)
        if principal is None:
            raise exceptions.AuthenticationFailed(
                f"Your client certificate (SHA-256 {identity.sha256}) is not registered to any principal."
            )
        request._request.flexzone_principal = principal
        if principal.revoked_at is not None:
            raise exceptions.AuthenticationFailed(f"Principal {principal.name} has been revoked.")
        return PrincipalUser(principal), identity

    def authenticate_header(self, request) -> str:
        # Any value makes DRF answer 401 (not 403) when no credentials were presented.
        return 'TLS-Client-Certificate realm="flexzone"'

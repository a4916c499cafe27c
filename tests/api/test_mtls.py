"""Mutual TLS against a real gunicorn: who gets in, who is refused in the handshake, and revocation."""

from __future__ import annotations

import datetime as dt
import time

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from access import pki
from access.authentication import crl_cache  # noqa: F401  (imported so a broken module fails collection)
from tests.support.mtls import connection_for, get


def refusal(server, name: str | None) -> str:
    """The error text a client gets when the handshake refuses `name` (None: no certificate)."""
    with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)) as caught:
        server.session(name).get(f"{server.url}/api/sites/", timeout=10)
    return str(caught.value)


def test_alice_lists_the_sites_over_mutual_tls(api_server, cast):
    response = api_server.session("alice").get(f"{api_server.url}/api/sites/", timeout=10)
    assert response.status_code == 200
    assert [site["name"] for site in response.json()["results"]] == ["primary-site", "remote-site"]


def test_a_client_without_a_certificate_is_refused_in_the_handshake(api_server, cast):
    assert "certificate required" in refusal(api_server, None)


def test_mallory_with_alices_exact_subject_from_another_ca_is_refused(api_server, cast):
    mallory, alice = api_server.pki.certs["mallory"], api_server.pki.certs["alice"]
    assert mallory.subject == alice.subject and mallory.issuer == alice.issuer  # same names, other keys
    assert "unknown ca" in refusal(api_server, "mallory")


def test_a_certificate_from_an_unrelated_ca_is_refused_in_the_handshake(api_server, cast):
    assert "unknown ca" in refusal(api_server, "stranger")


def test_a_refused_handshake_is_in_the_audit_log(api_server, cast):
    from access.models import AuditEvent

    def reasons() -> list[str]:
        return [event.detail for event in AuditEvent.objects.filter(action="tls.handshake", outcome="denied",
                                                                     remote_addr="127.0.0.1")]

    refusal(api_server, "stranger")  # an unknown CA
    refusal(api_server, None)  # no certificate at all
    deadline = time.monotonic() + 10
    # (A refusal provoked by the test before this one may land here too: the server records it after
    # the client has gone.)
    while not (any("UNKNOWN_CA" in r.upper() or "VERIFY_FAILED" in r.upper() for r in reasons())
               and any("CERTIFICATE" in r.upper() and "REQUIRED" in r.upper() or "DID_NOT_RETURN" in r.upper()
                       for r in reasons())) and time.monotonic() < deadline:
        time.sleep(0.05)
    found = reasons()
    assert any("UNKNOWN_CA" in r.upper() or "VERIFY_FAILED" in r.upper() for r in found), found
    assert any("DID_NOT_RETURN" in r.upper() or "REQUIRED" in r.upper() for r in found), found
    assert all(r.startswith("TLS handshake refused: ") for r in found)


def test_a_principal_registered_by_issuer_and_serial_is_recognised(api_server, cast):
    from access.models import Principal

    eve = api_server.pki.certs["eve"]
    Principal.objects.create(name="eve", role="viewer", cert_issuer=pki.issuer_dn(eve), cert_serial=pki.serial_hex(eve))
    assert api_server.session("eve").get(f"{api_server.url}/api/sites/", timeout=10).status_code == 200


def test_an_expired_certificate_is_refused_in_the_handshake(api_server, cast):
    assert "certificate expired" in refusal(api_server, "expired")


def test_a_valid_certificate_without_a_principal_gets_401_naming_its_fingerprint(api_server, cast):
    response = api_server.session("eve").get(f"{api_server.url}/api/sites/", timeout=10)
    assert response.status_code == 401
    assert pki.fingerprint(api_server.pki.certs["eve"]) in response.json()["detail"]
    from access.models import AuditEvent

    event = AuditEvent.objects.get(status_code=401)
    assert event.outcome == "denied" and event.cert_sha256 == pki.fingerprint(api_server.pki.certs["eve"])


def test_a_revoked_principal_gets_401_even_with_a_valid_certificate(api_server, cast):
    from django.utils import timezone

    from access.models import Principal

    Principal.objects.filter(name="bob").update(revoked_at=timezone.now())
    response = api_server.session("bob").get(f"{api_server.url}/api/sites/", timeout=10)
    assert response.status_code == 401
    assert response.json()["detail"] == "Principal bob has been revoked."


def test_headers_cannot_claim_another_identity(api_server, cast):
    bob_pem = api_server.pki.certs["bob"].public_bytes(serialization.Encoding.PEM).decode()
    forged = {
        "X-Client-Verify": "SUCCESS",
        "X-Client-Cert": bob_pem.replace("\n", "%0A"),
        "SSL-Client-Cert": bob_pem.replace("\n", " "),
        "X-SSL-Client-S-DN": "CN=root",
    }
    response = api_server.session("bob").post(
        f"{api_server.url}/api/connect/", json={"site": "remote-site", "device_description": "XRAID1"},
        headers=forged, timeout=10,
    )
    assert response.status_code == 403  # still bob, a viewer
    no_cert = api_server.session(None)
    with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
        no_cert.get(f"{api_server.url}/api/sites/", headers=forged, timeout=10)


@pytest.mark.slow
def test_revocation_refuses_new_handshakes_and_a_keep_alive_connection_opened_before_it(api_server, cast):
    keep_alive = connection_for(api_server, "dave")
    assert get(keep_alive, "/api/sites/")[0] == 200
    socket_before = keep_alive.sock

    api_server.pki.ca.revoke("dave")  # rewrites crl.pem atomically; the principal row is left alone

    status, body = get(keep_alive, "/api/sites/")
    assert keep_alive.sock is socket_before, "the second request must reuse the connection opened before"
    assert status == 401
    assert body["detail"] == "Your client certificate has been revoked."
    assert "certificate revoked" in refusal(api_server, "dave")
    # Nobody else is affected, and no restart happened.
    assert api_server.session("alice").get(f"{api_server.url}/api/sites/", timeout=10).status_code == 200
    assert api_server.process.poll() is None


def test_an_expired_crl_fails_closed_in_the_app(tmp_path):
    ca = pki.init_ca(tmp_path)
    alice = ca.issue("alice")
    cache = pki.CRLCache(tmp_path / pki.CRL, tmp_path / pki.CA_CERT)
    assert cache.is_revoked(alice) is False
    ca.publish_crl(days=0)  # nextUpdate = now: expired a moment later
    stale = x509.load_pem_x509_crl((tmp_path / pki.CRL).read_bytes())
    assert stale.next_update_utc <= dt.datetime.now(dt.UTC)
    with pytest.raises(pki.CRLUnusable, match="expired"):
        cache.is_revoked(alice)


def test_a_crl_signed_by_another_ca_fails_closed(tmp_path):
    ours, theirs = pki.init_ca(tmp_path / "ours"), pki.init_ca(tmp_path / "theirs")
    alice = ours.issue("alice")
    (tmp_path / "ours" / pki.CRL).write_bytes((tmp_path / "theirs" / pki.CRL).read_bytes())
    cache = pki.CRLCache(tmp_path / "ours" / pki.CRL, tmp_path / "ours" / pki.CA_CERT)
    with pytest.raises(pki.CRLUnusable, match="not signed by the configured CA"):
        cache.is_revoked(alice)
    assert theirs.cert.subject == ours.cert.subject  # same name, so only the signature tells them apart


def test_a_missing_or_corrupt_crl_fails_closed_in_the_app(tmp_path):
    ca = pki.init_ca(tmp_path)
    alice = ca.issue("alice")
    cache = pki.CRLCache(tmp_path / pki.CRL, tmp_path / pki.CA_CERT)
    (tmp_path / pki.CRL).write_text("not a CRL\n")
    with pytest.raises(pki.CRLUnusable, match="cannot be read"):
        cache.is_revoked(alice)
    (tmp_path / pki.CRL).unlink()
    with pytest.raises(pki.CRLUnusable, match="unreadable"):
        cache.is_revoked(alice)
    ca.publish_crl()
    assert cache.is_revoked(alice) is False

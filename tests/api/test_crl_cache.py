"""The app's own CRL check: a replaced CRL counts from the next call, and a lookup does not walk the list."""

from __future__ import annotations

from access import pki


def test_a_revocation_is_seen_by_the_next_check_however_many_the_crl_lists(tmp_path):
    ca = pki.init_ca(tmp_path)
    names = [f"client-{index}" for index in range(40)]
    certs = {name: ca.issue(name) for name in names}
    cache = pki.CRLCache(tmp_path / pki.CRL, tmp_path / pki.CA_CERT)
    assert not any(cache.is_revoked(cert) for cert in certs.values())

    for name in names[:-1]:
        ca.revoke(name)  # each rewrites crl.pem (temp file + rename): a new inode every time
        assert cache.is_revoked(certs[name]), name
    assert not cache.is_revoked(certs[names[-1]])
    ca.revoke(names[-1])
    assert cache.is_revoked(certs[names[-1]])


def test_a_crl_rewritten_in_place_is_still_noticed(tmp_path):
    ca = pki.init_ca(tmp_path)
    alice, bob = ca.issue("alice"), ca.issue("bob")
    cache = pki.CRLCache(tmp_path / pki.CRL, tmp_path / pki.CA_CERT)
    assert not cache.is_revoked(alice)
    ca.revoke("alice")
    revoking_alice = (tmp_path / pki.CRL).read_bytes()
    ca.revoke("bob")
    assert cache.is_revoked(bob)
    # Back to the CRL that lists alice only, written over the same file (same inode) by a careless tool.
    with open(tmp_path / pki.CRL, "r+b") as handle:
        handle.write(revoking_alice)
        handle.truncate()
    assert cache.is_revoked(alice) and not cache.is_revoked(bob)

"""The CA management commands and the demo PKI: real certificates, checked with OpenSSL's verifier."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from django.core.management import CommandError, call_command

from access import pki
from access.models import Principal

ROOT = Path(__file__).resolve().parents[2]


def openssl_verify(directory, name: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["openssl", "verify", "-crl_check", "-CAfile", str(directory / "ca.pem"), "-CRLfile",
         str(directory / "crl.pem"), str(directory / f"{name}.pem")],
        capture_output=True, text=True,
    )


def test_issue_client_registers_the_principal_by_fingerprint_with_role_and_scope(tmp_path, demo):
    call_command("ca", "--dir", str(tmp_path), "init")
    call_command("ca", "--dir", str(tmp_path), "issue-server")
    call_command("ca", "--dir", str(tmp_path), "issue-client", "alice", "--role", "operator",
                 "--site", "primary-site", "--site", "remote-site", "--zone", "1", "--zone", "2")
    cert = pki.load_certificate(tmp_path / "alice.pem")
    alice = Principal.objects.get(name="alice")
    assert alice.cert_sha256 == pki.fingerprint(cert) and alice.cert_serial == pki.serial_hex(cert)
    assert alice.role == "operator"
    assert sorted(alice.sites.values_list("name", flat=True)) == ["primary-site", "remote-site"]
    assert sorted(alice.zones.values_list("zone_id", flat=True)) == [1, 2]
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.UniformResourceIdentifier) == ["urn:flexzone:principal:alice"]
    assert openssl_verify(tmp_path, "alice").returncode == 0
    server = pki.load_certificate(tmp_path / "server.pem")
    assert "127.0.0.1" in {str(ip) for ip in server.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.IPAddress)}
    ssl.create_default_context().load_cert_chain(tmp_path / "alice.pem", tmp_path / "alice.key")


def test_revoke_rewrites_the_crl_atomically_and_marks_the_principal(tmp_path, demo):
    call_command("ca", "--dir", str(tmp_path), "init")
    call_command("ca", "--dir", str(tmp_path), "issue-client", "bob")
    before = (tmp_path / "crl.pem").stat().st_ino
    call_command("ca", "--dir", str(tmp_path), "revoke", "bob")
    assert (tmp_path / "crl.pem").stat().st_ino != before  # a new file renamed into place, not rewritten
    assert "certificate revoked" in openssl_verify(tmp_path, "bob").stdout + openssl_verify(tmp_path, "bob").stderr
    assert Principal.objects.get(name="bob").revoked_at is not None
    assert not list(tmp_path.glob(".crl.pem.*"))  # no temporary file left behind
    with pytest.raises(CommandError, match="no live certificate"):
        call_command("ca", "--dir", str(tmp_path), "revoke", "bob")


def test_init_refuses_to_overwrite_a_ca(tmp_path, db):
    call_command("ca", "--dir", str(tmp_path), "init")
    with pytest.raises(CommandError, match="refusing to overwrite"):
        call_command("ca", "--dir", str(tmp_path), "init")


def test_demo_pki_is_idempotent_and_registers_alice_and_bob(tmp_path, demo):
    call_command("demo_pki", "--dir", str(tmp_path))
    files = {name: (tmp_path / name).read_bytes() for name in ("ca.pem", "server.pem", "alice.pem", "bob.pem")}
    call_command("demo_pki", "--dir", str(tmp_path))
    assert {name: (tmp_path / name).read_bytes() for name in files} == files
    for name in ("ca.pem", "server.pem", "server.key", "alice.pem", "alice.key", "bob.pem", "bob.key", "crl.pem"):
        assert (tmp_path / name).exists(), name
    assert oct((tmp_path / "alice.key").stat().st_mode & 0o777) == "0o600"
    alice, bob = Principal.objects.get(name="alice"), Principal.objects.get(name="bob")
    assert (alice.role, bob.role) == ("operator", "viewer")
    assert sorted(alice.sites.values_list("name", flat=True)) == ["primary-site", "remote-site"]
    assert alice.cert_sha256 == pki.fingerprint(pki.load_certificate(tmp_path / "alice.pem"))
    assert openssl_verify(tmp_path, "alice").returncode == 0


def test_demo_pki_gives_alice_bob_and_the_admin_a_browser_bundle_and_prometheus_a_monitor_certificate(
    tmp_path, demo
):
    from cryptography.hazmat.primitives.serialization import pkcs12

    call_command("demo_pki", "--dir", str(tmp_path))
    for name, role in (("alice", "operator"), ("bob", "viewer"), ("root", "admin")):
        principal = Principal.objects.get(name=name)
        assert principal.role == role
        password = (tmp_path / f"{name}.p12.password").read_bytes().strip()
        key, cert, _chain = pkcs12.load_key_and_certificates((tmp_path / f"{name}.p12").read_bytes(), password)
        assert pki.fingerprint(cert) == principal.cert_sha256 and key is not None
        assert oct((tmp_path / f"{name}.p12").stat().st_mode & 0o777) == "0o600"
    prometheus = Principal.objects.get(name="prometheus")
    assert prometheus.role == "monitor"
    assert prometheus.cert_sha256 == pki.fingerprint(pki.load_certificate(tmp_path / "prometheus.pem"))
    assert not (tmp_path / "prometheus.p12").exists()


RACING_REVOKE = """
import pathlib, sys, time
from access import pki
directory, go, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
(directory / f"{name}.ready").touch()
while not go.exists():
    time.sleep(0.001)
pki.CA.load(directory).revoke(name)
"""


def test_revocations_from_processes_running_at_once_all_reach_the_index_and_the_crl(tmp_path):
    ca = pki.init_ca(tmp_path, "race CA")
    names = [f"client{i}" for i in range(10)]
    serials = {pki.serial_hex(ca.issue(name)) for name in names}
    go = tmp_path / "go"
    racers = [subprocess.Popen([sys.executable, "-c", RACING_REVOKE, str(tmp_path), str(go), name], cwd=ROOT)
              for name in names]
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"{name}.ready").exists() for name in names) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()  # all of them revoke at once
        assert [racer.wait(60) for racer in racers] == [0] * len(names)
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
    revoked_in_index = {entry["serial"] for entry in pki.read_index(tmp_path) if entry["revoked_at"]}
    crl = x509.load_pem_x509_crl((tmp_path / "crl.pem").read_bytes())
    assert revoked_in_index == serials
    assert {format(entry.serial_number, "x") for entry in crl} == serials


@pytest.mark.parametrize("action", [["issue-client", "carl", "--role", "viewer"], ["revoke", "carl"]])
def test_a_ca_action_that_registers_stops_before_it_issues_or_revokes_on_an_unmigrated_database(tmp_path, action):
    # All or nothing: a certificate issued (or a CRL rewritten) whose principal could not be written is half
    # an action. Before, issue-client wrote carl.pem and then failed with a traceback.
    pki_dir = tmp_path / "pki"
    env = {**{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
           "FLEXZONE_SQLITE_PATH": str(tmp_path / "empty.sqlite3")}
    ca = [sys.executable, "manage.py", "ca", "--dir", str(pki_dir)]
    assert subprocess.run([*ca, "init"], cwd=ROOT, env=env, capture_output=True).returncode == 0
    if action[0] == "revoke":
        subprocess.run([*ca, "issue-client", "carl", "--no-register"], cwd=ROOT, env=env, check=True,
                       capture_output=True)
    before = {path.name: path.read_bytes() for path in pki_dir.iterdir()}
    done = subprocess.run([*ca, *action], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "run `python manage.py migrate` first" in done.stderr
    assert {path.name: path.read_bytes() for path in pki_dir.iterdir()} == before  # nothing issued, CRL untouched

"""A small certificate authority for the API's mutual TLS, built on `cryptography`.

One directory holds the CA (`ca.pem`, `ca.key`), the server pair (`server.pem`, `server.key`), one
pair per client (`NAME.pem`, `NAME.key`), the revocation list (`crl.pem`) and `index.json`, the
record of everything issued and revoked from which the CRL is rebuilt. Nothing here touches Django,
so the gunicorn config and the tests can use it on their own.

pyOpenSSL's certificate and CRL builders are deprecated or removed; `cryptography` is the library
for issuing (pyOpenSSL 24.3.0 removed its CRL API and 26.2/26.3 removed or deprecated the
certificate builders; its README says to use cryptography for anything but TLS connections).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT, CA_KEY, CRL, INDEX = "ca.pem", "ca.key", "crl.pem", "index.json"
SERVER = "server"
DEFAULT_CLIENT_DAYS = 365
# An expired CRL makes OpenSSL refuse every client, so each publication is valid for a long while
# and `ca crl` (or any revoke) re-signs it.
CRL_DAYS = 30
CLIENT_URI_PREFIX = "urn:flexzone:principal:"
_index_lock = threading.Lock()
LOCK_FILE = ".ca.lock"


@contextmanager
def _ca_lock(directory: Path) -> Iterator[None]:
    """Hold the CA directory against other threads and other processes (`manage.py ca` run twice at
    once): every read-modify-write of the index, and each CRL publication from it, runs alone, so no
    revocation is lost from the index or left out of the next CRL."""
    with _index_lock:
        descriptor = os.open(Path(directory) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
            os.close(descriptor)


class PKIError(Exception):
    """A CA operation that cannot be done (no CA yet, unknown certificate, bad name)."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def fingerprint(cert: x509.Certificate) -> str:
    """Lower-case hex SHA-256 of the DER certificate: the principal key."""
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def serial_hex(cert: x509.Certificate) -> str:
    return format(cert.serial_number, "x")


def issuer_dn(cert: x509.Certificate) -> str:
    return cert.issuer.rfc4514_string()


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write to a temporary file in the same directory, then rename over `path` (atomic on POSIX).

    Readers (gunicorn's context hook, the app's CRL cache) see the old file or the new one, never half.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _check_name(name: str) -> None:
    if not name or len(name) > 63 or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in name):
        raise PKIError(f"{name!r}: use 1-63 ASCII letters, digits, '.', '_' or '-'")
    if name in (SERVER, "ca", "crl", "index"):
        raise PKIError(f"{name!r} is reserved for the CA's own files")


@dataclass
class CA:
    """The CA's certificate and key, loaded from a PKI directory."""

    directory: Path
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def load(cls, directory: Path | str) -> CA:
        directory = Path(directory)
        try:
            cert = x509.load_pem_x509_certificate((directory / CA_CERT).read_bytes())
            key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), password=None)
        except FileNotFoundError:
            raise PKIError(f"no CA in {directory}; run `manage.py ca init` first") from None
        if not isinstance(key, ec.EllipticCurvePrivateKey):  # `ca init` makes a P-256 key, and issue() signs with it
            raise PKIError(f"the CA key in {directory} is not an elliptic-curve key")
        return cls(directory, cert, key)

    def _builder(self, subject: x509.Name, public_key, not_before: dt.datetime, not_after: dt.datetime):
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.cert.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )

    def issue(
        self,
        name: str,
        *,
        server: bool = False,
        hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
        days: int = DEFAULT_CLIENT_DAYS,
        not_before: dt.datetime | None = None,
        not_after: dt.datetime | None = None,
        subject: x509.Name | None = None,
    ) -> x509.Certificate:
        """Issue `NAME.pem`/`NAME.key` (a client unless `server`), record it in the index, return it."""
        if not server:
            _check_name(name)
        key = ec.generate_private_key(ec.SECP256R1())
        start = not_before or _now() - dt.timedelta(minutes=5)
        end = not_after or start + dt.timedelta(days=days)
        if subject is None:
            subject = x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "flexzone"),
                    x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "servers" if server else "api-clients"),
                    x509.NameAttribute(NameOID.COMMON_NAME, hosts[0] if server else name),
                ]
            )
        builder = self._builder(subject, key.public_key(), start, end).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        )
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True, key_encipherment=False, content_commitment=False, data_encipherment=False,
                key_agreement=True, key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(_host_names(hosts)), critical=False)
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        else:
            # A SAN on client certificates: RFC 5280 path validators (cryptography's ClientVerifier) insist.
            uri = x509.UniformResourceIdentifier(CLIENT_URI_PREFIX + name)
            builder = builder.add_extension(x509.SubjectAlternativeName([uri]), critical=False)
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        write_atomically(self.directory / f"{name}.key", _key_pem(key), mode=0o600)
        write_atomically(self.directory / f"{name}.pem", _pem(cert))
        with _ca_lock(self.directory):
            index = read_index(self.directory)
            index.append(
                {
                    "name": name,
                    "kind": "server" if server else "client",
                    "serial": serial_hex(cert),
                    "sha256": fingerprint(cert),
                    "subject": cert.subject.rfc4514_string(),
                    "not_after": cert.not_valid_after_utc.isoformat(),
                    "revoked_at": None,
                }
            )
            _write_index(self.directory, index)
        return cert

    def revoke(self, name_or_serial: str) -> list[dict]:
        """Mark every live certificate named NAME (or with that hex serial) revoked and republish the CRL."""
        wanted = name_or_serial.strip().lower()
        with _ca_lock(self.directory):
            index = read_index(self.directory)
            hits = [
                entry
                for entry in index
                if entry["revoked_at"] is None and (entry["name"].lower() == wanted or entry["serial"] == wanted)
            ]
            if not hits:
                raise PKIError(f"no live certificate is named or numbered {name_or_serial!r}")
            for entry in hits:
                entry["revoked_at"] = _now().isoformat()
            _write_index(self.directory, index)
            self._publish_crl(CRL_DAYS)
        return hits

    def publish_crl(self, days: int = CRL_DAYS) -> x509.CertificateRevocationList:
        """Rebuild `crl.pem` from the index, signed now, valid for `days`; replaced atomically."""
        with _ca_lock(self.directory):
            return self._publish_crl(days)

    def _publish_crl(self, days: int) -> x509.CertificateRevocationList:
        now = _now()
        crl_path = self.directory / CRL
        number = 1
        if crl_path.exists():
            previous = x509.load_pem_x509_crl(crl_path.read_bytes())
            try:
                number = previous.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number + 1
            except x509.ExtensionNotFound:
                pass
        builder = (
            x509.CertificateRevocationListBuilder()
            .issuer_name(self.cert.subject)
            .last_update(now - dt.timedelta(minutes=1))
            .next_update(now + dt.timedelta(days=days))
            .add_extension(x509.CRLNumber(number), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        for entry in read_index(self.directory):
            if entry["revoked_at"]:
                builder = builder.add_revoked_certificate(
                    x509.RevokedCertificateBuilder()
                    .serial_number(int(entry["serial"], 16))
                    .revocation_date(dt.datetime.fromisoformat(entry["revoked_at"]))
                    .build()
                )
        crl = builder.sign(self.key, hashes.SHA256())
        write_atomically(crl_path, crl.public_bytes(serialization.Encoding.PEM))
        return crl


def _host_names(hosts: tuple[str, ...]) -> list[x509.GeneralName]:
    import ipaddress

    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def init_ca(directory: Path | str, common_name: str = "flexzone API CA", days: int = 3650) -> CA:
    """Create a CA (EC P-256) and an empty CRL in `directory`. Refuses to overwrite an existing CA."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if (directory / CA_CERT).exists() or (directory / CA_KEY).exists():
        raise PKIError(f"{directory} already holds a CA; refusing to overwrite it")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "flexzone"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, key_encipherment=False, content_commitment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    write_atomically(directory / CA_KEY, _key_pem(key), mode=0o600)
    write_atomically(directory / CA_CERT, _pem(cert))
    _write_index(directory, [])
    ca = CA(directory, cert, key)
    ca.publish_crl()
    return ca


def read_index(directory: Path | str) -> list[dict]:
    path = Path(directory) / INDEX
    return json.loads(path.read_text()) if path.exists() else []


def _write_index(directory: Path, index: list[dict]) -> None:
    write_atomically(directory / INDEX, (json.dumps(index, indent=2) + "\n").encode(), mode=0o600)


def load_certificate(path: Path | str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(Path(path).read_bytes())


def demo_pki(directory: Path | str, clients: tuple[str, ...] = ("alice", "bob")) -> dict[str, x509.Certificate]:
    """Make sure `directory` holds a CA, a server pair, the given clients and a current CRL.

    Idempotent: existing files are kept while they are still valid for a day; anything missing or
    about to expire is (re)issued. Returns the client certificates by name.
    """
    directory = Path(directory)
    ca = CA.load(directory) if (directory / CA_CERT).exists() else init_ca(directory, "flexzone demo CA")
    if _needs_issuing(directory, SERVER):
        ca.issue(SERVER, server=True)
    certs = {}
    for name in clients:
        if _needs_issuing(directory, name):
            ca.issue(name)
        certs[name] = load_certificate(directory / f"{name}.pem")
    crl_path = directory / CRL
    if not crl_path.exists() or _expires_within(x509.load_pem_x509_crl(crl_path.read_bytes()), dt.timedelta(days=1)):
        ca.publish_crl()
    return certs


def _needs_issuing(directory: Path, name: str) -> bool:
    pem, key = directory / f"{name}.pem", directory / f"{name}.key"
    if not pem.exists() or not key.exists():
        return True
    cert = load_certificate(pem)
    revoked = {entry["serial"] for entry in read_index(directory) if entry["revoked_at"]}
    return cert.not_valid_after_utc < _now() + dt.timedelta(days=1) or serial_hex(cert) in revoked


class CRLCache:
    """The CRL as the app re-checks it on every request, re-read when the file changes.

    Keyed on (mtime_ns, size, inode), checked by one stat() a request, so an atomic replace is noticed
    by the next request. The revoked serials are kept as a set: a lookup in the CRL itself walks every
    entry (0.35 ms a request with 10,000 revocations; a set answers in constant time). Fails closed:
    a CRL that is missing, not signed by the CA, or past its nextUpdate makes `is_revoked` raise
    `CRLUnusable`, exactly as OpenSSL refuses every handshake in those cases.
    """

    def __init__(self, crl_path: Path | str, ca_path: Path | str) -> None:
        self.crl_path, self.ca_path = Path(crl_path), Path(ca_path)
        self._key: tuple | None = None
        self._revoked: frozenset[int] = frozenset()
        self._next_update: dt.datetime | None = None
        self._lock = threading.Lock()

    def _current(self) -> frozenset[int]:
        """The serial numbers the current CRL revokes (raises CRLUnusable if it cannot be trusted now)."""
        try:
            st = os.stat(self.crl_path)
        except OSError as exc:
            raise CRLUnusable(f"CRL {self.crl_path} is unreadable: {exc.strerror}") from None
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            if key != self._key:
                try:
                    crl = x509.load_pem_x509_crl(self.crl_path.read_bytes())
                    ca = load_certificate(self.ca_path)
                except (OSError, ValueError) as exc:
                    raise CRLUnusable(f"the CRL or the CA certificate cannot be read ({exc})") from None
                # A CA certificate's key is a signing key: never one of the key-exchange-only types.
                issuer_key = cast(CertificateIssuerPublicKeyTypes, ca.public_key())
                if crl.issuer != ca.subject or not crl.is_signature_valid(issuer_key):
                    raise CRLUnusable("the CRL is not signed by the configured CA")
                self._revoked = frozenset(entry.serial_number for entry in crl)
                self._next_update, self._key = crl.next_update_utc, key
            revoked, next_update = self._revoked, self._next_update
        if next_update is not None and next_update < _now():
            raise CRLUnusable("the CRL has expired (nextUpdate is in the past); the CA must publish a new one")
        return revoked

    def is_revoked(self, cert: x509.Certificate) -> bool:
        return cert.serial_number in self._current()


def _expires_within(crl: x509.CertificateRevocationList, margin: dt.timedelta) -> bool:
    # A CRL without nextUpdate (RFC 5280 5.1.2.5 requires one) is replaced as if it had expired.
    return crl.next_update_utc is None or crl.next_update_utc < _now() + margin


class CRLUnusable(Exception):
    """The CRL cannot be trusted right now, so no client can be admitted."""


def write_pkcs12(directory: Path | str, name: str) -> Path:
    """`name`.p12 beside `name`.pem/.key, for a browser to import (the admin site asks for a client
    certificate). Its password is generated into `name`.p12.password (both mode 0600)."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    directory = Path(directory)
    password_file = directory / f"{name}.p12.password"
    if not password_file.exists():
        write_atomically(password_file, os.urandom(12).hex().encode(), mode=0o600)
    password = password_file.read_bytes().strip()
    key = serialization.load_pem_private_key((directory / f"{name}.key").read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):  # issue() makes P-256 keys
        raise PKIError(f"{name}.key is not an elliptic-curve key")
    bundle = pkcs12.serialize_key_and_certificates(
        name.encode(), key, load_certificate(directory / f"{name}.pem"), None,
        serialization.BestAvailableEncryption(password))
    path = directory / f"{name}.p12"
    write_atomically(path, bundle, mode=0o600)
    return path

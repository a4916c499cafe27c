"""SSH host keys of routers: what a router presents, its fingerprint, and a pinned known_hosts file.

A router reached over SSH is logged into only when it presents the host key flexzone trusts for it
(recorded by `manage.py routers trust NAME`, or through the admin API). paramiko checks the key
during the key exchange, before any authentication, so a machine in the middle never receives the
router's password. Fingerprints are shown as OpenSSH does: "SHA256:" and the unpadded base64 of the
SHA-256 of the key blob (`ssh-keygen -l -f`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import paramiko

KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


class HostKeyError(ValueError):
    """Not a usable SSH public key line."""


def parse(key_line: str) -> tuple[str, bytes]:
    """("ssh-ed25519", blob) from "ssh-ed25519 AAAA... [comment]"; HostKeyError if it is not one."""
    parts = (key_line or "").split()
    if len(parts) < 2 or parts[0] not in KEY_TYPES:
        raise HostKeyError(f'an SSH public key is "<type> <base64>", type one of {", ".join(KEY_TYPES)}')
    try:
        blob = base64.b64decode(parts[1], validate=True)
        paramiko.PKey.from_type_string(parts[0], blob)
    except (binascii.Error, paramiko.SSHException, ValueError) as exc:
        raise HostKeyError(f"not a valid {parts[0]} public key ({exc})") from None
    return parts[0], blob


def normalize(key_line: str) -> str:
    """The key line as stored: type and base64, no comment."""
    key_type, blob = parse(key_line)
    return f"{key_type} {base64.b64encode(blob).decode()}"


def fingerprint_of_blob(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def fingerprint(key_line: str) -> str:
    return fingerprint_of_blob(parse(key_line)[1])


def fetch(host: str, port: int, timeout: float = 10.0) -> str:
    """The host key the SSH server at host:port presents, as a key line. Only the key exchange runs:
    nothing is authenticated and no credential is sent."""
    sock = socket.create_connection((host, port), timeout=timeout)
    transport = paramiko.Transport(sock)
    try:
        transport.banner_timeout = timeout
        transport.start_client(timeout=timeout)
        key = transport.get_remote_server_key()
        return f"{key.get_name()} {key.get_base64()}"
    finally:
        transport.close()
        sock.close()


@contextmanager
def pinned_known_hosts(host: str, port: int, key_line: str) -> Iterator[str]:
    """A private known_hosts file holding only this router's trusted key, for the length of a login."""
    key_type, blob = parse(key_line)
    name = host if port == 22 else f"[{host}]:{port}"  # how paramiko looks the server up
    handle, path = tempfile.mkstemp(prefix="flexzone-known-hosts-")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(f"{name} {key_type} {base64.b64encode(blob).decode()}\n")
        yield path
    finally:
        os.unlink(path)

"""The ledger's signed heads, kept where a database writer cannot reach them.

A signature in the database proves nothing to someone who can also write the database: they can delete
it, or delete the chain's tail with it. So every head the service signs (operations/ledger.py) is also
appended, as one JSON line (sequence, head hash, public key, signature, time), to a file under a
directory the service writes and the database's users cannot (`FLEXZONE_LEDGER_WITNESS`, by default
beside the ledger key), opened for appending only and flushed to disk, and logged to the system log
(logger `flexzone.ledger`). `manage.py audit checkpoint` prints the newest, for a witness elsewhere.

The heads witnessed are what the chain must still contain: `audit verify` fails, naming the entry, on a
chain shorter than a witnessed head or differing from one; and the service signs a new head only if
the chain still holds the last head it witnessed, linked entry by entry from there to the new head
(`refusal`). If it does not, the service stops signing, logs an error, and says so in the health
check and the metric `flexzone_ledger_signing_refused`, instead of signing a rewritten chain.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

log = logging.getLogger("flexzone.ledger")


def path() -> Path:
    """FLEXZONE_LEDGER_WITNESS, or `ledger-heads.jsonl` beside the ledger key."""
    if settings.FLEXZONE_LEDGER_WITNESS:
        return Path(settings.FLEXZONE_LEDGER_WITNESS).expanduser()
    return Path(settings.FLEXZONE_LEDGER_KEY).with_name("ledger-heads.jsonl")


def record(seq: int, head: str, public_key: str, signature: str, signed_at: str) -> None:
    """Append one signed head to the witness file (flushed to disk) and to the system log."""
    line = json.dumps({"seq": seq, "hash": head, "public_key": public_key, "signature": signature,
                       "signed_at": signed_at}, sort_keys=True) + "\n"
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            line = "\n" + line  # a line torn by a crash mid-write stays alone: this one is read whole
        os.write(descriptor, line.encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    log.info("ledger head signed: entry %s hash %s key %s", seq, head, public_key)


class Unreadable(Exception):
    """The witness file exists but cannot be read (its permissions, not a file, not text)."""


def heads(source: Path | None = None) -> list[dict[str, Any]]:
    """The heads witnessed in `source` (default: this host's file), in the order written; a line torn by
    a crash mid-write, or not a head, is skipped. Unreadable when the file cannot be read."""
    try:
        text = (source or path()).read_text()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeError) as exc:
        raise Unreadable(f"the ledger's witness file {source or path()} cannot be read: {exc}") from None
    found = []
    for line in text.splitlines():
        try:
            head = json.loads(line)
            found.append({"seq": int(head["seq"]), "hash": str(head["hash"]), "public_key": str(head["public_key"]),
                          "signature": str(head["signature"]), "signed_at": str(head.get("signed_at", ""))})
        except (ValueError, KeyError, TypeError):
            continue
    return found


def last() -> dict[str, Any] | None:
    """The longest head witnessed here (None: none yet). Unreadable when the file cannot be read."""
    witnessed = heads()
    return max(witnessed, key=lambda head: head["seq"]) if witnessed else None


def signed_time(head: dict[str, Any]) -> datetime | None:
    """When a head was signed (None: not said, or not a time with its offset)."""
    try:
        when = datetime.fromisoformat(str(head.get("signed_at", "")))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None

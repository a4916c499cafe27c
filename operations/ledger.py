"""A journal no one can quietly rewrite: a hash chain over the audit trail and the ended operations,
its head signed with the service's own Ed25519 key.

Each audit event, and each operation once it has ended, gets one `LedgerEntry`: `digest` is the
SHA-256 of the record's content (canonical JSON), and `hash` is the SHA-256 of the entry before it
(`prev`), its sequence number, kind, record id and digest. Changing a record changes its digest;
deleting, inserting or reordering entries breaks the links; rewriting the whole chain consistently
(anyone can compute SHA-256) no longer matches the heads signed with the key, which only the
service holds (`FLEXZONE_LEDGER_KEY`, made on first use, 0600, never in the database).

Writing the chain never sits on an operation's or a request's path, so it serializes nothing: the
chores thread of each worker seals what was written since the last seal every
`FLEXZONE_LEDGER_SEAL_EVERY` seconds, one sealer at a time (a PostgreSQL advisory lock that the
others skip), and signs the head every `FLEXZONE_LEDGER_SIGN_EVERY` seconds. Each seal takes every
audit event and every ended operation (its end is final then) not sealed yet, whatever its id: ids
are handed out at insert, rows seen at commit. A record written more than `FLEXZONE_LEDGER_GRACE`
seconds before the previous seal is sealed `late` (later records went first), and verify reports it
as inserted.

Each signed head is also witnessed outside the database (operations/witness.py): `verify`, which only
reads, checks the chain against every witnessed head, and the service signs a head only if the chain
still holds the last one it witnessed (`refusal`). What it cannot see: a record changed in the moments
between its writing and the next seal, and entries after the last witnessed head rewritten by someone
who can also write the database (`verify` says how many entries no signature covers yet). `manage.py
audit checkpoint` exports a signed head to keep elsewhere, for `verify --checkpoint FILE`.

Left out of the digests: an audit event's links to its principal and operation (deleting a principal
empties them; the principal's name and certificate fingerprint are kept and covered), and an
operation's worker bookkeeping (phase, heartbeat, claim, queue job id).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from access.models import AuditEvent
from operations import witness
from operations.metrics import ledger_signing_refused
from operations.models import TERMINAL_STATES, LedgerEntry, LedgerSignature, Operation

GENESIS = "0" * 64
_LOCK_KEY = 0x666C787A6C656467  # "flxzledg": the sealer's advisory lock
AUDIT_FIELDS = ("id", "principal_name", "cert_sha256", "cert_subject", "action", "method", "path", "outcome",
                "status_code", "detail", "target", "before", "after", "remote_addr", "created_at")
OPERATION_FIELDS = ("id", "kind", "principal_id", "request", "plan", "result", "state", "attempts", "error",
                    "transcript", "registry_ms", "invocation_ms", "router_ms", "total_ms", "created_at",
                    "started_at", "finished_at")
SOURCES: dict[str, tuple[type[models.Model], tuple[str, ...]]] = {
    LedgerEntry.Kind.AUDIT: (AuditEvent, AUDIT_FIELDS),
    LedgerEntry.Kind.OPERATION: (Operation, OPERATION_FIELDS),
}


def _canonical(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def digest(row: dict[str, Any]) -> str:
    """SHA-256 of a record's content: canonical JSON (sorted keys, no spaces, times in ISO 8601)."""
    text = json.dumps({key: _canonical(value) for key, value in row.items()}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def link_hash(prev: str, seq: int, kind: str, ref: int, record_digest: str, late: bool = False) -> str:
    return hashlib.sha256(f"{prev}|{seq}|{kind}|{ref}|{record_digest}|{int(late)}".encode()).hexdigest()


def head_message(seq: int, head: str) -> bytes:
    """What a signature covers: the chain's length and its last hash."""
    return f"flexzone ledger head {seq} {head}".encode()


# --- the key ----------------------------------------------------------------------------------------


def key_path() -> Path:
    return Path(settings.FLEXZONE_LEDGER_KEY)


def signing_key() -> Ed25519PrivateKey:
    """The service's ledger key, made on first use (a file readable by its owner only)."""
    path = key_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        pem = Ed25519PrivateKey.generate().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption())
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first: use theirs
        else:
            with os.fdopen(descriptor, "wb") as out:
                out.write(pem)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path}: not an Ed25519 private key")
    return key


def public_hex(key: Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


# --- sealing ----------------------------------------------------------------------------------------


@dataclass
class Sealed:
    audit: int = 0
    operations: int = 0
    signed: LedgerSignature | None = None
    skipped: bool = False  # another process was sealing
    refused: str = ""  # why the head was not signed: the chain no longer holds the last head witnessed


def _grace() -> float:
    return float(settings.FLEXZONE_LEDGER_GRACE)


def _unsealed(limit: int) -> list[tuple[str, dict[str, Any], datetime | None]]:
    """The records to seal next, in chain order, with when each was written: audit events by id, then
    ended operations in the order they ended. Any row not sealed yet is taken, whatever its id: ids
    are handed out at insert but rows become visible at commit, in another order."""
    sealed = LedgerEntry.objects.values("ref")
    audit = (AuditEvent.objects.exclude(pk__in=sealed.filter(kind=LedgerEntry.Kind.AUDIT)).order_by("pk")
             .values(*AUDIT_FIELDS)[:limit])
    ended = (Operation.objects.filter(state__in=TERMINAL_STATES)
             .exclude(pk__in=sealed.filter(kind=LedgerEntry.Kind.OPERATION)).order_by("finished_at", "pk")
             .values(*OPERATION_FIELDS)[:limit])
    return ([(LedgerEntry.Kind.AUDIT, row, row["created_at"]) for row in audit]
            + [(LedgerEntry.Kind.OPERATION, row, row["finished_at"]) for row in ended])


def seal(*, sign: bool | None = None, limit: int = 5000) -> Sealed:
    """Append what was written since the last seal to the chain; then sign the head when `sign` (None:
    when the last signature is older than FLEXZONE_LEDGER_SIGN_EVERY seconds, or there is none and the
    chain is not empty). Returns what was done; skipped when another process holds the sealer's lock.

    A record written (by its own clock) more than FLEXZONE_LEDGER_GRACE seconds before the previous
    seal is sealed `late`: later records were sealed before it, so it was inserted afterwards (or its
    transaction stayed open that long). `verify` names it."""
    sealed = Sealed()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_LOCK_KEY])
                if not cursor.fetchone()[0]:
                    sealed.skipped = True
                    return sealed
        last = LedgerEntry.objects.order_by("-seq").first()
        seq, prev = (last.seq, last.hash) if last else (0, GENESIS)
        cutoff = _sealed_by(last.sealed_at if last else None)
        entries = []
        for kind, row, written in _unsealed(limit):
            late = cutoff is not None and written is not None and written < cutoff
            seq, before, record_digest = seq + 1, prev, digest(row)
            prev = link_hash(before, seq, kind, row["id"], record_digest, late)
            entries.append(LedgerEntry(seq=seq, kind=kind, ref=row["id"], digest=record_digest, prev=before, hash=prev,
                                       late=late))
            if kind == LedgerEntry.Kind.AUDIT:
                sealed.audit += 1
            else:
                sealed.operations += 1
        LedgerEntry.objects.bulk_create(entries)
    # Signing is its own step: a key that cannot be read must not undo the seal (verify then says how
    # many entries no signature covers).
    if sign is None:
        newest = LedgerSignature.objects.order_by("-signed_at").values_list("signed_at", "seq").first()
        sign = seq > 0 and (newest is None or (newest[1] < seq and (timezone.now() - newest[0]).total_seconds()
                                                >= settings.FLEXZONE_LEDGER_SIGN_EVERY))
    if sign and seq > 0:
        try:
            why = refusal(seq, prev)
        except witness.Unreadable as exc:
            why = str(exc)
        if why == SUPERSEDED:  # another process signed a longer head of this chain meanwhile: nothing to do
            return sealed
        if why:  # a chain rewritten under the service: it signs nothing, and says so
            ledger_signing_refused.set(1)
            witness.log.error("not signing the ledger's head at entry %s: %s", seq, why)
            sealed.refused = why
            return sealed
        ledger_signing_refused.set(0)
        key = signing_key()
        sealed.signed = LedgerSignature.objects.create(
            seq=seq, hash=prev, public_key=public_hex(key), signature=key.sign(head_message(seq, prev)).hex())
        witness.record(seq, prev, sealed.signed.public_key, sealed.signed.signature,
                       sealed.signed.signed_at.isoformat())
    return sealed


def witnessed_head_problem() -> str | None:
    """Cheaply, for the health check: why the chain no longer holds the last head witnessed on this host
    (its entry gone, or another hash there), or the witness cannot be read; None when it holds it, or
    nothing was witnessed here."""
    try:
        witnessed = witness.last()
    except witness.Unreadable as exc:
        return str(exc)
    if witnessed is None:
        return None
    found = LedgerEntry.objects.filter(seq=witnessed["seq"]).values_list("hash", flat=True).first()
    if found == witnessed["hash"]:
        return None
    return (f"entry {witnessed['seq']} (witnessed at {witnessed['signed_at']}) is "
            + ("gone" if found is None else "not the one signed") + ": manage.py audit verify")


def _sealed_by(last_sealed: datetime | None) -> datetime | None:
    """Records written before this time should be in the chain by now: FLEXZONE_LEDGER_GRACE seconds before
    the later of the last seal (as the database says) and the last head witnessed outside it (which no
    database writer can move back)."""
    try:
        witnessed = witness.last()
    except witness.Unreadable:
        witnessed = None  # the seal goes on; the signer refuses and says why
    if witnessed is not None and LedgerEntry.objects.filter(seq=witnessed["seq"]).values_list(
            "hash", flat=True).first() != witnessed["hash"]:
        witnessed = None  # a chain that lost it (a database restored): its time says nothing of this one
    times = [when for when in (last_sealed, witness.signed_time(witnessed) if witnessed else None) if when]
    return max(times) - timedelta(seconds=_grace()) if times else None


SUPERSEDED = "superseded"  # refusal(): the chain holds a longer head witnessed already: nothing to sign


def refusal(seq: int, head: str) -> str | None:
    """Why the head (`seq`, `head`) must not be signed (None: it may): the chain no longer holds the last
    head witnessed on this host (operations/witness.py), or does not lead from it, entry by entry, to
    this head. A chain rewritten consistently by someone who can write the database fails here, so the
    service never signs it."""
    witnessed = witness.last()
    if witnessed is None:
        return None
    since, when = witnessed["seq"], witnessed["signed_at"]
    if seq < since:
        at_since = LedgerEntry.objects.filter(seq=since).values_list("hash", flat=True).first()
        if at_since == witnessed["hash"]:
            return SUPERSEDED  # a head read before another process sealed and signed further
        return f"the chain ends at entry {seq}, but entry {since} was witnessed at {when}: its tail was deleted"
    expected, prev = since, ""
    for entry_seq, kind, ref, record_digest, entry_prev, entry_hash, late in LedgerEntry.objects.filter(
            seq__gte=since, seq__lte=seq).order_by("seq").values_list("seq", "kind", "ref", "digest", "prev", "hash",
                                                                       "late"):
        follows = link_hash(entry_prev, entry_seq, kind, ref, record_digest, late) == entry_hash
        if entry_seq != expected:
            return f"entry {expected} is missing from the chain"
        if entry_seq == since and (entry_hash != witnessed["hash"] or not follows):
            return f"entry {since} differs from the head witnessed at {when}: the chain was rewritten"
        if entry_seq > since and (entry_prev != prev or not follows):
            return f"entry {entry_seq} does not follow from entry {entry_seq - 1}"
        expected, prev = entry_seq + 1, entry_hash
    if expected != seq + 1 or prev != head:
        return f"the chain does not lead from the head witnessed at entry {since} to entry {seq}"
    return None


def checkpoint() -> dict[str, Any]:
    """Seal, sign the head now, and return it as a document to keep outside this database."""
    signed = seal(sign=True).signed
    if signed is None:
        signed = LedgerSignature.objects.order_by("-seq", "-signed_at").first()
    if signed is None:
        raise ValueError("the ledger is empty: nothing to sign yet")
    return {"format": "flexzone-ledger-checkpoint/1", "seq": signed.seq, "hash": signed.hash,
            "public_key": signed.public_key, "signature": signed.signature, "signed_at": signed.signed_at.isoformat()}


# --- verification -----------------------------------------------------------------------------------


@dataclass
class Verdict:
    entries: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    head: str = GENESIS
    signed_seq: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        if not self.whole:
            return f"ledger NOT whole: {self.problems[0]}" + (f" (and {len(self.problems) - 1} more)"
                                                              if len(self.problems) > 1 else "")
        unsigned = self.entries - self.signed_seq
        return (f"ledger whole: {self.entries} entries ({self.counts.get('audit', 0)} audit events, "
                f"{self.counts.get('operation', 0)} operations), head {self.head[:16]}…, signed up to entry "
                f"{self.signed_seq}" + (f"; {unsigned} entries not signed yet" if unsigned else ""))


def _check_signature(public_key: str, seq: int, head: str, signature: str) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(bytes.fromhex(signature),
                                                                              head_message(seq, head))
    except (InvalidSignature, ValueError):
        return False
    return True


def trusted_keys() -> set[str]:
    """The public keys whose signatures verify accepts: this service's own (when its key file is here)
    and FLEXZONE_LEDGER_TRUSTED_KEYS (the other hosts' keys, or retired ones), hex."""
    keys = {key.strip().lower() for key in settings.FLEXZONE_LEDGER_TRUSTED_KEYS if key.strip()}
    if key_path().exists():
        keys.add(public_hex(signing_key()))
    return keys


def verify(checkpoint_doc: dict[str, Any] | None = None, *, witnessed: list[dict[str, Any]] | None = None,
           also: list[dict[str, Any]] = (), chunk: int = 5000) -> Verdict:  # type: ignore[assignment]
    """Walk the chain and the records it covers; name the first record or entry that is wrong. It only
    reads: it seals and signs nothing. The chain must still hold every head witnessed outside the database
    (`witnessed`, default this host's witness file; `also`, heads witnessed elsewhere; and `checkpoint_doc`),
    and no signature may lie beyond its end."""
    verdict = Verdict()
    trusted = trusted_keys()
    hashes: dict[int, str] = {}
    prev, expected_seq = GENESIS, 1
    entries = LedgerEntry.objects.order_by("seq").values_list("seq", "kind", "ref", "digest", "prev", "hash", "late")
    for batch_start in range(0, LedgerEntry.objects.count(), chunk):
        batch = list(entries[batch_start:batch_start + chunk])
        records = {kind: {row["id"]: row for row in model._default_manager.filter(
            pk__in=[ref for _s, k, ref, *_ in batch if k == kind]).values(*fields)}
            for kind, (model, fields) in SOURCES.items()}
        for seq, kind, ref, record_digest, entry_prev, entry_hash, late in batch:
            if seq != expected_seq:
                verdict.problems.append(f"entry {expected_seq} is missing or out of order (found entry {seq} there)")
                return verdict
            if entry_prev != prev or link_hash(prev, seq, kind, ref, record_digest, late) != entry_hash:
                verdict.problems.append(f"entry {seq} ({kind} {ref}) does not follow from the entry before it: "
                                        "entries were edited, inserted, deleted or reordered")
                return verdict
            row = records.get(kind, {}).get(ref)
            if row is None:
                verdict.problems.append(f"{_noun(kind)} {ref} (entry {seq}) was deleted")
            elif digest(row) != record_digest:
                verdict.problems.append(f"{_noun(kind)} {ref} (entry {seq}) was changed after it was sealed")
            if late:
                verdict.problems.append(f"{_noun(kind)} {ref} (entry {seq}) appeared only after later records had "
                                        "been sealed: it was inserted afterwards")
            verdict.counts[kind] = verdict.counts.get(kind, 0) + 1
            hashes[seq], prev, expected_seq = entry_hash, entry_hash, seq + 1
    verdict.entries, verdict.head = expected_seq - 1, prev
    for signature in LedgerSignature.objects.filter(seq__lte=verdict.entries).order_by("seq", "signed_at"):
        if not trusted:
            verdict.problems.append(f"there is no ledger key at {key_path()} and no FLEXZONE_LEDGER_TRUSTED_KEYS: "
                                    "the signed heads cannot be checked")
            break
        if signature.public_key not in trusted:
            verdict.problems.append(f"the signature of entry {signature.seq} is by a key this service does not trust")
        elif hashes.get(signature.seq) != signature.hash or not _check_signature(
                signature.public_key, signature.seq, signature.hash, signature.signature):
            verdict.problems.append(f"the signed head at entry {signature.seq} does not match the ledger: "
                                    "the chain was rewritten up to there")
        else:
            verdict.signed_seq = max(verdict.signed_seq, signature.seq)
    beyond = LedgerSignature.objects.filter(seq__gt=verdict.entries).order_by("-seq").values_list("seq", flat=True)
    if last_signed := beyond.first():
        verdict.problems.append(f"a signature covers entry {last_signed}, but the chain ends at entry "
                                f"{verdict.entries}: entries {verdict.entries + 1} to {last_signed} were deleted")
    if witnessed is None:
        try:
            witnessed = witness.heads()
        except witness.Unreadable as exc:
            verdict.problems.append(str(exc))
            witnessed = []
    _check_heads(verdict, [*witnessed, *also], hashes, trusted)
    if checkpoint_doc is not None:
        _check_checkpoint(verdict, checkpoint_doc, hashes, trusted)
    _check_unsigned(verdict)
    _check_unsealed(verdict)
    return verdict


def _check_unsealed(verdict: Verdict) -> None:
    """A record written more than FLEXZONE_LEDGER_GRACE seconds before the last seal and not in the chain
    (its transaction would have had to stay open that long): inserted afterwards. Younger records are
    counted as not sealed yet."""
    cutoff = _sealed_by(LedgerEntry.objects.order_by("-seq").values_list("sealed_at", flat=True).first())
    if cutoff is None:
        return
    sealed = LedgerEntry.objects.values("ref")
    inserted = (AuditEvent.objects.exclude(pk__in=sealed.filter(kind=LedgerEntry.Kind.AUDIT))
                .filter(created_at__lt=cutoff).order_by("pk").values_list("pk", flat=True).first())
    if inserted is not None:
        verdict.problems.append(f"audit event {inserted} is dated before entry {verdict.entries} was sealed but is not "
                                "in the chain: it was inserted afterwards")


def _check_unsigned(verdict: Verdict) -> None:
    """Entries sealed long enough ago that a signature should cover them, and none does: the signatures
    were removed (or the sealers cannot sign)."""
    if verdict.entries <= verdict.signed_seq:
        return
    first = LedgerEntry.objects.filter(seq=verdict.signed_seq + 1).values_list("sealed_at", flat=True).first()
    overdue = 2 * settings.FLEXZONE_LEDGER_SIGN_EVERY + _grace()
    if first is not None and (timezone.now() - first).total_seconds() > overdue:
        verdict.problems.append(f"entries {verdict.signed_seq + 1} to {verdict.entries} were sealed over {overdue:g} s "
                                "ago and no signature covers them: the signatures were removed, or the sealers "
                                f"cannot sign (key {key_path()})")


def _check_checkpoint(verdict: Verdict, doc: dict[str, Any], hashes: dict[int, str], trusted: set[str]) -> None:
    try:
        seq, head, key, signature = int(doc["seq"]), str(doc["hash"]), str(doc["public_key"]), str(doc["signature"])
    except (KeyError, TypeError, ValueError):
        verdict.problems.append("the checkpoint is not a flexzone ledger checkpoint (seq, hash, public_key, "
                                "signature)")
        return
    _check_heads(verdict, [{"seq": seq, "hash": head, "public_key": key, "signature": signature,
                            "signed_at": str(doc.get("signed_at", ""))}], hashes, trusted, "in the checkpoint")


def _check_heads(verdict: Verdict, heads: list[dict[str, Any]], hashes: dict[int, str], trusted: set[str],
                 where: str = "") -> None:
    """Signed heads kept outside the database: the chain must still hold each, its signature must still be
    in the database, and the entry it ends at must have been sealed before it was signed (the sealing
    times decide what counts as inserted later)."""
    seqs = {int(head["seq"]) for head in heads}
    sealed = dict(LedgerEntry.objects.filter(seq__in=seqs).values_list("seq", "sealed_at"))
    signed = set(LedgerSignature.objects.filter(seq__in=seqs).values_list("seq", "hash"))
    for head in heads:
        seq, when = int(head["seq"]), witness.signed_time(head)
        here = where or f"witnessed at {head.get('signed_at') or 'an unknown time'}"
        if head["public_key"] not in trusted or not _check_signature(head["public_key"], seq, head["hash"],
                                                                     head["signature"]):
            verdict.problems.append(f"the head {here} (entry {seq}) is not signed by a key this service trusts")
        elif seq > verdict.entries:
            verdict.problems.append(f"entry {seq} was signed ({here}), but the chain ends at entry "
                                    f"{verdict.entries}: entries {verdict.entries + 1} to {seq} were deleted")
        elif hashes.get(seq) != head["hash"]:
            verdict.problems.append(f"the ledger differs from the head {here} at entry {seq}: it was rewritten up to "
                                    "there")
        elif (seq, head["hash"]) not in signed:
            verdict.problems.append(f"the signature of entry {seq} ({here}) is not in the database: the signatures "
                                    "were deleted")
        elif when is not None and sealed[seq] > when + timedelta(seconds=_grace()):  # clocks of two hosts
            verdict.problems.append(f"entry {seq} says it was sealed at {sealed[seq].isoformat()}, after its head was "
                                    f"signed ({here}): its sealing time was moved")
        else:
            verdict.signed_seq = max(verdict.signed_seq, seq)


def _noun(kind: str) -> str:
    return "audit event" if kind == LedgerEntry.Kind.AUDIT else "operation"

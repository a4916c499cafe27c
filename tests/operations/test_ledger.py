"""The tamper-evident ledger (operations/ledger.py) on PostgreSQL: each kind of tampering is done with
plain SQL, as someone with database access would, and `manage.py audit verify` names the first record
that is wrong."""

from __future__ import annotations

import json
import threading

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.utils import timezone

from access.models import AuditEvent
from operations import ledger, witness
from operations.metrics import ledger_signing_refused
from operations.models import LedgerEntry, LedgerSignature, Operation

AUDIT, LEDGER, SIGNATURES, OPERATION = (model._meta.db_table for model in (AuditEvent, LedgerEntry, LedgerSignature,
                                                                          Operation))


@pytest.fixture
def key(settings, tmp_path):
    settings.FLEXZONE_LEDGER_KEY = tmp_path / "keys" / "ledger-ed25519.pem"
    return settings.FLEXZONE_LEDGER_KEY


def event(n: int) -> AuditEvent:
    return AuditEvent.objects.create(principal_name="alice", action=f"site.update{n}", method="PATCH",
                                     path=f"/api/sites/{n}/", outcome="allowed", status_code=200,
                                     before={"router_port": n}, after={"router_port": n + 1})


def ended(n: int, state: str = "succeeded") -> Operation:
    return Operation.objects.create(kind="add", state=state, request={"site": f"s{n}"}, plan={"steps": []},
                                    result={"links": [n]}, transcript=f"router said {n}")


def sql(statement: str, params=()) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def audit(*args) -> tuple[int, str, str]:
    """manage.py audit ARGS: (exit status, stdout, stderr)."""
    import io

    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("audit", *args, stdout=out, stderr=err)
        status = 0
    except SystemExit as exc:
        status = int(exc.code)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def sealed(db, key):
    """Five audit events and three ended operations, sealed and signed."""
    events = [event(n) for n in range(5)]
    operations = [ended(n) for n in range(3)]
    done = ledger.seal(sign=True)
    assert (done.audit, done.operations, done.signed.seq) == (5, 3, 8)
    return events, operations


def test_an_untouched_ledger_is_whole_and_says_how_much_it_covers(sealed):
    status, out, err = audit("verify")
    assert (status, err) == (0, "")
    assert "ledger whole: 8 entries (5 audit events, 3 operations)" in out and "signed up to entry 8" in out
    later = event(99)
    status, out, _err = audit("verify")  # it only reads: the new event is not sealed by it
    assert status == 0 and "signed up to entry 8" in out and "9" not in out.split("entries")[0]
    assert not LedgerEntry.objects.filter(kind="audit", ref=later.pk).exists()
    assert audit("seal")[0] == 0 and audit("verify")[0] == 0
    assert LedgerEntry.objects.filter(kind="audit", ref=later.pk).exists()


def test_an_edited_audit_event_is_named(sealed):
    events, _operations = sealed
    sql(f"UPDATE {AUDIT} SET after = %s::jsonb WHERE id = %s", [json.dumps({"router_port": 99}), events[2].pk])
    status, out, err = audit("verify")
    assert status == 1 and "NOT whole" in out
    assert err.splitlines()[0] == f"audit event {events[2].pk} (entry 3) was changed after it was sealed"


def test_an_edited_operation_is_named(sealed):
    _events, operations = sealed
    sql(f"UPDATE {OPERATION} SET transcript = 'nothing happened' WHERE id = %s", [operations[1].pk])
    status, _out, err = audit("verify")
    assert status == 1
    assert err.splitlines()[0] == f"operation {operations[1].pk} (entry 7) was changed after it was sealed"


def test_a_deleted_audit_event_is_named(sealed):
    events, _operations = sealed
    sql(f"DELETE FROM {AUDIT} WHERE id = %s", [events[0].pk])
    status, _out, err = audit("verify")
    assert status == 1 and err.splitlines()[0] == f"audit event {events[0].pk} (entry 1) was deleted"


def test_a_deleted_ledger_entry_breaks_the_chain_there(sealed):
    sql(f"DELETE FROM {LEDGER} WHERE seq = 4")
    status, _out, err = audit("verify")
    assert status == 1 and err.splitlines()[0] == "entry 4 is missing or out of order (found entry 5 there)"


def test_an_audit_event_inserted_among_sealed_ones_is_named(sealed):
    # A row slipped in later, dated among the sealed ones (its transaction would have had to stay open
    # for over FLEXZONE_LEDGER_GRACE seconds to be legitimate).
    sql(f"INSERT INTO {AUDIT} (principal_name, cert_sha256, cert_subject, action, method, path, outcome, "
        "status_code, detail, target, remote_addr, created_at) VALUES ('mallory', '', '', 'site.delete', "
        "'DELETE', '/api/sites/1/', 'allowed', 204, '', 'site:1', '', now() - interval '1 hour')")
    forged = AuditEvent.objects.get(principal_name="mallory").pk
    status, _out, err = audit("verify")  # not sealed: dated before the last seal, it was inserted afterwards
    assert status == 1
    assert err.splitlines()[0] == (f"audit event {forged} is dated before entry 8 was sealed but is not in the "
                                   "chain: it was inserted afterwards")
    ledger.seal()  # the workers' next seal takes it in, marked late
    status, _out, err = audit("verify")
    assert status == 1
    assert err.splitlines()[0] == (f"audit event {forged} (entry 9) appeared only after later records had been "
                                   "sealed: it was inserted afterwards")


def test_rows_are_sealed_as_they_become_visible_whatever_their_ids(db, key):
    """Ids are handed out at insert and rows seen at commit, in another order: a row with a lower id that
    commits later is still sealed, and is not taken for an inserted one."""
    later = event(2)
    ledger.seal()
    earlier = AuditEvent.objects.create(id=later.pk - 1, principal_name="slow", action="site.update", method="PATCH",
                                        path="/api/sites/1/", outcome="allowed", status_code=200)
    assert ledger.seal().audit == 1
    assert LedgerEntry.objects.filter(kind="audit", ref=earlier.pk).exists()
    assert audit("verify")[0] == 0


def test_an_inserted_ledger_entry_breaks_the_chain(sealed):
    sql(f"UPDATE {LEDGER} SET seq = seq + 1000 WHERE seq >= 3")  # make room in the middle
    sql(f"UPDATE {LEDGER} SET seq = seq - 999 WHERE seq >= 1000")
    sql(f"INSERT INTO {LEDGER} (seq, kind, ref, digest, prev, hash, late, sealed_at) "
        f"SELECT 3, 'audit', 424242, digest, prev, hash, late, sealed_at FROM {LEDGER} WHERE seq = 2")
    status, _out, err = audit("verify")
    assert status == 1
    assert err.splitlines()[0].startswith("entry 3 (audit 424242) does not follow from the entry before")


def test_reordered_records_are_found(sealed):
    events, _operations = sealed
    first, second = events[1], events[2]
    # Swap two events' content (their order in the trail), keeping the ids.
    sql(f"UPDATE {AUDIT} SET action = CASE id WHEN %s THEN %s ELSE %s END WHERE id IN (%s, %s)",
        [first.pk, second.action, first.action, first.pk, second.pk])
    status, _out, err = audit("verify")
    assert status == 1 and err.splitlines()[0] == f"audit event {first.pk} (entry 2) was changed after it was sealed"


def test_reordered_ledger_entries_break_the_chain(sealed):
    for move in ("seq = 1002 WHERE seq = 2", "seq = 2 WHERE seq = 3", "seq = 3 WHERE seq = 1002"):
        sql(f"UPDATE {LEDGER} SET {move}")
    status, _out, err = audit("verify")
    assert status == 1 and err.splitlines()[0].startswith("entry 2 (audit")


def rewrite_chain_from(seq: int) -> None:
    """What someone without the key can do: recompute every hash from `seq` on, consistently."""
    entries = list(LedgerEntry.objects.order_by("seq"))
    prev = ledger.GENESIS if seq == 1 else entries[seq - 2].hash
    for entry in entries[seq - 1:]:
        model, fields = ledger.SOURCES[entry.kind]
        row = model.objects.filter(pk=entry.ref).values(*fields).first()
        record_digest = ledger.digest(row)
        new_hash = ledger.link_hash(prev, entry.seq, entry.kind, entry.ref, record_digest)
        sql(f"UPDATE {LEDGER} SET digest = %s, prev = %s, hash = %s WHERE seq = %s",
            [record_digest, prev, new_hash, entry.seq])
        prev = new_hash


def test_a_chain_rewritten_consistently_no_longer_matches_its_signed_head(sealed):
    events, _operations = sealed
    sql(f"UPDATE {AUDIT} SET principal_name = 'bob' WHERE id = %s", [events[1].pk])
    rewrite_chain_from(2)
    status, _out, err = audit("verify")
    assert status == 1
    assert err.splitlines()[0] == ("the signed head at entry 8 does not match the ledger: the chain was rewritten "
                                   "up to there")


def test_a_checkpoint_kept_elsewhere_catches_a_rewrite_that_also_removed_the_signatures(sealed, tmp_path):
    kept = tmp_path / "checkpoint.json"
    status, out, _err = audit("checkpoint", "--output", str(kept))
    assert status == 0 and "checkpoint written" in out
    document = json.loads(kept.read_text())
    assert document["seq"] == 8 and len(document["signature"]) == 128
    assert audit("verify", "--checkpoint", str(kept))[0] == 0
    events, _operations = sealed
    sql(f"UPDATE {AUDIT} SET detail = 'quietly' WHERE id = %s", [events[4].pk])
    rewrite_chain_from(5)
    sql(f"DELETE FROM {SIGNATURES}")
    assert ledger.verify(witnessed=[]).whole  # from the database alone, this rewrite cannot be told from the truth
    witness.path().unlink()  # nor with this host's witness file gone: the checkpoint kept elsewhere tells it
    status, _out, err = audit("verify", "--checkpoint", str(kept))
    assert status == 1
    assert err.splitlines()[0] == ("the ledger differs from the head in the checkpoint at entry 8: it was rewritten "
                                   "up to there")
    # A checkpoint signed by another key is refused too.
    document["signature"] = "00" * 64
    kept.write_text(json.dumps(document))
    assert audit("verify", "--checkpoint", str(kept))[2].splitlines()[0] == (
        "the head in the checkpoint (entry 8) is not signed by a key this service trusts")


def test_an_operation_is_sealed_once_it_has_ended_whatever_runs_before_it(db, key):
    first, second = ended(1, state="running"), ended(2)
    assert ledger.seal().operations == 1  # the second; the first is still running
    Operation.objects.filter(pk=first.pk).update(state="failed", finished_at=timezone.now())
    assert ledger.seal().operations == 1
    assert list(LedgerEntry.objects.filter(kind="operation").values_list("ref", flat=True)) == [second.pk, first.pk]
    assert audit("verify")[0] == 0


def test_signatures_by_another_hosts_key_verify_once_it_is_trusted(sealed, settings, tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    other = Ed25519PrivateKey.generate()
    head = LedgerEntry.objects.order_by("-seq").first()
    LedgerSignature.objects.create(seq=head.seq, hash=head.hash, public_key=ledger.public_hex(other),
                                   signature=other.sign(ledger.head_message(head.seq, head.hash)).hex())
    status, _out, err = audit("verify", "--no-seal")
    assert status == 1 and err.splitlines()[0] == "the signature of entry 8 is by a key this service does not trust"
    settings.FLEXZONE_LEDGER_TRUSTED_KEYS = [ledger.public_hex(other)]
    assert audit("verify", "--no-seal")[0] == 0


def test_entries_that_should_be_signed_by_now_and_are_not_are_reported(sealed, settings):
    sql(f"DELETE FROM {SIGNATURES}")
    witness.path().unlink()  # with the witness file, the deleted signature is named at once (the matrix below)
    assert audit("verify")[0] == 0  # just sealed: a signature may still come
    sql(f"UPDATE {LEDGER} SET sealed_at = sealed_at - interval '2 hours'")
    status, _out, err = audit("verify")
    assert status == 1 and err.splitlines()[0].startswith("entries 1 to 8 were sealed over 900 s ago and no signature "
                                                          "covers them")


def test_the_key_is_made_once_readable_by_its_owner_only_and_never_in_the_database(db, key):
    event(1)
    ledger.seal(sign=True)
    assert key.stat().st_mode & 0o777 == 0o600
    made = key.read_bytes()
    ledger.seal(sign=True)
    assert key.read_bytes() == made
    assert b"PRIVATE KEY" in made
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT public_key, signature FROM {SIGNATURES}")
        assert all(len(public) == 64 for public, _signature in cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_sealing_serializes_nothing_else(key):
    """While a sealer holds the ledger's lock, audit events and operations are written and end as usual,
    and a second sealer skips instead of waiting."""
    event(1)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ledger._LOCK_KEY])
                holding.set()
                release.wait(10)
                cursor.execute("ROLLBACK")
        finally:
            other.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(10)
        event(2)
        ended(3)
        assert ledger.seal().skipped
    finally:
        release.set()
        thread.join()
    done = ledger.seal()
    assert (done.skipped, done.audit, done.operations) == (False, 2, 1)


# --- issue 46, item 1: the tampering matrix, against heads witnessed outside the database ---------------


@pytest.fixture
def signed_twice(db, key):
    """Five audit events sealed and signed (entry 5), then three operations (entry 8): both heads witnessed."""
    events = [event(n) for n in range(5)]
    assert ledger.seal(sign=True).signed.seq == 5
    operations = [ended(n) for n in range(3)]
    assert ledger.seal(sign=True).signed.seq == 8
    assert [head["seq"] for head in witness.heads()] == [5, 8]
    return events, operations


def first_problem() -> str:
    status, _out, err = audit("verify")
    assert status == 1, "verify called the ledger whole"
    return err.splitlines()[0]


def test_deleting_the_signed_tail_is_named(signed_twice):
    """Defect 1: entries 6-8 and their records deleted; verify read only signatures up to the chain's end and
    called the ledger whole, 5 entries."""
    _events, operations = signed_twice
    sql(f"DELETE FROM {LEDGER} WHERE seq > 5")
    sql(f"DELETE FROM {OPERATION} WHERE id = ANY(%s)", [[op.pk for op in operations]])
    assert first_problem() == "a signature covers entry 8, but the chain ends at entry 5: entries 6 to 8 were deleted"
    sql(f"DELETE FROM {SIGNATURES} WHERE seq > 5")  # and its signature with it: the witness still has the head
    assert first_problem().startswith("entry 8 was signed (witnessed at ")


def test_truncate_and_rebuild_is_named_and_the_rebuilt_chain_is_never_signed(signed_twice):
    """Defect 2: edit a sealed event, delete another, truncate the ledger: verify sealed first, rebuilt the
    chain over the tampered rows, signed it and called it whole. Now it only reads, and the service will not
    sign a chain that has lost the heads it witnessed."""
    events, _operations = signed_twice
    sql(f"UPDATE {AUDIT} SET principal_name = 'bob' WHERE id = %s", [events[1].pk])
    sql(f"DELETE FROM {AUDIT} WHERE id = %s", [events[2].pk])
    sql(f"TRUNCATE {LEDGER}, {SIGNATURES}")
    assert first_problem().startswith("entry 5 was signed (witnessed at ")
    assert not LedgerEntry.objects.exists() and not LedgerSignature.objects.exists()  # verify sealed nothing
    done = ledger.seal(sign=True)  # a worker's next seal rebuilds a chain: it is not signed
    assert done.signed is None and "its tail was deleted" in done.refused
    assert not LedgerSignature.objects.exists() and ledger_signing_refused._value.get() == 1
    assert first_problem().startswith("the ledger differs from the head witnessed at ")  # the rebuilt one


def test_a_forged_head_is_never_signed_by_the_service(signed_twice):
    """Defect 3: a consistent rewrite, the signatures deleted and sealed_at set to now: verify passed and the
    workers' next seal signed the forged chain."""
    events, _operations = signed_twice
    sql(f"UPDATE {AUDIT} SET detail = 'quietly' WHERE id = %s", [events[3].pk])
    rewrite_chain_from(4)
    sql(f"DELETE FROM {SIGNATURES}")
    sql(f"UPDATE {LEDGER} SET sealed_at = now()")
    assert first_problem().startswith("the ledger differs from the head witnessed at ")
    event(42)
    done = ledger.seal(sign=True)
    assert done.signed is None and done.refused.startswith("entry 8 differs from the head witnessed at ")
    assert not LedgerSignature.objects.exists()


def test_a_backdated_row_is_named_though_the_last_seal_time_was_moved_back(signed_twice):
    """Defect 4: an event dated an hour ago inserted, and the last entry's sealed_at moved back: verify called
    the ledger whole. The witnessed heads' times, out of the database's reach, decide what is late."""
    sql(f"INSERT INTO {AUDIT} (principal_name, cert_sha256, cert_subject, action, method, path, outcome, "
        "status_code, detail, target, remote_addr, created_at) VALUES ('mallory', '', '', 'site.delete', "
        "'DELETE', '/api/sites/1/', 'allowed', 204, '', 'site:1', '', now() - interval '1 hour')")
    sql(f"UPDATE {LEDGER} SET sealed_at = sealed_at - interval '2 hours' WHERE seq = 8")
    forged = AuditEvent.objects.get(principal_name="mallory").pk
    problems = ledger.verify().problems
    assert f"audit event {forged} is dated before entry 8 was sealed but is not in the chain: it was inserted " \
           "afterwards" in problems
    ledger.seal()  # sealed now, it is marked late by the witnessed time, not the moved one
    assert LedgerEntry.objects.get(kind="audit", ref=forged).late


def test_a_moved_sealing_time_is_named(signed_twice):
    sql(f"UPDATE {LEDGER} SET sealed_at = now() + interval '1 hour' WHERE seq = 5")
    assert first_problem().startswith("entry 5 says it was sealed at ")


def test_deleted_signatures_are_named_at_once(signed_twice):
    sql(f"DELETE FROM {SIGNATURES} WHERE seq = 8")
    assert first_problem().startswith("the signature of entry 8 (witnessed at ")


def test_a_replaced_signing_key_is_named(signed_twice, key):
    """Someone who replaces the key file on a worker host: the heads signed before are by a key this host no
    longer holds, and verify names the first (a retired key is trusted only if FLEXZONE_LEDGER_TRUSTED_KEYS
    names it)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    assert first_problem() == "the signature of entry 5 is by a key this service does not trust"


def test_a_head_another_process_signed_meanwhile_is_no_rewrite(signed_twice):
    """Two signers: one read head 5, another sealed and signed up to 8 meanwhile. The first signs nothing
    and raises no alarm (the chain holds the longer head witnessed)."""
    ledger_signing_refused.set(0)
    assert ledger.refusal(5, LedgerEntry.objects.get(seq=5).hash) == ledger.SUPERSEDED
    sql(f"UPDATE {LEDGER} SET hash = %s WHERE seq = 8", ["f" * 64])  # unless the longer head is not there any more
    assert ledger.refusal(5, LedgerEntry.objects.get(seq=5).hash).startswith("the chain ends at entry 5")


def test_a_witness_file_that_cannot_be_read_stops_signing_not_sealing(signed_twice):
    path = witness.path()
    path.unlink()
    path.mkdir()  # not a file any more (a permission error reads the same)
    event(9)
    done = ledger.seal(sign=True)
    assert done.audit == 1 and done.signed is None and "cannot be read" in done.refused
    assert "cannot be read" in ledger.witnessed_head_problem()
    assert any("cannot be read" in problem for problem in ledger.verify().problems)


def test_a_line_torn_by_a_crash_loses_only_itself(signed_twice):
    with open(witness.path(), "a") as witnessed:
        witnessed.write('{"seq": 9, "hash": "ab')  # the crash came mid-write
    event(9)
    assert ledger.seal(sign=True).signed.seq == 9
    assert [head["seq"] for head in witness.heads()] == [5, 8, 9]

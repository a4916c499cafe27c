"""manage.py audit seal | verify [--checkpoint FILE] [--witness FILE]... | checkpoint [--output FILE]: the
tamper-evident ledger."""

import json
from pathlib import Path

from django.core.management.base import CommandError

from operations import ledger, witness
from registry.readiness import DatabaseCommand


class Command(DatabaseCommand):
    help = (
        "The audit trail and the ended operations are hash-chained and the chain's head is signed with the "
        "service's Ed25519 key. 'seal' adds what was written since the last seal (the workers' chores do it every "
        "FLEXZONE_LEDGER_SEAL_EVERY s); 'verify' only reads: it walks the chain and names the first record that was "
        "edited, deleted, inserted or reordered, and any signed head kept outside the database (this host's witness "
        "file, --witness, --checkpoint) the chain no longer holds (exit status 1); 'checkpoint' signs the head now "
        "and prints it (or writes it to --output) to keep outside this database, for 'verify --checkpoint FILE'."
    )

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        actions.add_parser("seal", help="add new audit events and ended operations to the chain")
        check = actions.add_parser("verify", help="prove the ledger whole, or name what is wrong")
        check.add_argument("--checkpoint", type=Path, help="a file written by 'audit checkpoint'")
        check.add_argument("--witness", type=Path, action="append", default=[],
                           help="a file of signed heads witnessed elsewhere (another host's ledger-heads.jsonl); "
                                "this host's own is always read")
        check.add_argument("--no-seal", action="store_true", help="(verify never seals: kept for old scripts)")
        export = actions.add_parser("checkpoint", help="sign the head now and print it as JSON")
        export.add_argument("--output", type=Path, help="write it to this file instead")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "seal":
            done = ledger.seal()
            self.stdout.write("another process is sealing; nothing done" if done.skipped else
                              f"sealed {done.audit} audit events and {done.operations} operations"
                              + (f"; signed the head at entry {done.signed.seq}" if done.signed else ""))
        elif action == "checkpoint":
            try:
                document = json.dumps(ledger.checkpoint(), indent=2, sort_keys=True)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            if options["output"]:
                options["output"].write_text(document + "\n")
                self.stdout.write(f"checkpoint written to {options['output']}")
            else:
                self.stdout.write(document)
        else:
            doc = None
            if options["checkpoint"]:
                try:
                    doc = json.loads(options["checkpoint"].read_text())
                except (OSError, ValueError) as exc:
                    raise CommandError(f"--checkpoint: cannot read {options['checkpoint']}: {exc}") from None
            elsewhere = []
            for source in options["witness"]:
                if not source.is_file():
                    raise CommandError(f"--witness: no such file: {source}")
                try:
                    elsewhere += witness.heads(source)
                except witness.Unreadable as exc:
                    raise CommandError(f"--witness: {exc}") from None
            verdict = ledger.verify(doc, also=elsewhere)
            for problem in verdict.problems:
                self.stderr.write(problem)
            self.stdout.write(verdict.summary())
            if not verdict.whole:
                raise SystemExit(1)

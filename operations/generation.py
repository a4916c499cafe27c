"""The lists' generation: a number that grows with every committed transaction that changes a link or
an operation, however it was written (ORM, raw SQL, psql); the API's link and operation lists keep the
pages they served under it (api/list_pages.py).

It is made as the registry's generation is (registry/migrations/0001_initial.py, migration 0003
here): each such transaction leaves one row in CHANGES (its transaction id, inserted by a
statement-level trigger, ON CONFLICT DO NOTHING for its later statements), visible when and only when
it commits, with no hot row for writers to wait on. The generation is `folded` + the number of rows,
read in the same statement as what it stands for; a reader folds the rows into `folded` now and then,
in one statement (FOLD), which leaves the sum unchanged. `epoch` is drawn when the tables are made.
SQLite has none of it.
"""

CHANGES = "flexzone_lists_changes"
GENERATION = "flexzone_lists_generation"
FOLD_AT = 64  # change rows beyond which a reader folds them into the generation's base
# One statement, so a reader sees either the rows or their count in `folded`, never both or neither.
FOLD = f"""
    WITH gone AS (DELETE FROM {CHANGES} RETURNING 1)
    UPDATE {GENERATION} SET folded = folded + (SELECT count(*) FROM gone) WHERE id = 1
"""

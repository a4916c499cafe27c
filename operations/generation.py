"""The lists' generations: one per list, a number that grows with every committed transaction that
changes a link (the links') or an operation (the journal's), however it was written (ORM, raw SQL,
psql); the API's link and operation lists keep the pages they served under their own list's
(api/list_pages.py), so a link page outlives the writes an operation makes to the journal as it runs
(its phases, its heartbeats), and an operation page the writes to links.

They are made as the registry's generation is (registry/migrations/0001_initial.py, migrations 0003
and 0004 here): each such transaction leaves one row per list it wrote in CHANGES (the list, told by
the trigger from the table it fired on, and the transaction id; a statement-level trigger, ON CONFLICT
DO NOTHING for its later statements), visible when and only when it commits, with no hot row for
writers to wait on. A change row of list 0 is one whose list is not known, and counts for every list:
a writer whose trigger was already running migration 0003's function when 0004 replaced it inserts one
(the column's default). A list's generation is its row's `folded` in GENERATIONS + the number of the
change rows that count for it, read in the same statement as what it stands for (`counts()`); a reader
folds every change row into the `folded` of each list it counts for now and then, in one statement
(FOLD), which leaves each sum unchanged. Each row's `epoch` is drawn when it is made. SQLite has none
of it.
"""

CHANGES = "flexzone_lists_changes"
GENERATIONS = "flexzone_lists_generations"  # 0003's single row was in flexzone_lists_generation
LISTS = {"links": 1, "operations": 2}  # each list's row in GENERATIONS, and its change rows' `list`
UNKNOWN = 0  # the list of a change row that counts for every list
FOLD_AT = 64  # change rows beyond which a reader folds them into the generations' base
# One statement, so a reader sees either a list's rows or their count in `folded`, never both or neither.
# Counted per list first, then shared out to LISTS: the planner knows neither table's rows (the change
# rows come and go, the generations are never analyzed), and a join of the two was costed at their product:
# past jit_above_cost after a backlog, so compiled first, for 100 ms and more (tests/operations/test_generation.py).
FOLD = f"""
    WITH gone AS (DELETE FROM {CHANGES} RETURNING list),
         per_list AS (SELECT list, count(*) AS rows FROM gone GROUP BY list),
         counted AS (SELECT mine.id, sum(per_list.rows)::bigint AS rows
                       FROM unnest(ARRAY[{", ".join(str(list_id) for list_id in LISTS.values())}]) AS mine (id)
                       JOIN per_list ON per_list.list IN ({UNKNOWN}, mine.id) GROUP BY mine.id)
    UPDATE {GENERATIONS} AS g SET folded = g.folded + counted.rows FROM counted WHERE g.id = counted.id
"""


def counts(list_id: int) -> str:
    """SQL: one row of the change rows that count for the list (`mine`: its own and those of no known
    list) and of all of them (`all_rows`: when to fold), in one pass."""
    return (f"(SELECT count(*) FILTER (WHERE list IN ({UNKNOWN}, {int(list_id)})) AS mine, count(*) AS all_rows "
            f"FROM {CHANGES})")

"""The lists' generations (operations/generation.py): folding their change rows."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from operations import generation

# PostgreSQL's default jit_above_cost: a statement the planner costs above it is compiled before it runs.
JIT_ABOVE_COST = 100_000.0


def _generations(cursor) -> dict[int, int]:
    cursor.execute(f"SELECT g.id, g.folded + (SELECT count(*) FROM {generation.CHANGES} AS c "
                   f"WHERE c.list IN ({generation.UNKNOWN}, g.id)) FROM {generation.GENERATIONS} AS g")
    return dict(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_a_fold_after_a_backlog_of_change_rows_is_costed_below_compiling_it():
    """Only a list request folds, so writes with no list reader between them pile change rows up, and the
    planner costs the fold by the table's size (its rows were never counted). Costed past jit_above_cost,
    the fold was compiled first: the one API request that folded waited 105-165 ms for it, against about
    0.5 ms for a request."""
    with connection.cursor() as cursor:
        # Negative transaction ids: no real one is (the rows of transactions that ran before this test, in
        # a young cluster, hold small positive ids).
        cursor.execute(f"INSERT INTO {generation.CHANGES} (list, txid) "
                       "SELECT n % 3, -n FROM generate_series(1, 20000) AS n")
        before = _generations(cursor)
        cursor.execute(f"EXPLAIN (FORMAT JSON) {generation.FOLD}")
        plan = cursor.fetchone()[0]
        cost = (plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]["Total Cost"]
        cursor.execute("SELECT current_setting('jit_above_cost')::float8")
        configured = cursor.fetchone()[0]
        assert cost < min(JIT_ABOVE_COST, configured if configured >= 0 else JIT_ABOVE_COST)

        cursor.execute(generation.FOLD)
        assert _generations(cursor) == before  # every change row counted in `folded` instead
        cursor.execute(f"SELECT count(*) FROM {generation.CHANGES}")
        assert cursor.fetchone()[0] == 0
        assert before[generation.LISTS["links"]] >= 20000 * 2 // 3

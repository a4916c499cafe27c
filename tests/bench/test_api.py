"""`python -m bench api`, quick: flexzone and the bare ceiling app are both served and measured, and the
figures line carries the ratio. Timing is never asserted, only that the figures are there."""

from __future__ import annotations

import re

import pytest

from access.models import Principal
from bench import api as bench
from registry.readiness import database_url


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_bench_api_measures_flexzone_against_the_bare_ceiling_and_prints_the_ratio(monkeypatch, capsys):

    # The servers it starts are other processes: point them at this test's database, where the bench
    # registers its throw-away viewer.
    monkeypatch.setenv("DATABASE_URL", database_url())
    monkeypatch.setenv("FLEXZONE_OPS_QUEUE", "manual")
    assert bench.main(["--requests", "10", "--concurrency", "2", "--seconds", "0.2"]) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    figures = {name: float(value) for name, value in re.findall(r"(\w+)=([\d.]+)", last)}
    wanted = {"api_keepalive_rps", "ceiling_keepalive_rps", "api_ceiling_ratio", "uncached_ceiling_ratio"}
    assert wanted <= set(figures), last
    assert figures["api_ceiling_ratio"] > 0 and figures["ceiling_keepalive_rps"] > 0, last
    assert "bare WSGI ceiling" in out
    # Each page after a write is set beside the ceiling timed after the same write too.
    for name in bench.BUILT:
        assert figures[f"{name}_ceiling_ratio"] > 0 and figures[f"{name}_written_ceiling_ratio"] > 0, last
    assert out.count("the ceiling after the same write") == len(bench.BUILT), out
    assert not Principal.objects.filter(name__startswith="bench-").exists()

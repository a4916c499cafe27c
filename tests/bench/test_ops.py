"""`python -m bench ops`, quick: the three measurements run end to end and print the figures line."""

from __future__ import annotations

import math
import re

import pytest

from bench import ops as bench
from operations.models import Link, Operation
from registry.models import Router, Site


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_bench_ops_prints_the_three_figures_and_leaves_no_rows_behind(ops_settings, capsys):
    argv = ["--ops", "6", "--warm-adds", "1", "--eclipse-scale", "0.02", "--pairs", "2", "--ops-per-router", "2",
            "--parallel-delays", "--timing-scale 0.1 --jitter 0"]  # fmt: skip
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    figures = dict(re.findall(r"(\w+)=([\d.]+|nan)", last))
    assert set(figures) == {"overhead_p50_ms", "overhead_p95_ms", "warm_cold_ratio", "parallel_efficiency"}, last
    values = {name: float(value) for name, value in figures.items()}
    assert all(math.isfinite(value) and value > 0 for value in values.values()), last
    assert values["overhead_p50_ms"] <= values["overhead_p95_ms"]
    assert values["warm_cold_ratio"] < 1  # a pooled session is faster than a login, even at 2 % of the timing
    assert "seen by the caller" in out
    assert not Site.objects.filter(name__startswith=bench.PREFIX).exists()
    assert not Router.objects.filter(name__startswith=bench.PREFIX).exists()
    assert not Link.objects.exists() and not Operation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_bench_ops_can_seal_the_ledger_while_it_measures(ops_settings, settings, tmp_path, capsys):
    settings.FLEXZONE_LEDGER_KEY = tmp_path / "ledger-ed25519.pem"
    assert bench.main(["--ops", "6", "--parts", "a", "--ledger", "0.05"]) == 0
    out = capsys.readouterr().out
    sealed = re.search(r"ledger: sealed every 0.05 s, (\d+) seals, (\d+) entries", out)
    assert sealed, out
    assert int(sealed.group(1)) > 0 and int(sealed.group(2)) >= 6  # the measured operations, as they ended

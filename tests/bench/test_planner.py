"""`python -m bench planner`, small: it runs to its figures line, refusals included, and leaves no rows."""

from __future__ import annotations

import re

import pytest

from bench import planner as bench
from registry.models import Device, Site


@pytest.mark.django_db
def test_bench_planner_counts_refused_questions_and_prints_its_figures(capsys):
    # 20 sites over 5 platforms and 200 devices in 10 zones: zones with two devices of one site behind
    # an FCIP router come up, and the planner refuses those (before this, the bench stopped there).
    argv = ["--sites", "20", "--devices", "200", "--zones", "10", "--queries", "120", "--seed", "3"]
    assert bench.main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    figures = {name: float(value) for name, value in re.findall(r"(\w+)=([\d.]+)", last)}
    assert set(figures) == {"planner_queries", "refused", "p50_ms", "p99_ms"}, last
    assert figures["refused"] > 0 and figures["planner_queries"] > figures["refused"], last
    assert 0 < figures["p50_ms"] <= figures["p99_ms"], last
    assert not Site.objects.filter(name__startswith="bench-site-").exists() and not Device.objects.exists()

"""`python -m bench planner`, small: it runs to its figures line, every question answered, and leaves no rows."""

from __future__ import annotations

import re

import pytest

from bench import planner as bench
from registry.models import Device, Site


@pytest.mark.django_db
def test_bench_planner_answers_every_question_and_prints_its_figures(capsys):
    # 20 sites over 4 platforms and 200 devices in 10 zones, each zone among sites of one protocol:
    # zones with two devices of one site behind an FCIP router come up, and each is one link zoning
    # them all (before, the planner refused them).
    argv = ["--sites", "20", "--devices", "200", "--zones", "10", "--queries", "120", "--seed", "3"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    last = out[-1]
    figures = {name: float(value) for name, value in re.findall(r"(\w+)=([\d.]+)", last)}
    assert set(figures) == {"planner_queries", "p50_ms", "p99_ms"}, last
    zone = next(line for line in out if line.startswith("zone "))
    assert int(re.search(r"n=\s*(\d+)", zone).group(1)) > 0, zone
    assert 0 < figures["p50_ms"] <= figures["p99_ms"], last
    assert not Site.objects.filter(name__startswith="bench-site-").exists() and not Device.objects.exists()

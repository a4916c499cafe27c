"""The registry/API half of `clients` (run end to end, with the service it starts, by `lab all --quick` in
test_readme_commands.py)."""

from __future__ import annotations

from lab.experiments import api_clients


def test_a_plan_shrinks_to_what_is_left_of_a_budget_but_measures_every_client_count():
    assert api_clients.QUICK.within(1000) == api_clients.QUICK
    short = api_clients.QUICK.within(3)
    assert short.clients == api_clients.QUICK.clients and short.seconds == 0.5

"""`flexzone --grants`: a connect makes a grant, a renewal moves its end, a disconnect ends it; over real
mutual TLS to a server that runs the operations against simulated routers."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from cli.output import FIELDS

CONNECT = ["--device-description", "XRAID1", "--site", "remote-site"]


def grants(run_cli, config, *extra: str) -> list[dict]:
    result = run_cli("flexzone", "--grants", "--json", *extra, config=config)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_a_connect_makes_a_grant_a_renewal_moves_its_end_and_a_disconnect_ends_it(cli_lab, config_for, run_cli):
    config = config_for(cli_lab.server.url)
    assert run_cli("flexzone", "--grants", config=config).stdout == "(none)\n"
    added = run_cli("flexzone", "--add", *CONNECT, "--for", "1h", config=config)
    assert added.returncode == 0, added.stderr
    [grant] = grants(run_cli, config)
    assert list(grant) == list(FIELDS["grant"])
    assert (grant["site"], grant["device"], grant["owner_site"], grant["zone"]) == ("remote-site", "XRAID1",
                                                                                  "primary-site", 1)
    assert (grant["exclusive"], grant["state"], grant["origin"]) == (True, "active", "connect")
    first_end = dt.datetime.fromisoformat(grant["expires_at"])
    assert dt.timedelta(minutes=59) < first_end - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=1)

    table = run_cli("flexzone", "grants", "--site", "remote-site", config=config)
    header, row = table.stdout.splitlines()
    assert header.split() == ["ID", "SITE", "DEVICE", "OWNER", "ZONE", "MODE", "STATE", "ORIGIN", "UNTIL",
                              "INITIATORS"]
    assert row.split()[:8] == [str(grant["id"]), "remote-site", "XRAID1", "primary-site", "1", "exclusive", "active",
                               "connect"]
    assert "left)" in row
    assert grants(run_cli, config, "--site", "primary-site") == []

    renewed = run_cli("flexzone", "--add", *CONNECT, "--for", "2h", config=config)
    assert renewed.returncode == 0, renewed.stderr
    [again] = grants(run_cli, config)
    assert again["id"] == grant["id"]
    assert dt.datetime.fromisoformat(again["expires_at"]) - first_end > dt.timedelta(minutes=59)

    removed = run_cli("flexzone", "--remove", *CONNECT, config=config)
    assert removed.returncode == 0, removed.stderr
    assert grants(run_cli, config) == []

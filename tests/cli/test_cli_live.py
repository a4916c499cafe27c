"""flexzone and flexzone-rtr as subprocesses against the API over real mutual TLS, with simulated routers.

Operations really run: gunicorn executes them in worker threads against an McData Eclipse simulator
(primary-rtr) and a Nishan IPS 3000 simulator (remote-rtr) on loopback.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from cli.output import FIELDS
from tests.support.servers import ROOT

XRAID3_WWN = "20:04:00:04:53:00:02:f0"


def links(run_cli, config, *extra: str) -> list[dict]:
    result = run_cli("flexzone", "--lsifcp", "--json", *extra, config=config)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def router_sessions(run_cli, config, router: str) -> list[dict]:
    result = run_cli("flexzone-rtr", "--lsifcp", "--router", router, "--json", config=config)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def one_error_line(result: subprocess.CompletedProcess, program: str = "flexzone") -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{program}: ") and "(hint: " in lines[0]
    return lines[0]


@pytest.mark.slow
def test_add_by_description_shows_progress_then_lsifcp_shows_the_link_and_remove_takes_it_down(
    cli_lab, config_for, run_cli
):
    config = config_for(cli_lab.server.url)
    added = run_cli("flexzone", "--add", "--device-description", "XRAID1", "--site", "remote-site", config=config)
    assert added.returncode == 0, added.stderr
    # Plain progress (no terminal): one line per phase seen; which ones depends on the router's speed.
    progress = added.stderr.splitlines()
    assert progress and all(re.fullmatch(r"operation \d+: (queued|connecting|on router|verifying)(, \d+ retr(y|ies))? "
                                         r"\(\d+\.\ds\)", line) for line in progress), progress
    done, timing = added.stdout.splitlines()
    assert done.endswith("done: connected remote-site to XRAID1 (zone 1) via primary-rtr, remote-rtr")
    assert timing.startswith("timing: registry ") and " · invocation " in timing and " · router " in timing

    listing = run_cli("flexzone", "--lsifcp", config=config)
    assert listing.returncode == 0
    header, *rows = listing.stdout.splitlines()
    assert header.split() == ["ID", "STATE", "SITE", "DEVICE", "ROUTER", "PORT", "ZONE", "REMOTE-IP", "LEASE"]
    assert sorted(row.split()[1:9] for row in rows) == [
        ["up", "remote-site", "XRAID1", "primary-rtr", "8", "1", "127.0.0.22", "-"],
        ["up", "remote-site", "XRAID1", "remote-rtr", "4", "1", "127.0.0.21", "-"],
    ]
    assert router_sessions(run_cli, config, "primary-rtr") == [
        {"router": "primary-rtr", "port": 8, "zone": 1, "remote_ip": "127.0.0.22", "state": "up", "oper": ""}
    ]

    removed = run_cli("flexzone", "remove", "--device-description", "XRAID1", "--site", "remote-site",
                      config=config)
    assert removed.returncode == 0, removed.stderr
    assert "disconnected remote-site from XRAID1" in removed.stdout
    assert links(run_cli, config) == []
    assert {link["state"] for link in links(run_cli, config, "--all")} == {"down"}
    assert router_sessions(run_cli, config, "primary-rtr") == []


@pytest.mark.slow
def test_add_by_wwn_with_a_lease_prints_stable_json_and_remove_by_wwn_takes_it_down(cli_lab, config_for, run_cli):
    config = config_for(cli_lab.server.url)
    added = run_cli("flexzone", "--add", "--wwn", XRAID3_WWN.upper(), "--site", "primary-site", "--for", "2h",
                    "--json", config=config)
    assert added.returncode == 0, added.stderr
    assert added.stderr == ""  # no progress chatter when a script asks for JSON
    operation = json.loads(added.stdout)
    assert tuple(operation) == FIELDS["operation"]
    assert (operation["kind"], operation["state"], operation["phase"]) == ("add", "succeeded", "done")
    assert all(isinstance(operation[name], int | float) for name in ("registry_ms", "invocation_ms", "router_ms"))
    assert operation["total_ms"] >= operation["router_ms"] > 0
    assert operation["plan"]["devices"] == ["XRAID3"]

    listed = links(run_cli, config, "--site", "primary-site")
    assert {(link["device"], link["zone"], link["state"]) for link in listed} == {("XRAID3", 3, "up")}
    assert all(tuple(link) == FIELDS["link"] for link in listed)
    expires = dt.datetime.fromisoformat(listed[0]["lease_expires_at"].replace("Z", "+00:00"))
    assert dt.timedelta(hours=1, minutes=59) < expires - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=2)
    assert "left)" in run_cli("flexzone", "--lsifcp", config=config).stdout

    removed = run_cli("flexzone", "--remove", "--wwn", XRAID3_WWN, "--site", "primary-site", "--json", config=config)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["state"] == "succeeded"
    assert links(run_cli, config) == []


def test_plan_prints_the_exact_router_commands_and_changes_nothing(cli_lab, config_for, run_cli):
    from operations import planner
    from operations.models import Operation

    config = config_for(cli_lab.server.url)
    result = run_cli("flexzone", "--plan", "--zone", "2", "--site", "primary-site", config=config)
    assert result.returncode == 0, result.stderr
    expected = planner.plan_connect(site="primary-site", zone=2)
    commands = [command for step in expected.steps for command in step.commands]
    assert commands and all(f"       {command}" in result.stdout.splitlines() for command in commands)
    assert result.stdout.splitlines()[0] == "Plan: add site primary-site -> zone 2 (XRAID2)"

    as_json = json.loads(run_cli("flexzone", "plan", "--remove", "--device-description", "xraid2", "--site",
                                 "primary-site", "--json", config=config).stdout)
    removal = planner.plan_disconnect(site="primary-site", device_description="XRAID2")
    assert [step["commands"] for step in as_json["steps"]] == [step.commands for step in removal.steps]
    assert set(as_json) == {"action", "site", "zone", "devices", "steps"}
    assert Operation.objects.count() == 0
    assert links(run_cli, config, "--all") == []


@pytest.mark.slow
def test_v1_addifcp_and_rmifcp_configure_the_named_router(cli_lab, config_for, run_cli):
    config = config_for(cli_lab.server.url)
    session = ["--port", "8", "--zone", "1", "--ifcpip", "127.0.0.22"]
    added = run_cli("flexzone-rtr", "--addifcp", "--router", "primary-rtr", *session, config=config)
    assert added.returncode == 0, added.stderr
    assert "addifcp on primary-rtr: port 8, zone 1, remote 127.0.0.22" in added.stdout
    assert "timing: registry" in added.stdout

    table = run_cli("flexzone-rtr", "--lsifcp", config=config)
    assert table.returncode == 0, table.stderr
    assert ["primary-rtr", "8", "1", "127.0.0.22", "up", "-"] in [line.split() for line in table.stdout.splitlines()]
    assert [(link["router"], link["port"]) for link in links(run_cli, config)] == [("primary-rtr", 8)]

    removed = run_cli("flexzone-rtr", "--rmifcp", "--router", "primary-rtr", *session, "--json", config=config)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["state"] == "succeeded"
    assert router_sessions(run_cli, config, "primary-rtr") == []


def test_v1_add_without_router_when_two_are_registered_exits_2_naming_them(cli_lab, config_for, run_cli):
    result = run_cli("flexzone-rtr", "--addifcp", "--port", "8", "--zone", "3", "--ifcpip", "10.0.8.50",
                     config=config_for(cli_lab.server.url))
    assert result.returncode == 2
    line = one_error_line(result, "flexzone-rtr")
    assert "2 routers are registered: name one with --router" in line and "primary-rtr, remote-rtr" in line


def test_v1_add_towards_an_unregistered_gateway_exits_2_naming_ifcpip(cli_lab, config_for, run_cli):
    result = run_cli("flexzone-rtr", "--addifcp", "--router", "primary-rtr", "--port", "8", "--zone", "3",
                     "--ifcpip", "10.0.8.50", config=config_for(cli_lab.server.url))
    assert result.returncode == 2
    assert one_error_line(result, "flexzone-rtr").startswith("flexzone-rtr: ifcpip: ")


def test_an_unknown_device_exits_2_listing_close_matches(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--add", "--device-description", "XRAID", "--site", "remote-site",
                     config=config_for(cli_lab.server.url))
    assert result.returncode == 2
    line = one_error_line(result)
    assert "device_description: no device is described as 'XRAID'" in line
    assert "(hint: did you mean " in line and all(name in line for name in ("XRAID1", "XRAID2", "XRAID3"))


def test_an_unknown_site_exits_2_listing_close_matches(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--plan", "--zone", "1", "--site", "remote-sit", config=config_for(cli_lab.server.url))
    assert result.returncode == 2
    assert "did you mean remote-site" in one_error_line(result)


def test_a_bad_wwn_exits_2_naming_the_field(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--remove", "--wwn", "20:04:00:04:53:00:02", "--site", "primary-site",
                     config=config_for(cli_lab.server.url))
    assert result.returncode == 2
    assert one_error_line(result).startswith("flexzone: wwn: ")


def test_a_certificate_from_another_ca_exits_3(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--lsifcp", config=config_for(cli_lab.server.url, "mallory"))
    assert result.returncode == 3
    assert "the server does not trust the client certificate" in one_error_line(result)


def test_an_expired_certificate_exits_3_saying_so_and_naming_the_file(cli_lab, config_for, run_cli, api_pki):
    result = run_cli("flexzone", "--sites", config=config_for(cli_lab.server.url, "expired"))
    assert result.returncode == 3
    line = one_error_line(result)
    assert "your client certificate expired on" in line and api_pki.pair("expired")[0] in line


def test_a_ca_file_that_did_not_sign_the_server_exits_3(cli_lab, config_for, run_cli, api_pki):
    foreign_ca = str(api_pki.foreign / "ca.pem")
    result = run_cli("flexzone-rtr", "--lsifcp", config=config_for(cli_lab.server.url, ca=foreign_ca))
    assert result.returncode == 3
    assert f"the server's certificate is not trusted by {foreign_ca}" in one_error_line(result, "flexzone-rtr")


def test_an_unregistered_certificate_exits_3_with_the_servers_reason(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--devices", config=config_for(cli_lab.server.url, "eve"))
    assert result.returncode == 3
    assert "refused (401)" in one_error_line(result)


def test_a_viewer_may_list_but_not_add(cli_lab, config_for, run_cli):
    config = config_for(cli_lab.server.url, "bob")
    assert run_cli("flexzone", "--lsifcp", config=config).returncode == 0
    result = run_cli("flexzone", "--add", "--device-description", "XRAID1", "--site", "remote-site", config=config)
    assert result.returncode == 3
    assert "refused (403)" in one_error_line(result)


def test_the_registry_listings_print_tables_and_json(cli_lab, config_for, run_cli):
    config = config_for(cli_lab.server.url)
    expectations = {
        "--sites": ("site", "name", ["primary-site", "remote-site"]),
        "--zones": ("zone", "zone_id", [1, 2, 3]),
        "--devices": ("device", "description", ["XRAID1", "XRAID2", "XRAID3"]),
        "--routers": ("router", "name", ["primary-rtr", "remote-rtr"]),
    }
    for flag, (kind, key, values) in expectations.items():
        table = run_cli("flexzone", flag, config=config)
        assert table.returncode == 0, table.stderr
        assert all(str(value) in table.stdout for value in values)
        records = json.loads(run_cli("flexzone", flag, "--json", config=config).stdout)
        assert sorted(record[key] for record in records) == values
        assert all(tuple(record) == FIELDS[kind] for record in records)
    assert "GSFC-DICEL1" in run_cli("flexzone", "sites", config=config).stdout
    routers = run_cli("flexzone", "--routers", config=config).stdout.splitlines()
    assert "SECURITY" in routers[0] and all("plaintext" in line for line in routers[1:] if "-rtr" in line)
    assert json.loads(run_cli("flexzone", "--health", "--json", config=config).stdout)["status"] == "ok"


@pytest.mark.slow
def test_no_wait_returns_at_once_and_status_and_journal_follow_the_operation(cli_lab, config_for, run_cli):
    config = config_for(cli_lab.server.url)
    submitted = run_cli("flexzone", "--add", "--zone", "2", "--site", "primary-site", "--no-wait", "--json",
                        config=config)
    assert submitted.returncode == 0, submitted.stderr
    operation_id = json.loads(submitted.stdout)["id"]
    deadline = time.monotonic() + 30
    while True:
        status = json.loads(run_cli("flexzone", "status", str(operation_id), "--json", config=config).stdout)
        if status["state"] not in ("queued", "running") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status["state"] == "succeeded" and status["phase"] == "done"

    human = run_cli("flexzone", "--status", str(operation_id), config=config)
    assert f"operation {operation_id}: add by alice" in human.stdout and "succeeded" in human.stdout
    journal = run_cli("flexzone", "--journal", config=config)
    assert [str(operation_id), "add", "succeeded", "done", "alice"] == journal.stdout.splitlines()[1].split()[:5]
    entry = run_cli("flexzone", "--journal", str(operation_id), config=config)
    assert "ifcp" in entry.stdout  # the plan's exact commands
    assert "(router transcripts are shown to admins only)" in entry.stdout
    admin = json.loads(run_cli("flexzone", "--journal", str(operation_id), "--json",
                               config=config_for(cli_lab.server.url, "root")).stdout)
    assert admin["transcript"]


@pytest.mark.slow
def test_an_operation_that_fails_on_the_router_exits_1_with_the_reason(cli_lab, config_for, run_cli):
    cli_lab.primary_sim.stop()
    result = run_cli("flexzone", "--add", "--device-description", "XRAID1", "--site", "remote-site",
                     config=config_for(cli_lab.server.url))
    assert result.returncode == 1
    line = result.stderr.splitlines()[-1]
    assert line.startswith("flexzone: operation ") and "primary-rtr" in line
    assert "(hint: `flexzone --journal" in line
    assert "timing: registry" in result.stdout


@pytest.mark.slow
def test_reconcile_reports_agreement_between_registry_and_routers(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--reconcile", config=config_for(cli_lab.server.url))
    assert result.returncode == 0, result.stderr
    assert "reconcile (check) of 2 router(s): 0 difference(s)" in result.stdout
    assert "  primary-rtr: in agreement with the registry" in result.stdout


@pytest.mark.slow
def test_on_a_terminal_the_progress_line_is_redrawn_in_place(cli_lab, config_for, home):
    environment = dict(os.environ, HOME=str(home), FLEXZONE_CONFIG=str(config_for(cli_lab.server.url)))
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.flexzone", "--add", "--zone", "3", "--site", "primary-site"],
        cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=slave, text=True,
    )
    os.close(slave)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            elif process.poll() is not None:
                break
        stdout = process.communicate(timeout=30)[0]
    finally:
        os.close(master)
    text = seen.decode()
    assert process.returncode == 0, text
    assert "\r\x1b[K" in text
    phases = "queued|connecting|on router|verifying"
    assert re.search(rf"operation \d+ add: (({phases}) ✓ → )*\[({phases})\]", text), text
    assert "\n" not in text.strip()  # one line, redrawn, then cleared
    assert "done: connected primary-site to XRAID3" in stdout


def test_a_revoked_certificate_exits_3_saying_it_was_revoked(cli_lab, config_for, run_cli, api_pki):
    from access.principals import register

    register(api_pki.ca.issue("frank"), "frank", "operator", all_sites=True, all_zones=True)
    config = config_for(cli_lab.server.url, "frank")
    assert run_cli("flexzone", "--zones", config=config).returncode == 0
    api_pki.ca.revoke("frank")  # rewrites the CRL; the server's next handshake refuses frank
    result = run_cli("flexzone", "--zones", config=config)
    assert result.returncode == 3
    assert "it has been revoked" in one_error_line(result)


def test_an_operation_no_worker_takes_ends_the_wait_with_exit_1_saying_so(api_server, cast, config_for,
                                                                          run_cli):
    result = run_cli("flexzone", "--add", "--device-description", "XRAID1", "--site", "remote-site", "--wait", "1",
                     config=config_for(api_server.url))
    assert result.returncode == 1
    line = result.stderr.splitlines()[-1]
    assert "is still queued after 1 s: no worker has picked it up yet" in line
    assert "(hint: " in line and "--status" in line


def test_a_key_that_does_not_belong_to_the_certificate_exits_3_naming_both(cli_lab, run_cli, api_pki, tmp_path):
    from cli.config import write_config

    cert, _ = api_pki.pair("alice")
    _, other_key = api_pki.pair("bob")
    config = write_config(tmp_path / "mixed.toml", server=cli_lab.server.url, ca=api_pki.ca_file, cert=cert,
                          key=other_key)
    result = run_cli("flexzone", "--sites", config=config)
    assert result.returncode == 3
    assert f"the key {other_key} does not belong to the certificate {cert}" in one_error_line(result)


def test_an_unknown_operation_exits_2(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--status", "999999", config=config_for(cli_lab.server.url))
    assert result.returncode == 2
    assert one_error_line(result).startswith("flexzone: not found: ")


def test_repair_is_refused_to_an_operator_with_exit_3(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--reconcile", "--repair", config=config_for(cli_lab.server.url))
    assert result.returncode == 3
    assert "repair needs admin" in one_error_line(result)

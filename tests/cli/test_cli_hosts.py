"""`flexzone --hosts` and `--host NAME`: a site's hosts and choosing which of them a link zones (FCIP)."""

from __future__ import annotations

import json

import pytest

from cli.flexzone import describe_plan
from cli.output import FIELDS

CONNECT = ["--device-description", "XRAID1", "--site", "remote-site"]


@pytest.fixture
def fcip_registry(cli_lab):
    """The lab's registry with both routers turned into FCIP switches and a second host at remote-site (only plans
    are asked for: the simulators behind the routers are never contacted)."""
    from registry.models import Host, Initiator, Router, Site

    Site.objects.filter(name="primary-site").update(router_port=24)
    Site.objects.filter(name="remote-site").update(router_port=25)
    Router.objects.filter(name="primary-rtr").update(platform="brocade_fos", transport="ssh")
    Router.objects.filter(name="remote-rtr").update(platform="cisco_mds", transport="ssh", vsan=10)
    backup = Host.objects.create(site=Site.objects.get(name="remote-site"), name="backup-server")
    Initiator.objects.create(host=backup, wwn="10:00:00:10:9b:5e:c0:01")
    return cli_lab


def test_hosts_lists_each_host_with_its_site_and_initiators(cli_lab, config_for, run_cli):
    config = config_for(cli_lab.server.url)
    table = run_cli("flexzone", "--hosts", config=config)
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["NAME", "SITE", "INITIATORS", "DESCRIPTION"]
    assert [row.split(maxsplit=3) for row in rows] == [
        ["segment-server", "primary-site", "21:00:00:e0:8b:10:5e:01,21:01:00:e0:8b:30:5e:01", "DICE Segment Server"],
        ["management-server", "remote-site", "21:00:00:e0:8b:10:3a:02", "DICE Management Server"],
    ]
    records = json.loads(run_cli("flexzone", "hosts", "--site", "remote-site", "--json", config=config).stdout)
    assert [tuple(record) for record in records] == [FIELDS["host"]]
    assert (records[0]["name"], records[0]["initiators"]) == ("management-server", ["21:00:00:e0:8b:10:3a:02"])


def test_hosts_shows_a_viewer_only_the_sites_in_its_scope(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--hosts", config=config_for(cli_lab.server.url, "bob"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "(none)\n"


@pytest.mark.parametrize("args", [["--remove", *CONNECT, "--host", "management-server"],
                                  ["--plan", "--remove", *CONNECT, "--host", "management-server"],
                                  ["--lsifcp", "--host", "management-server"]])
def test_host_outside_a_connect_is_a_usage_error_before_anything_is_sent(run_cli, args):
    result = run_cli("flexzone", *args)  # no configuration at all: the parser answers first
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("flexzone: --host goes with --add or --plan") and "(hint: " in line


def test_plan_sends_each_host_as_a_repeated_parameter_and_prints_the_zone_members(fcip_registry, config_for,
                                                                                   run_cli):
    config = config_for(fcip_registry.server.url)
    result = run_cli("flexzone", "--plan", *CONNECT, "--host", "backup-server", config=config)
    assert result.returncode == 0, result.stderr
    members = "       zone members: initiators 10:00:00:10:9b:5e:c0:01; target 20:00:00:04:53:00:01:a0"
    assert result.stdout.splitlines().count(members) == 2
    assert any(line.startswith("       note: ") for line in result.stdout.splitlines())

    both = json.loads(run_cli("flexzone", "plan", *CONNECT, "--host", "backup-server", "--host", "management-server",
                              "--json", config=config).stdout)
    assert both["steps"][0]["initiators"] == ["10:00:00:10:9b:5e:c0:01", "21:00:00:e0:8b:10:3a:02"]
    twice = run_cli("flexzone", "--plan", *CONNECT, "--host", "backup-server", "--host", "backup-server",
                    config=config)
    assert twice.returncode == 2 and twice.stderr.startswith("flexzone: hosts[1]: ")


def test_an_unknown_host_exits_2_listing_close_matches(cli_lab, config_for, run_cli):
    result = run_cli("flexzone", "--plan", *CONNECT, "--host", "management-servr",
                     config=config_for(cli_lab.server.url))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "hosts: site remote-site has no host named 'management-servr'" in line
    assert "did you mean management-server" in line


def test_add_sends_the_hosts_in_the_request(api_server, cast, config_for, run_cli):
    from operations.models import Operation

    result = run_cli("flexzone", "--add", *CONNECT, "--host", "management-server", "--no-wait", "--json",
                     config=config_for(api_server.url))
    assert result.returncode == 0, result.stderr
    operation = json.loads(result.stdout)
    assert operation["request"]["hosts"] == ["management-server"]
    assert Operation.objects.get(pk=operation["id"]).request["hosts"] == ["management-server"]


def test_a_plan_step_with_initiators_shows_the_zone_members_then_commands_then_notes():
    plan = {"action": "add", "site": "west-site", "zone": 4, "devices": ["EAST-ARRAY1"], "steps": [{
        "order": 1, "action": "add", "router": "west-rtr", "platform": "cisco_mds", "site": "west-site", "port": 25,
        "zone": 4, "remote_ip": "127.0.0.23", "wwn": "50:00:09:72:08:1a:f1:04", "vsan": 1,
        "initiators": ["10:00:00:10:9b:5e:b0:01", "10:00:00:10:9b:5e:b0:02"], "commands": ["config terminal"],
        "notes": ["<active zoneset> is read from the switch"]}]}
    assert describe_plan(plan).splitlines()[1:] == [
        "  1. add on router west-rtr (cisco_mds, site west-site): port 25, zone 4, remote gateway 127.0.0.23",
        "       zone members: initiators 10:00:00:10:9b:5e:b0:01, 10:00:00:10:9b:5e:b0:02; target "
        "50:00:09:72:08:1a:f1:04",
        "       config terminal",
        "       note: <active zoneset> is read from the switch",
    ]

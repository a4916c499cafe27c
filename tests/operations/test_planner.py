"""The planner answers the seed's three questions, and refuses unknown names with close matches."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from operations.planner import PlanError, find_router, plan_connect, plan_disconnect


def test_connect_with_a_device_described_as_xraid2_configures_the_owner_then_the_requester(demo):
    plan = plan_connect(site="primary-site", device_description="XRAID2")
    assert [(s.order, s.router, s.port, s.zone, s.remote_ip) for s in plan.steps] == [
        (1, "remote-rtr", 4, 2, "127.0.0.21"),
        (2, "primary-rtr", 8, 2, "127.0.0.22"),
    ]
    assert plan.devices == ["XRAID2"]
    assert all(step.commands for step in plan.steps)


def test_description_lookup_ignores_letter_case(demo):
    assert plan_connect(site="primary-site", device_description="xraid2").devices == ["XRAID2"]


def test_connect_to_zone_2_from_the_gsfc_dicel1_site(demo):
    plan = plan_connect(site="GSFC-DICEL1", zone=2)
    assert plan.zone == 2
    assert [(s.router, s.remote_ip) for s in plan.steps] == [
        ("remote-rtr", "127.0.0.21"),
        ("primary-rtr", "127.0.0.22"),
    ]


def test_connect_gsfc_dicel1_with_a_device_by_wwn_in_any_case(demo):
    lower = plan_connect(site="GSFC-DICEL1", wwn="21:00:00:e0:8b:0e:95:17")
    upper = plan_connect(site="1", wwn="21:00:00:E0:8B:0E:95:17")
    assert lower.devices == upper.devices == ["XRAID2"]
    assert lower.steps == upper.steps


def test_sites_may_be_named_by_short_name_display_name_or_msan_id(demo):
    plans = [plan_connect(site=name, device_description="XRAID2") for name in ("primary-site", "gsfc-dicel1", 1)]
    assert plans[0] == plans[1] == plans[2]


def test_disconnect_runs_the_same_steps_in_reverse(demo):
    connect = plan_connect(site="remote-site", device_description="XRAID1")
    disconnect = plan_disconnect(site="remote-site", device_description="XRAID1")
    assert [s.router for s in disconnect.steps] == [s.router for s in reversed(connect.steps)]
    assert {s.action for s in disconnect.steps} == {"remove"}


def test_commands_carry_the_link_parameters(demo):
    plan = plan_connect(site="remote-site", device_description="XRAID1")
    first = plan.steps[0]
    assert first.router == "primary-rtr"
    text = " ".join(first.commands)
    assert "8" in text and "127.0.0.22" in text


def test_unknown_device_names_the_field_and_lists_close_matches(demo):
    with pytest.raises(PlanError) as info:
        plan_connect(site="primary-site", device_description="XRAD2")
    assert info.value.field == "device_description"
    assert "XRAID2" in info.value.suggestions


def test_unknown_site_lists_close_matches(demo):
    with pytest.raises(PlanError) as info:
        plan_connect(site="primary-sit", device_description="XRAID2")
    assert info.value.field == "site"
    assert "primary-site" in info.value.suggestions


def test_a_router_is_found_by_name_and_an_unknown_one_lists_close_matches(demo):
    assert find_router("primary-rtr").site.name == "primary-site"
    with pytest.raises(PlanError) as info:
        find_router("primary-rtx")
    assert info.value.field == "router"
    assert info.value.suggestions[0] == "primary-rtr"


@pytest.mark.parametrize("wwn", ["21:00:00:e0:8b:0e:95", "21-00-00-e0-8b-0e-95-17", "zz:00:00:e0:8b:0e:95:17", "x"])
def test_malformed_wwn_is_refused_with_the_rule(demo, wwn):
    with pytest.raises(PlanError) as info:
        plan_connect(site="primary-site", wwn=wwn)
    assert info.value.field == "wwn"
    assert "eight colon-separated hex bytes" in info.value.message


def test_unknown_wwn_is_reported(demo):
    with pytest.raises(PlanError) as info:
        plan_connect(site="primary-site", wwn="21:00:00:e0:8b:0e:95:18")
    assert info.value.field == "wwn"
    assert "21:00:00:e0:8b:0e:95:17" in info.value.suggestions


def test_unknown_zone_is_reported(demo):
    with pytest.raises(PlanError) as info:
        plan_connect(site="primary-site", zone=7)
    assert info.value.field == "zone" and "does not exist" in info.value.message


def test_a_sites_own_device_needs_no_extension(demo):
    with pytest.raises(PlanError) as info:
        plan_connect(site="primary-site", device_description="XRAID1")
    assert "no SAN extension is needed" in info.value.message


def test_exactly_one_selector_is_required(demo):
    with pytest.raises(PlanError):
        plan_connect(site="primary-site", device_description="XRAID2", zone=2)
    with pytest.raises(PlanError):
        plan_connect(site="primary-site")


def test_plan_command_prints_the_plan(demo, capsys):
    call_command("plan", "--device-description", "XRAID2", "--site", "primary-site")
    out = capsys.readouterr().out
    assert "remote-rtr" in out and "primary-rtr" in out and out.index("remote-rtr") < out.index("primary-rtr")


def test_plan_command_fails_with_the_error_on_bad_input(demo):
    with pytest.raises(CommandError, match="wwn: A WWN is eight"):
        call_command("plan", "--wwn", "21:00", "--site", "primary-site")


def test_a_site_without_a_router_is_refused_naming_it(demo):
    demo["remote_rtr"].delete()
    with pytest.raises(PlanError) as raised:
        plan_connect(site="remote-site", device_description="XRAID1")
    assert raised.value.field == "site" and "remote-site has no router registered" in str(raised.value)

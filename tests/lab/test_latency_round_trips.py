"""The latency experiment's round trips, without root: what the WAN router's simulator counted per operation,
beside the least its commands need, as the experiment writes them."""

from __future__ import annotations

import json
import shutil

from lab.experiments import latency
from lab.experiments.service import LabService
from simulators.roundtrips import least


def row(sessions: str, kind: str, turns: int, login: int = 0, state: str = "succeeded") -> dict:
    return {"sessions": sessions, "kind": kind, "state": state, "remote_turns": turns, "remote_login_turns": login,
            "primary_turns": 9, "primary_login_turns": 0}


def test_each_operations_median_wan_round_trips_stand_beside_the_least():
    rows = [row("pooled", "add", 2), row("pooled", "add", 4), row("pooled", "add", 2),
            row("pooled", "list", 1), row("pooled", "remove", 2, state="failed"),
            row("per-operation", "list", 3, login=2)]
    found = latency.round_trips(rows, ("per-operation", "pooled"))
    assert [(f["sessions"], f["op"], f["turns"], f["least"], f["over_least"]) for f in found] == [
        ("per-operation", "list", 3, 1, 2), ("pooled", "add", 2, 2, 0), ("pooled", "list", 1, 1, 0)]
    table, notes = latency.round_trip_report(found)
    assert table.splitlines()[0].split("|")[1:-1] == [f" {h} " for h in latency.ROUND_TRIP_HEADER]
    assert "| pooled | add | nishan_ips3000 | 2 | 0 | 2 | 0 | 3 |" in table
    assert notes[0].startswith("WAN round trips per operation (per-operation sessions)")
    assert "list 3 (least 1; login 2 more)" in notes[0]


def test_the_service_reads_each_simulators_count_from_its_state_directory():
    service = LabService(lab=None)
    try:
        counted(service)
    finally:
        shutil.rmtree(service.scratch)


def counted(service: LabService) -> None:
    for site, commands in (("primary", 4), ("remote", 7)):
        folder = service.scratch / f"svc-sim-{site}"
        folder.mkdir()
        (folder / "roundtrips.json").write_text(json.dumps({"login": 2, "commands": commands, "sessions": 1}))
    before = service.round_trips()
    (service.scratch / "svc-sim-remote" / "roundtrips.json").write_text(
        json.dumps({"login": 4, "commands": 10, "sessions": 2}))
    assert service.turns_since(before) == {"primary_turns": 0, "primary_login_turns": 0, "remote_turns": 3,
                                           "remote_login_turns": 2}


def test_each_wan_router_gets_its_own_rows_and_note_beside_its_own_least():
    fcip = [dict(row("pooled", "add", 9), wan_router="cisco_mds", links="FCIP"),
            dict(row("pooled", "add", 11), wan_router="cisco_mds", links="FCIP")]
    found = latency.round_trips([row("pooled", "add", 2), *fcip], ("pooled",))
    assert [(f["router"], f["turns"], f["least"]) for f in found] == [
        ("nishan_ips3000", 2, least("nishan_ips3000", "add")), ("cisco_mds", 10, least("cisco_mds", "add"))]
    _, notes = latency.round_trip_report(found)
    assert len(notes) == 2 and "(cisco_mds) counted, median: add 10 (least" in notes[1]


def test_a_change_saved_after_each_operation_has_the_saves_least_added_and_a_list_has_none():
    fcip = [dict(row("pooled", kind, 19), wan_router="cisco_mds", links="FCIP") for kind in ("add", "list")]
    found = latency.round_trips(fcip, ("pooled",), saves=True)
    assert [(f["op"], f["least"]) for f in found] == [
        ("add", least("cisco_mds", "add") + least("cisco_mds", "save")), ("list", least("cisco_mds", "list"))]
    assert least("cisco_mds", "save") == 1
    assert [f["least"] for f in latency.round_trips(fcip, ("pooled",))] == [least("cisco_mds", "add"),
                                                                            least("cisco_mds", "list")]

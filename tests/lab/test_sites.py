"""The several-sites experiment's parts that need no lab: its paths' impairments, how it reads the emulator's
health for one path, how it groups the planner's refusals (against the planner's own words), and the
section it writes for the report from rows shaped as a run writes them. The run itself needs root and five
namespaces (`python -m lab sites --quick`, about two minutes; `lab all --quick` includes it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.experiments import commands, sites
from lab.experiments.sites import QUICK, SITES, SiteRole, path_reasons, refusal
from lab.profiles import Impairment


def role(name: str) -> SiteRole:
    return next(r for r in SITES if r.lab_site == name)


def test_the_distant_site_has_the_far_impairment_both_ways_and_every_other_path_the_near_one():
    assert QUICK.profile("primary", "site3") == QUICK.profile("site3", "remote") == QUICK.far
    assert QUICK.profile("primary", "remote") == QUICK.profile("site4", "site5") == QUICK.near
    assert QUICK.far.delay_ms > QUICK.near.delay_ms


def test_the_sites_mix_platforms_and_include_both_fcip_switches():
    platforms = [r.platform for r in SITES]
    assert len(SITES) >= 3 and len(set(platforms)) >= 3
    assert {"brocade_fos", "cisco_mds"} <= set(platforms)
    assert len({r.site for r in SITES}) == len({r.device for r in SITES}) == len(SITES)


def test_a_path_is_spoiled_only_by_its_own_hops_or_by_the_emulator_as_a_whole():
    reasons = ["primary>site5: packets left on average 1.73 ms late (limit 1.0 ms)",
               "site3>primary: 33.2% of packets left more than 1.0 ms late (limit 25%)",
               "primary>site3: kernel dropped 4 packets on nfqueue 7", "delay emulator stats unreadable"]
    assert path_reasons(reasons, "primary", "site3") == reasons[1:]
    assert path_reasons(reasons, "site4", "site5") == ["delay emulator stats unreadable"]
    assert path_reasons(reasons[:1], "site5", "primary") == reasons[:1]


@pytest.mark.django_db
def test_the_planners_refusal_of_a_mixed_pair_is_grouped_by_its_reason(settings, tmp_path):
    from operations.planner import PlanError, plan_connect
    from registry.demo import load_demo

    settings.FLEXZONE_SECRETS_DIR = str(tmp_path)
    load_demo(fcip=True)
    with pytest.raises(PlanError) as refused:
        plan_connect(site="primary-site", device_description="EAST-ARRAY1")
    assert refusal(str(refused.value)) == "iFCP gateway and FCIP switch: different protocols"
    assert refusal("router x: something else entirely") == "router x: something else entirely"


def op(kind: str, a: str, b: str, state: str = "succeeded", total: float | None = 1500.0,
       error: str = "") -> dict[str, Any]:
    return {"kind": kind, "from": a, "to": b, "site": role(a).site, "device": role(b).device, "state": state,
            "attempts": 1, "error": error, "total_ms": total, "router_ms": None if total is None else total / 2,
            "wall_ms": (total or 0) + 300}


def transfer(a: str, b: str, op_: str, rate: float, valid: bool = True) -> dict[str, Any]:
    return {"from": a, "to": b, "device": role(b).device, "rtt_ms": 2 * QUICK.profile(a, b).delay_ms, "op": op_,
            "mb_per_s": rate, "valid": valid, "error": "" if valid else "site3>primary: late"}


MIXED = "site: ... (mcdata_eclipse, iFCP) and ... (brocade_fos, FCIP) speak different protocols: a link joins ..."


def section(tmp_path: Path, rows: list[dict[str, Any]], transfers: list[dict[str, Any]],
            agree: bool = True) -> Any:
    pairs = [(a, b) for a in SITES for b in SITES if a is not b]
    agreement = {"after_connect": {"agree": True}, "after_disconnect": {"agree": agree}}
    return sites._outcome(QUICK, tmp_path, "python -m lab sites --quick", pairs, rows, transfers, agreement, [])


def a_run() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows, transfers = [], []
    for a in SITES:
        for b in SITES:
            if a is b:
                continue
            if (a.platform in ("brocade_fos", "cisco_mds")) != (b.platform in ("brocade_fos", "cisco_mds")):
                rows.append(op("add", a.lab_site, b.lab_site, "refused", None, MIXED))
                continue
            slow = 2 * QUICK.profile(a.lab_site, b.lab_site).delay_ms
            rows += [op("add", a.lab_site, b.lab_site, total=1000 + 10 * slow),
                     op("remove", a.lab_site, b.lab_site, total=700.0)]
            transfers += [transfer(a.lab_site, b.lab_site, "write", 2000 / slow),
                          transfer(a.lab_site, b.lab_site, "read", 2100 / slow)]
    return rows, transfers


def test_the_report_section_has_a_row_per_connected_path_and_groups_the_refused_ones(tmp_path):
    rows, transfers = a_run()
    outcome = section(tmp_path, rows, transfers)
    assert outcome.valid and outcome.name == "sites"
    table = outcome.table
    assert "| site3 -> primary | nishan_ips3000 / mcdata_eclipse | 80 | succeeded | 1.8 | 0.9 | 2.1 |" in table
    assert "| 25.0 | 26.2 |" in table  # its write and read rates
    assert "| site4 -> site5 | brocade_fos / cisco_mds | 20 |" in table
    assert "| iFCP gateway and FCIP switch: different protocols | primary -> site4, primary -> site5," in table
    assert "8 succeeded and 12 were refused" in " ".join(outcome.notes)
    assert "after the disconnects: yes" in " ".join(outcome.notes)
    assert (tmp_path / "sites.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "sites.csv").read_text().count("\n") == len(rows) + 1


def test_a_failed_connect_a_disagreement_or_a_spoiled_transfer_makes_the_section_invalid(tmp_path):
    rows, transfers = a_run()
    assert not section(tmp_path, rows, transfers, agree=False).valid
    spoiled = [dict(t, valid=False) if t["from"] == "site3" else t for t in transfers]
    outcome = section(tmp_path, rows, spoiled)
    assert not outcome.valid and "(invalid)" in outcome.table
    failed = [dict(r, state="failed", error="router timeout") if r["from"] == "primary" and r["kind"] == "add"
              and r["state"] == "succeeded" else r for r in rows]
    outcome = section(tmp_path, failed, transfers)
    assert not outcome.valid
    assert any(n.startswith("FAILED add primary -> remote: failed: router timeout") for n in outcome.notes)


def test_sites_is_a_lab_only_experiment_that_needs_the_database():
    assert "sites" in commands.EXPERIMENTS
    assert "sites" in commands.LAB_ONLY and "sites" in commands.NEEDS_DATABASE
    assert commands.experiment("sites").QUICK.budget_s <= 300
    assert [r.lab_site for r in SITES] == ["primary", "remote", "site3", "site4", "site5"]
    assert isinstance(QUICK.near, Impairment)

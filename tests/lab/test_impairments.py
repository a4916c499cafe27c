"""Impairments other than delay: the htb rate cap and nft loss, measured with real traffic."""

from __future__ import annotations

import pytest

from lab.measure import iperf3, ping
from lab.profiles import Impairment, LinkProfile

pytestmark = pytest.mark.root


def test_a_rate_cap_holds_bulk_tcp_to_the_configured_rate(lab):
    lab.impair("primary", "remote", LinkProfile("r", Impairment.parse("rate=20mbit"), Impairment()))
    result = iperf3(lab, "primary", "remote", seconds=4, omit=1, cc="cubic")
    assert 16 <= result.mbit <= 21, result


def test_loss_applies_to_one_direction_only_and_the_nft_counters_account_for_every_drop(lab):
    lab.impair("primary", "remote", LinkProfile("l", Impairment(loss_pct=10), Impairment()))
    before = lab.backend.counters()
    result = ping(lab, "primary", lab.site("remote").addr, count=2000, interval=0.001, expected_rtt_ms=1)
    after = lab.backend.counters()
    forward = {k: after["primary>remote"][k] - before["primary>remote"][k] for k in ("seen", "lost")}
    reverse = {k: after["remote>primary"][k] - before["remote>primary"][k] for k in ("seen", "lost")}
    assert forward["seen"] == result.sent
    assert forward["lost"] == result.sent - result.received
    assert reverse == {"seen": result.received, "lost": 0}
    # 2000 probes at 10 %: the standard deviation is 0.67 points; allow 4 of them.
    assert result.loss == pytest.approx(0.10, abs=0.027)


def test_a_rate_cap_can_be_added_changed_and_removed_at_runtime(lab):
    for spec in ("delay=1ms", "rate=50mbit", "rate=10mbit,delay=2ms", "none", "rate=5mbit"):
        lab.impair("primary", "remote", LinkProfile("r", Impairment.parse(spec), Impairment()))
    qdiscs = lab.run("wan", ["tc", "qdisc", "show", "dev", lab.site("remote").wan_if]).stdout
    assert "limit 31250b" in qdiscs  # 5 Mbit/s x 50 ms buffer

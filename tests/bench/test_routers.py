"""The router benchmark prints one row per platform with cold and warm times."""

from __future__ import annotations

import re

from bench.routers import main


def test_the_benchmark_prints_cold_and_warm_times_for_the_ifcp_platforms(capsys):
    assert main(["--platform", "mcdata_eclipse", "--platform", "nishan_ips3000", "--scale", "0.01"]) == 0
    out = capsys.readouterr().out
    for platform in ("mcdata_eclipse", "nishan_ips3000"):
        row = re.search(rf"^{platform}\s+telnet\s+(\d+\.\d\d)\s+(\d+\.\d\d)\s+(\d+)%\s+(\d+)%$", out, re.M)
        assert row, out
        cold, warm = float(row.group(1)), float(row.group(2))
        assert 0 < warm < cold

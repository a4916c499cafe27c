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


def test_the_reads_table_shows_what_each_fcip_operation_read_before_and_now(capsys):
    assert main(["--platform", "brocade_fos", "--platform", "cisco_mds", "--scale", "0", "--fabric-size", "40"]) == 0
    out = capsys.readouterr().out
    assert "Reads per operation on a fabric of 40 other zones" in out
    for platform in ("brocade_fos", "cisco_mds"):
        for operation in ("add", "list", "remove"):
            row = re.search(rf"^{platform}\s+{operation}\s+(\d+)/(\d+)\s+([\d.]+)/([\d.]+)\s", out, re.M)
            assert row, out
            assert int(row.group(1)) > 0 and int(row.group(2)) > 0
    # The MDS driver no longer reads the whole running-config: a list reads fewer bytes. An add or a
    # remove in basic zoning mode reads the zone views twice (again right before activating, so that no
    # change staged meanwhile goes live: cisco_mds_guard.py); read the old way, that was the whole
    # running-config twice.
    for operation, times in (("add", 2), ("list", 1), ("remove", 2)):
        before, now = re.search(rf"cisco_mds_{operation}_kb=(\d+)/(\d+)", out).groups()
        assert int(now) < times * int(before), (operation, before, now)

"""The testbed: namespaces, addresses, routes, offloads, idempotent set-up and complete teardown."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.backends import FallbackBackend, probe
from lab.profiles import Impairment, LinkProfile
from lab.runner import Runner
from lab.testbed import LAB_NET, Lab
from tests.support.lab import namespaces_with_prefix

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]


def netns_run(netns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True, text=True, check=check)


def test_probe_picks_the_nfqueue_fallback_on_a_kernel_without_sch_netem(lab_prefix):
    caps = probe(Runner(), f"{lab_prefix}-probe")
    assert namespaces_with_prefix(lab_prefix) == []
    assert caps.nft_numgen and caps.iptables_nfqueue and caps.htb
    if Path("/proc/config.gz").exists():
        config = subprocess.run(["zcat", "/proc/config.gz"], capture_output=True, check=True).stdout
        assert caps.netem == (b"CONFIG_NET_SCH_NETEM=" in config)
    if not caps.netem:
        assert caps.backend == FallbackBackend.name
        assert "unknown" in caps.errors["netem"].lower()


def test_up_is_idempotent_and_down_leaves_nothing_behind(new_lab):
    new_lab.up(3)
    first = new_lab.status()
    assert set(first["sites"]) == {"primary", "remote", "site3"}
    assert new_lab.up(3).status() == first
    again = Lab(prefix=new_lab.prefix, run_dir=new_lab.run_dir)
    assert again.is_up and again.up(3).status()["namespaces"] == first["namespaces"]
    new_lab.down()
    new_lab.down()
    assert namespaces_with_prefix(new_lab.prefix) == []
    assert not (new_lab.run_dir / "state.json").exists()


def test_every_address_is_in_the_benchmarking_range_and_nothing_routes_out(lab):
    for netns in lab.our_namespaces():
        addrs = json.loads(netns_run(netns, "ip", "-j", "addr", "show").stdout)
        for iface in addrs:
            for info in iface.get("addr_info", []):
                if iface["ifname"] == "lo":
                    continue
                assert info["family"] == "inet", f"{netns} {iface['ifname']} has {info}"
                assert ipaddress.ip_address(info["local"]) in LAB_NET
        routes = json.loads(netns_run(netns, "ip", "-j", "route", "show").stdout)
        assert all(r["dst"] != "default" for r in routes), f"{netns} has a default route: {routes}"
        unreachable = netns_run(netns, "ip", "route", "get", "10.0.8.50", check=False)
        assert unreachable.returncode != 0 and "unreachable" in unreachable.stderr
    for name, site in lab.sites.items():
        forward = netns_run(site.netns, "sysctl", "-n", "net.ipv4.ip_forward").stdout.strip()
        assert forward == "0", f"{name} forwards"
    assert netns_run(lab.wan_netns, "sysctl", "-n", "net.ipv4.ip_forward").stdout.strip() == "1"


def test_offloads_are_off_on_every_emulation_link(lab):
    for site in lab.sites.values():
        for netns, ifname in ((site.netns, site.site_if), (lab.wan_netns, site.wan_if)):
            features = netns_run(netns, "ethtool", "-k", ifname).stdout
            for feature in ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload"):
                assert f"{feature}: off" in features, f"{netns}/{ifname}: {feature}"


def test_sites_reach_each_other_on_every_service_address_across_the_wan(lab):
    remote = lab.site("remote")
    for addr in remote.addresses:
        assert lab.run("primary", ["ping", "-c", "1", "-W", "2", addr], check=False).returncode == 0, addr
    assert lab.run("primary", ["ip", "route", "get", remote.addr]).stdout.split()[2] == lab.site("primary").gateway


def test_a_profile_changes_at_runtime_without_restarting_the_emulator(lab):
    lab.impair("primary", "remote", LinkProfile.symmetric("a", Impairment(delay_ms=5)))
    pid = lab.procs.pid("emu-primary-remote")
    rtt = lab.run("primary", ["ping", "-c", "3", "-i", "0.05", "-q", lab.site("remote").addr]).stdout
    lab.impair("primary", "remote", LinkProfile.symmetric("b", Impairment(delay_ms=30)))
    assert lab.procs.pid("emu-primary-remote") == pid
    slower = lab.run("primary", ["ping", "-c", "3", "-i", "0.05", "-q", lab.site("remote").addr]).stdout
    avg = [float(out.split("=")[-1].split("/")[1]) for out in (rtt, slower)]
    assert 10 <= avg[0] < 15 and 60 <= avg[1] < 65, avg
    lab.clear()
    assert lab.procs.pid("emu-primary-remote") is None
    assert "NFQUEUE" not in lab.run("wan", ["iptables", "-S", "FORWARD"]).stdout


def test_down_cleans_up_after_a_crashed_lab_process(lab_prefix, tmp_path):
    run_dir = tmp_path / "crashed"
    crash = (
        "import os\n"
        "from lab.testbed import Lab\nfrom lab.profiles import Impairment, LinkProfile\n"
        f"lab = Lab(prefix={lab_prefix!r}, run_dir={str(run_dir)!r}).up(2, backend='nft-nfqueue')\n"
        "lab.impair('primary', 'remote', LinkProfile.symmetric('x', Impairment(delay_ms=10)))\n"
        "lab.spawn('sleeper', 'remote', ['sleep', '300'])\n"
        "import subprocess\n"
        "stray = subprocess.Popen(lab.command('primary', ['sleep', '300']), stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL, start_new_session=True)\n"
        f"open({str(tmp_path / 'stray.pid')!r}, 'w').write(str(stray.pid))\n"
        "os._exit(3)\n"
    )
    try:
        proc = subprocess.run([sys.executable, "-c", crash], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 3, proc.stderr
        pids = [int(p.read_text().split()[0]) for p in (run_dir / "pids").glob("*.pid")]
        assert len(pids) == 3
        pids.append(int((tmp_path / "stray.pid").read_text()))  # started without spawn: no PID file
        assert all(Path(f"/proc/{pid}").exists() for pid in pids)
        assert len(namespaces_with_prefix(lab_prefix)) == 3
        Lab(prefix=lab_prefix, run_dir=run_dir).down()
        assert namespaces_with_prefix(lab_prefix) == []
        deadline = time.monotonic() + 5
        while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(Path(f"/proc/{pid}").exists() for pid in pids)
    finally:
        Lab(prefix=lab_prefix, run_dir=run_dir).down()


def test_the_command_line_brings_the_lab_up_reports_it_and_tears_it_down(lab_prefix, tmp_path):
    base = [sys.executable, "-m", "lab", "--prefix", lab_prefix, "--run-dir", str(tmp_path / "cli")]
    try:
        up = subprocess.run([*base, "up", "--backend", "nft-nfqueue"], cwd=REPO, capture_output=True, text=True,
                            timeout=60, check=True)
        assert json.loads(up.stdout)["up"] is True
        impair = subprocess.run([*base, "impair", "--forward", "delay=5ms,loss=1%", "--reverse", "delay=5ms"],
                                cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(impair.stdout) == {"primary>remote": "delay=5ms,loss=1%", "remote>primary": "delay=5ms"}
        status = json.loads(subprocess.run([*base, "status"], cwd=REPO, capture_output=True, text=True,
                                           check=True).stdout)
        inside = subprocess.run([*base, "exec", "remote", "--", "ip", "-4", "-br", "addr", "show", "fzs2"], cwd=REPO,
                                capture_output=True, text=True, timeout=30)
        assert inside.returncode == 0 and "198.18.2.2/24" in inside.stdout
        assert status["sites"]["remote"]["mgmt"] == "198.18.2.10" and len(status["processes"]) == 2
        assert set(status["emulators"]) == {"emu-primary-remote", "emu-remote-primary"}
    finally:
        down = subprocess.run([*base, "down"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert down.returncode == 0 and namespaces_with_prefix(lab_prefix) == []
    assert os.listdir(tmp_path / "cli" / "pids") == []


def test_the_lab_command_reports_a_lab_that_is_not_up_in_plain_lines():
    status = subprocess.run([sys.executable, "-m", "lab", "--prefix", "fztnone", "status"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["up"] is False
    assert status.stdout.endswith("}\n")


def test_two_labs_with_different_prefixes_keep_separate_run_dirs_and_processes(monkeypatch, tmp_path):
    monkeypatch.setenv("FLEXZONE_LAB_DIR", str(tmp_path))
    first, second = Lab(prefix=f"fzta{os.getpid()}"), Lab(prefix=f"fztb{os.getpid()}")
    try:
        assert first.run_dir == tmp_path / first.prefix and second.run_dir == tmp_path / second.prefix
        first.up(2, backend=FallbackBackend.name)
        first.impair("primary", "remote", LinkProfile.symmetric("d", Impairment(delay_ms=1)))
        second.up(2)
        second.down()
        assert first.procs.pid("emu-primary-remote") is not None and first.is_up
    finally:
        first.down()
        second.down()
    assert namespaces_with_prefix(first.prefix) == namespaces_with_prefix(second.prefix) == []

"""Reusable measurements across the lab: ping (RTT and loss), iperf3 bulk TCP, and the Mathis model.

Each function runs real tools inside the lab's namespaces and returns plain dataclasses, so the
self-check and the experiments share them.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from lab.testbed import Lab

MSS = 1448  # 1500-byte MTU minus IP, TCP and the timestamp option
MATHIS_C = math.sqrt(1.5)
# ping runs at the emulator's real-time priority (lab/emulator.py): starved of CPU by other work on the host,
# it reads its replies late and its socket drops them, which it would count as WAN loss (3.3 % measured
# for 2 % configured with the host's two cores busy). chrt is util-linux; root, as every lab command is.
REALTIME = ["chrt", "--fifo", "10"]


def mathis_mbit(rtt_ms: float, loss: float, mss: int = MSS, c: float = MATHIS_C) -> float:
    """Mathis et al. (1997) loss-based TCP throughput: MSS/RTT * C/sqrt(p), in Mbit/s (inf if p = 0)."""
    if loss <= 0 or rtt_ms <= 0:
        return math.inf
    return mss * 8 / (rtt_ms / 1000.0) * c / math.sqrt(loss) / 1e6


@dataclass
class PingResult:
    """What ping saw: probes sent/answered and the round-trip times (ms) of the answered ones."""

    sent: int
    received: int
    rtt_min: float
    rtt_avg: float
    rtt_median: float
    rtt_max: float

    @property
    def loss(self) -> float:
        return 1.0 - self.received / self.sent if self.sent else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "loss": self.loss}


_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) received")
_TIME = re.compile(r" time=([0-9.]+) ms")


def ping(lab: Lab, site: str, addr: str, *, count: int, interval: float, size: int = 56,
         expected_rtt_ms: float = 200.0) -> PingResult:
    """Ping addr from a site: count probes every interval seconds, whatever comes back.

    iputils ping stops sending while too many probes are unanswered, so at short intervals over a long
    RTT it would silently slow down; a preload of RTT/interval probes keeps the pace (as root). No -w:
    with a deadline, -c counts replies instead of probes and the loss figure would be biased.
    """
    in_flight = expected_rtt_ms / 1000.0 / interval
    # A preload is sent as one burst, which a FIFO delay stage then holds back together: use it only
    # when ping would otherwise fall behind (it keeps pace by itself up to a few probes in flight).
    preload = 1 if in_flight <= 3 else min(65536, math.ceil((expected_rtt_ms + 50) / 1000.0 / interval))
    limit = count * interval + expected_rtt_ms / 1000.0 + 15
    proc = lab.run(site, [*REALTIME, "ping", "-n", "-c", str(count), "-i", f"{interval:g}", "-l", str(preload),
                          "-s", str(size), "-W", "2", addr], check=False, timeout=limit)
    summary = _SUMMARY.search(proc.stdout)
    if not summary:
        raise RuntimeError(f"ping {addr} from {site} printed no summary: {proc.stdout[-300:]} {proc.stderr}")
    times = [float(t) for t in _TIME.findall(proc.stdout)]
    if not times:
        times = [math.nan]
    return PingResult(int(summary.group(1)), int(summary.group(2)), min(times), statistics.fmean(times),
                      statistics.median(times), max(times))


@dataclass
class TcpResult:
    """One iperf3 bulk transfer: goodput after the omitted warm-up, retransmits and the sender's RTT."""

    congestion_control: str
    seconds: float
    omit: float
    mbit: float
    retransmits: int
    mean_rtt_ms: float
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def iperf3(lab: Lab, client: str, server: str, *, seconds: float, omit: float = 0, cc: str = "reno",
           port: int = 5201) -> TcpResult:
    """Bulk TCP from client site to server site with a per-socket congestion control (`iperf3 -C`).

    The congestion control is set per socket because a namespace may not be allowed to make a
    non-default one (cubic here) its default.
    """
    server_site = lab.site(server)
    name = f"iperf3-{server}-{port}"
    lab.stop(name)
    lab.spawn(name, server, ["iperf3", "-s", "-1", "-B", server_site.addr, "-p", str(port)])
    try:
        lab.wait_listening(server, port)
        proc = lab.run(client, ["iperf3", "-c", server_site.addr, "-B", lab.site(client).addr, "-p", str(port),
                                "-C", cc, "-t", f"{seconds:g}", "-O", f"{omit:g}", "-J", "--connect-timeout", "5000"],
                       check=False, timeout=seconds + omit + 60)
    finally:
        lab.stop(name)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(f"iperf3 printed no JSON: {proc.stdout[-300:]} {proc.stderr[-300:]}") from None
    if "error" in report:
        raise RuntimeError(f"iperf3: {report['error']}")
    sent = report["end"]["sum_sent"]
    streams = report["end"]["streams"]
    mean_rtt = streams[0]["sender"].get("mean_rtt", 0) / 1000.0 if streams else math.nan
    used_cc = report["end"].get("sender_tcp_congestion", cc)
    return TcpResult(used_cc, seconds, omit, sent["bits_per_second"] / 1e6, sent.get("retransmits", 0), mean_rtt,
                     sent["bytes"])

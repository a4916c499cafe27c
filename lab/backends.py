"""Impairment backends and the probe that chooses one.

Both backends act in the WAN namespace on one `Hop` (one direction between two sites) at a time:

* `TcNetemBackend` - kernels with sch_netem. netem only shapes egress, so the hop src -> dst is shaped
  on the WAN's veth towards dst: an htb root there has one class per source site (selected by a u32
  match on the source subnet) whose leaf is the netem qdisc. The htb class carries the rate; netem's
  `limit` is raised to 1.5 x the bandwidth-delay product (its default of 1000 packets tail-drops fast
  long-delay flows and corrupts loss and throughput figures).
* `FallbackBackend` - kernels without sch_netem (this machine). Independent loss is an nft
  `numgen random` rule in the forward hook; delay, jitter and bursty loss are the userspace NFQUEUE
  emulator (`lab.emulator`) fed by `iptables -j NFQUEUE` (the nft `queue` statement needs
  CONFIG_NFT_QUEUE, often absent); rate is the same htb tree with a byte-limited fifo leaf.

Everything lives inside the WAN namespace, so deleting it removes every rule and qdisc.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.procs import ProcessTable
from lab.profiles import Impairment
from lab.runner import CommandError, Runner

NFT_TABLE = "fzlab"
UNLIMITED = "10gbit"
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Hop:
    """One direction between two sites as the WAN namespace sees it: in on `iif`, out on `oif`."""

    src: str
    dst: str
    src_index: int
    dst_index: int
    iif: str
    oif: str
    src_net: str

    @property
    def name(self) -> str:
        return f"{self.src}>{self.dst}"

    @property
    def classid(self) -> str:
        return f"1:{0x10 + self.src_index:x}"

    @property
    def queue_num(self) -> int:
        return self.src_index * 256 + self.dst_index


@dataclass
class Health:
    """Whether the impairment machinery itself behaved during a measurement window."""

    valid: bool = True
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def flag(self, reason: str) -> None:
        self.valid = False
        self.reasons.append(reason)

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "reasons": self.reasons, "details": self.details}


@dataclass(frozen=True)
class LatenessLimits:
    """When the delay emulator's lateness spoils a measurement.

    Lateness counts from the kernel's receive timestamp, so it includes waiting in the kernel queue for
    the emulator to wake up. A small shared VM is preempted now and then (a plain SCHED_FIFO sleep loop
    here wakes >1 ms late for ~1 % of wake-ups, up to ~5 ms; with other test suites running, 10-20 % of
    even a light ping stream left >1 ms late, 0.5-0.6 ms late on average), so scattered lateness is
    tolerated. An emulator that cannot keep up looks different: saturated by bulk TCP it released
    60-70 % of packets >1 ms late and 6-8 ms late on average, and a 300 ms stall shows in the maximum.
    Queue drops always spoil.
    """

    mean_ms: float = 1.0
    late_share: float = 0.25
    max_ms: float = 50.0


class Backend:
    """Applies impairments to hops inside the WAN namespace."""

    name: str

    def __init__(self, runner: Runner, wan_netns: str) -> None:
        self.runner = runner
        self.wan = wan_netns

    def tc(self, *args: str) -> None:
        self.runner.run(["tc", *args], netns=self.wan)

    def prepare(self, hops: list[Hop]) -> None:
        """Build the per-destination htb trees: one class and source filter per hop, unshaped."""
        for oif in sorted({hop.oif for hop in hops}):
            self.tc("qdisc", "replace", "dev", oif, "root", "handle", "1:", "htb", "default", "1")
            self.tc("class", "replace", "dev", oif, "parent", "1:", "classid", "1:1", "htb", "rate", UNLIMITED,
                    "quantum", "60000")
        for prio, hop in enumerate(hops, start=1):
            self.tc("class", "replace", "dev", hop.oif, "parent", "1:", "classid", hop.classid, "htb", "rate",
                    UNLIMITED, "quantum", "60000")
            self.tc("filter", "replace", "dev", hop.oif, "parent", "1:", "protocol", "ip", "prio", str(prio),
                    "u32", "match", "ip", "src", hop.src_net, "flowid", hop.classid)

    def shape(self, hop: Hop, imp: Impairment, leaf: list[str]) -> None:
        """Set the hop's htb class rate (or unlimited) and its leaf qdisc."""
        if imp.rate_mbit:
            burst = max(15_000, int(imp.rate_mbit * 125))  # >= one jiffy (1 ms) of bytes at the rate
            rate = [f"{imp.rate_mbit:g}mbit", "ceil", f"{imp.rate_mbit:g}mbit", "burst", f"{burst}b",
                    "cburst", f"{burst}b"]
        else:
            rate = [UNLIMITED]
        self.tc("class", "replace", "dev", hop.oif, "parent", "1:", "classid", hop.classid, "htb", "rate", *rate,
                "quantum", "60000")
        self.tc("qdisc", "replace", "dev", hop.oif, "parent", hop.classid, "handle", f"{hop.classid[2:]}:", *leaf)

    def apply(self, hop: Hop, imp: Impairment) -> None:
        """Make the hop behave as imp says, replacing whatever it did before."""
        raise NotImplementedError

    def begin_window(self) -> None:
        """Start a measurement window (reset the health counters)."""

    def end_window(self) -> Health:
        """Close the window and say whether the emulation stayed faithful in it."""
        return Health()

    def counters(self) -> dict[str, dict[str, int]]:
        """Per hop: packets seen and dropped by the loss stage, when the backend can tell."""
        return {}

    def shutdown(self) -> None:
        """Stop anything the backend runs outside the kernel."""


def netem_limit(imp: Impairment, mtu: int = 1500) -> int:
    """Packets netem may hold: 1.5 x BDP at the hop's rate (10 Gbit/s when unlimited), at least 1000."""
    rate_bps = (imp.rate_mbit or 10_000) * 1e6
    delay_s = (imp.delay_ms + imp.jitter_ms) / 1000.0
    return max(1000, math.ceil(1.5 * rate_bps * delay_s / (8 * mtu)))


def render_netem(imp: Impairment) -> list[str]:
    """The netem qdisc arguments for an impairment (after `tc qdisc ... parent X handle Y:`)."""
    args = ["netem", "limit", str(netem_limit(imp))]
    if imp.delay_ms or imp.jitter_ms:
        args += ["delay", f"{imp.delay_ms:g}ms"]
        if imp.jitter_ms:
            args += [f"{imp.jitter_ms:g}ms"]
    if imp.burst:
        b = imp.burst
        args += ["loss", "gemodel", f"{b.p * 100:g}%", f"{b.r * 100:g}%", f"{b.loss_bad * 100:g}%",
                 f"{b.loss_good * 100:g}%"]
    elif imp.loss_pct:
        args += ["loss", "random", f"{imp.loss_pct:g}%"]
    return args


def fifo_leaf(imp: Impairment) -> list[str]:
    """Leaf queue for the fallback: bytes for `buffer_ms` at the rate, or 10 000 full-size packets unlimited.

    Always a bfifo: `tc qdisc replace` can change a leaf's parameters but not its kind under the same handle.
    """
    if imp.rate_mbit:
        return ["bfifo", "limit", str(max(3000, int(imp.rate_mbit * 125 * imp.buffer_ms)))]
    return ["bfifo", "limit", "15000000"]


class TcNetemBackend(Backend):
    """sch_netem on the WAN egress veths, one htb class + netem leaf per hop."""

    name = "tc-netem"

    def apply(self, hop: Hop, imp: Impairment) -> None:
        self.shape(hop, imp, render_netem(imp))


class FallbackBackend(Backend):
    """nft numgen loss + NFQUEUE userspace delay + htb rate, for kernels without sch_netem."""

    name = "nft-nfqueue"

    def __init__(self, runner: Runner, wan_netns: str, procs: ProcessTable, run_dir: Path,
                 python: str = sys.executable) -> None:
        super().__init__(runner, wan_netns)
        self.procs = procs
        self.run_dir = run_dir
        self.python = python
        self.max_held = 50_000  # packets one emulator may hold; beyond that it drops and the run is spoiled
        self.loss: dict[Hop, float] = {}
        self.kernel_before: dict[int, dict[str, int]] = {}
        self.window_started = 0.0

    def prepare(self, hops: list[Hop]) -> None:
        super().prepare(hops)
        self.loss = {hop: 0.0 for hop in hops}
        self._write_nft()

    def apply(self, hop: Hop, imp: Impairment) -> None:
        self.shape(hop, imp, fifo_leaf(imp))
        self.loss[hop] = imp.loss_pct
        self._write_nft()
        if imp.needs_delay_stage:
            self._start_or_update_emulator(hop, imp)
        else:
            self._stop_emulator(hop)

    # -- loss: one nft table, rewritten atomically on every change ------------------------------------
    def _write_nft(self) -> None:
        rules = []
        for hop, pct in sorted(self.loss.items(), key=lambda item: item[0].name):
            match = f'iifname "{hop.iif}" oifname "{hop.oif}"'
            rules.append(f'{match} counter comment "{hop.name} seen"')
            if pct:
                threshold = round(pct * 10_000)  # parts per million
                rules.append(f'{match} numgen random mod 1000000 < {threshold} counter drop comment "{hop.name} lost"')
        body = "\n".join(f"    {rule}" for rule in rules)
        script = (
            f"table inet {NFT_TABLE} {{}}\n"
            f"delete table inet {NFT_TABLE}\n"
            f"table inet {NFT_TABLE} {{\n  chain impair {{\n"
            # Priority -10 runs before iptables' filter FORWARD (0), so lost packets are never queued.
            f"    type filter hook forward priority -10; policy accept;\n{body}\n  }}\n}}\n"
        )
        self.runner.run(["nft", "-f", "-"], netns=self.wan, input=script)

    def counters(self) -> dict[str, dict[str, int]]:
        out = self.runner.run(["nft", "-j", "list", "table", "inet", NFT_TABLE], netns=self.wan).stdout
        result: dict[str, dict[str, int]] = {}
        for item in json.loads(out)["nftables"]:
            rule = item.get("rule")
            if not rule or "comment" not in rule:
                continue
            hop_name, kind = rule["comment"].rsplit(" ", 1)
            packets = next((e["counter"]["packets"] for e in rule["expr"] if "counter" in e), 0)
            result.setdefault(hop_name, {"seen": 0, "lost": 0})[kind] = packets
        return result

    # -- delay: one emulator process per hop ---------------------------------------------------------
    def _paths(self, hop: Hop) -> tuple[str, Path, Path]:
        tag = f"emu-{hop.src}-{hop.dst}"
        return tag, self.run_dir / f"{tag}.json", self.run_dir / f"{tag}.stats.json"

    def _nfqueue_rule(self, hop: Hop) -> list[str]:
        return ["FORWARD", "-i", hop.iif, "-o", hop.oif, "-j", "NFQUEUE", "--queue-num", str(hop.queue_num)]

    def _start_or_update_emulator(self, hop: Hop, imp: Impairment) -> None:
        tag, config, stats = self._paths(hop)
        config.write_text(json.dumps(imp.to_dict()))
        if self.procs.pid(tag) is not None:
            previous = self._stats(stats)
            self.procs.signal(tag, signal.SIGHUP)
            current = self._wait_for_dump(stats, previous)
            if not current:
                raise RuntimeError(f"delay emulator for {hop.name} did not answer a reload within 5 s "
                                   f"(stopped, or starved of CPU)")
            wanted = json.loads(json.dumps(imp.to_dict()))  # as the emulator's JSON gives it back
            if current.get("impairment") != wanted:
                # Measuring on would record one profile while the hop emulates another.
                raise RuntimeError(f"delay emulator for {hop.name} kept {current.get('impairment')} instead of "
                                   f"{wanted}: {current.get('reload_error') or 'no reason given'}")
            return
        stats.unlink(missing_ok=True)
        self.procs.start(tag, [self.python, "-m", "lab.emulator", "--queue", str(hop.queue_num),
                               "--config", str(config), "--stats", str(stats), "--max-held", str(self.max_held)],
                        netns=self.wan, cwd=REPO_ROOT)
        deadline = time.monotonic() + 10
        while not stats.exists():
            if time.monotonic() > deadline or self.procs.pid(tag) is None:
                log = (self.procs.log_dir / f"{tag}.log").read_text(errors="replace")[-2000:]
                self.procs.stop(tag)
                raise RuntimeError(f"delay emulator for {hop.name} did not start:\n{log}")
            time.sleep(0.02)
        # Only now divert traffic to the queue: without --queue-bypass an unbound queue drops packets.
        if not self.runner.ok(["iptables", "-C", *self._nfqueue_rule(hop)], netns=self.wan):
            self.runner.run(["iptables", "-A", *self._nfqueue_rule(hop)], netns=self.wan)

    def _stop_emulator(self, hop: Hop) -> None:
        tag, _config, stats = self._paths(hop)
        while self.runner.ok(["iptables", "-D", *self._nfqueue_rule(hop)], netns=self.wan):
            pass
        self.procs.stop(tag)
        # A stopped emulator's last stats would otherwise be read as a dead emulator's by the next
        # health window, spoiling every measurement taken after a clear().
        stats.unlink(missing_ok=True)

    def emulator_hops(self) -> list[Hop]:
        return [hop for hop in self.loss if self.procs.pid(self._paths(hop)[0]) is not None]

    def shutdown(self) -> None:
        for hop in list(self.loss):
            self._stop_emulator(hop)

    # -- health -----------------------------------------------------------------------------------
    @staticmethod
    def _stats(path: Path) -> dict[str, Any]:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return {}

    def _wait_for_dump(self, path: Path, previous: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = self._stats(path)
            if current.get("dump_seq", 0) > previous.get("dump_seq", 0):
                return current
            time.sleep(0.01)
        return {}

    def kernel_queue_counters(self) -> dict[int, dict[str, int]]:
        """Per queue: the kernel's drop counters from /proc/net/netfilter/nfnetlink_queue (WAN netns)."""
        proc = self.runner.run(["cat", "/proc/net/netfilter/nfnetlink_queue"], netns=self.wan, check=False)
        counters = {}
        for line in proc.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 7:
                # queue_number peer_portid queue_total copy_mode copy_range queue_dropped user_dropped ...
                counters[int(fields[0])] = {"queue_total": int(fields[2]), "queue_dropped": int(fields[5]),
                                            "user_dropped": int(fields[6])}
        return counters

    def begin_window(self) -> None:
        for hop in self.emulator_hops():
            tag, _config, stats = self._paths(hop)
            previous = self._stats(stats)
            self.procs.signal(tag, signal.SIGUSR1)
            self._wait_for_dump(stats, previous)
        self.kernel_before = self.kernel_queue_counters()
        self.window_started = time.time()

    def end_window(self, limits: LatenessLimits | None = None) -> Health:
        limits = limits or LatenessLimits()
        health = Health()
        kernel_after = self.kernel_queue_counters()
        for hop in self.loss:
            tag, _config, stats_path = self._paths(hop)
            if self.procs.pid(tag) is None:
                if stats_path.exists():
                    health.flag(f"{hop.name}: delay emulator is not running")
                continue
            previous = self._stats(stats_path)
            self.procs.signal(tag, signal.SIGUSR2)
            stats = self._wait_for_dump(stats_path, previous)
            window = stats.get("window", {})
            if not stats or window.get("started", 0) < self.window_started - 1:
                health.flag(f"{hop.name}: no fresh statistics from the delay emulator")
                continue
            before = self.kernel_before.get(hop.queue_num, {"queue_dropped": 0, "user_dropped": 0})
            after = kernel_after.get(hop.queue_num, before)
            kernel_drops = (after["queue_dropped"] - before["queue_dropped"]
                            + after["user_dropped"] - before["user_dropped"])
            health.details[hop.name] = {**window, "kernel_queue_drops": kernel_drops}
            released = max(1, window["released"])
            late_share = window["late_over_threshold"] / released
            if window["late_ms_mean"] > limits.mean_ms:
                health.flag(f"{hop.name}: packets left on average {window['late_ms_mean']:.2f} ms late "
                            f"(limit {limits.mean_ms} ms)")
            if late_share > limits.late_share:
                health.flag(f"{hop.name}: {late_share:.1%} of packets left more than "
                            f"{stats['late_threshold_ms']} ms late (limit {limits.late_share:.0%})")
            if window["late_ms_max"] > limits.max_ms:
                health.flag(f"{hop.name}: a packet left {window['late_ms_max']:.1f} ms late (limit {limits.max_ms} ms)")
            if window["dropped_queue"]:
                health.flag(f"{hop.name}: emulator queue full, {window['dropped_queue']} packets dropped "
                            f"(held at most {window['max_held']})")
            if kernel_drops:
                health.flag(f"{hop.name}: kernel dropped {kernel_drops} packets on nfqueue {hop.queue_num}")
        return health


@dataclass
class Capabilities:
    """What the probe found the kernel and tools can do."""

    netem: bool
    htb: bool
    tbf: bool
    nft_numgen: bool
    iptables_nfqueue: bool
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def backend(self) -> str:
        if self.netem and self.htb:
            return TcNetemBackend.name
        if self.nft_numgen and self.iptables_nfqueue and self.htb:
            return FallbackBackend.name
        raise RuntimeError(f"no usable impairment backend on this host: {self.errors}")


def probe(runner: Runner, netns: str) -> Capabilities:
    """Try each feature in a throwaway namespace (deleted afterwards) and report what works."""
    runner.ok(["ip", "netns", "del", netns])
    runner.run(["ip", "netns", "add", netns])
    errors: dict[str, str] = {}

    def attempt(feature: str, argv: list[str], input: str | None = None) -> bool:
        proc = runner.run(argv, netns=netns, check=False, input=input)
        if proc.returncode != 0:
            errors[feature] = proc.stderr.strip()
        return proc.returncode == 0

    try:
        runner.run(["ip", "link", "add", "p0", "type", "veth", "peer", "name", "p1"], netns=netns)
        caps = Capabilities(
            netem=attempt("netem", ["tc", "qdisc", "add", "dev", "p0", "root", "netem", "delay", "1ms"]),
            tbf=attempt("tbf", ["tc", "qdisc", "replace", "dev", "p0", "root", "tbf", "rate", "10mbit", "burst",
                                "10kb", "latency", "50ms"]),
            htb=attempt("htb", ["tc", "qdisc", "replace", "dev", "p1", "root", "handle", "1:", "htb"]),
            nft_numgen=attempt("nft_numgen", ["nft", "-f", "-"], input=(
                "table inet probe {\n chain c {\n  type filter hook forward priority -10;\n"
                "  numgen random mod 100 < 1 counter drop\n }\n}\n")),
            iptables_nfqueue=attempt("iptables_nfqueue", ["iptables", "-A", "FORWARD", "-i", "p0", "-j", "NFQUEUE",
                                                          "--queue-num", "9"]),
            errors=errors,
        )
    except (CommandError, OSError) as exc:
        errors["setup"] = str(exc)
        caps = Capabilities(False, False, False, False, False, errors)
    finally:
        runner.ok(["ip", "netns", "del", netns])
    return caps

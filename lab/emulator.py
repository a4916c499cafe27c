"""The userspace delay stage for kernels without sch_netem: one process per direction of a site pair.

iptables in the WAN namespace sends the direction's forwarded packets to an NFQUEUE (without
--queue-bypass, so a dead emulator drops traffic instead of silently removing the delay). This process
holds each packet until arrival + delay (+ uniform jitter), never letting a packet overtake an earlier
one (FIFO, like a real link), optionally drops packets by a Gilbert-Elliott burst model, and bounds how
many packets it holds. Independent loss and rate limits stay in the kernel (nft numgen, htb).

It reports its own health so a run it spoiled can be thrown away: how late it released packets
against their schedule (counted from the kernel's receive timestamp, so time spent waiting in the
kernel queue for this process counts too), the most it held, the packets it dropped because its queue
was full. Stats
are written atomically as JSON to --stats every second, on SIGUSR2 (dump now), on SIGUSR1 (dump,
then start a new measurement window) and on exit. SIGHUP re-reads --config (the impairment) without
unbinding the queue, so a profile can change while traffic flows.

Run: python -m lab.emulator --queue 257 --config imp.json --stats stats.json
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import select
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from lab.nfqueue import NF_ACCEPT, NF_DROP, NfQueue, enable_receive_timestamps
from lab.profiles import GilbertElliott, Impairment

LATE_THRESHOLD_MS = 1.0


@dataclass
class Window:
    """Counters for one measurement window (reset by SIGUSR1)."""

    started: float
    seen: int = 0
    released: int = 0
    dropped_burst: int = 0
    dropped_queue: int = 0
    max_held: int = 0
    late_ms_max: float = 0.0
    late_ms_sum: float = 0.0
    late_over_threshold: int = 0
    ingress_ms_max: float = 0.0
    ingress_ms_sum: float = 0.0


def _merge(a: Window, b: Window) -> Window:
    """Counters of two consecutive windows as one."""
    return Window(started=a.started, seen=a.seen + b.seen, released=a.released + b.released,
                  dropped_burst=a.dropped_burst + b.dropped_burst, dropped_queue=a.dropped_queue + b.dropped_queue,
                  max_held=max(a.max_held, b.max_held), late_ms_max=max(a.late_ms_max, b.late_ms_max),
                  late_ms_sum=a.late_ms_sum + b.late_ms_sum,
                  late_over_threshold=a.late_over_threshold + b.late_over_threshold,
                  ingress_ms_max=max(a.ingress_ms_max, b.ingress_ms_max),
                  ingress_ms_sum=a.ingress_ms_sum + b.ingress_ms_sum)


class BurstLoss:
    """Gilbert-Elliott state machine, one step per packet."""

    def __init__(self, model: GilbertElliott, rng: random.Random) -> None:
        self.model = model
        self.rng = rng
        self.bad = False

    def lose(self) -> bool:
        m = self.model
        if self.bad:
            if self.rng.random() < m.r:
                self.bad = False
        elif self.rng.random() < m.p:
            self.bad = True
        return self.rng.random() < (m.loss_bad if self.bad else m.loss_good)


class DelayEmulator:
    """Holds packets of one NFQUEUE and releases them in order once their time has come."""

    def __init__(self, queue: NfQueue, impairment: Impairment, *, max_held: int, stats_path: Path,
                 seed: int | None = None) -> None:
        self.queue = queue
        self.max_held = max_held
        self.stats_path = stats_path
        self.rng = random.Random(seed)
        self.held: deque[tuple[float, int]] = deque()
        self.last_release = 0.0
        self.started = time.time()
        self.window = Window(started=self.started)
        self.closed = Window(started=self.started)
        self.dump_seq = 0
        self.running = True
        # Signals only record what they ask for (and wake the loop through `wakeup`); the loop does the work
        # between packets. A handler that dumped itself could run inside the loop's own dump, the two racing
        # over one temporary file (the emulator died, and its hop dropped every packet).
        self.requests: set[str] = set()
        self.wakeup: int | None = None
        self.reload: Callable[[], Impairment] | None = None
        self.reload_error = ""
        self.configure(impairment)

    def configure(self, impairment: Impairment) -> None:
        self.impairment = impairment
        self.delay = impairment.delay_ms / 1000.0
        self.jitter = impairment.jitter_ms / 1000.0
        self.burst = BurstLoss(impairment.burst, self.rng) if impairment.burst else None

    def admit(self, packet_id: int, now: float, arrival: float | None = None) -> None:
        """Judge and schedule one packet; `arrival` (monotonic) is when the kernel received it, if known.

        Scheduling from the kernel's arrival time keeps the time a packet spent in the kernel queue
        (waiting for this process to wake up or catch up) inside the configured delay instead of on top
        of it; how long that was is reported as the ingress lag.
        """
        w = self.window
        arrival = now if arrival is None or arrival > now else arrival
        ingress = (now - arrival) * 1000.0
        w.seen += 1
        w.ingress_ms_sum += ingress
        if ingress > w.ingress_ms_max:
            w.ingress_ms_max = ingress
        if self.burst is not None and self.burst.lose():
            self.queue.verdict(packet_id, NF_DROP)
            w.dropped_burst += 1
            return
        held = self.held
        if len(held) >= self.max_held:
            self.queue.verdict(packet_id, NF_DROP)
            w.dropped_queue += 1
            return
        due = arrival + self.delay
        if self.jitter:
            due += self.rng.uniform(-self.jitter, self.jitter)
        # FIFO: a packet may not leave before the one queued ahead of it (a link does not reorder).
        if due < self.last_release:
            due = self.last_release
        self.last_release = due
        held.append((due, packet_id))
        if len(held) > w.max_held:
            w.max_held = len(held)

    def release_due(self) -> None:
        now = time.monotonic()
        last_id = -1
        held = self.held
        count = 0
        worst = 0.0
        late_sum = 0.0
        late_n = 0
        while held and held[0][0] <= now:
            due, last_id = held.popleft()
            late = (now - due) * 1000.0
            late_sum += late
            if late > worst:
                worst = late
            if late > LATE_THRESHOLD_MS:
                late_n += 1
            count += 1
        if last_id < 0:
            return
        # One batch verdict accepts every packet up to last_id: valid because release order is FIFO
        # and packets dropped on arrival already got their own verdict.
        self.queue.verdict_batch(last_id, NF_ACCEPT)
        w = self.window
        w.released += count
        w.late_ms_sum += late_sum
        w.late_over_threshold += late_n
        if worst > w.late_ms_max:
            w.late_ms_max = worst

    @property
    def total(self) -> Window:
        """Counters since start: the closed windows plus the current one."""
        return _merge(self.closed, self.window)

    def request(self, what: str) -> None:
        """Ask the loop for `stop`, `reload`, `window` or `dump`; safe from a signal handler."""
        self.requests.add(what)

    def serve_requests(self) -> None:
        """Do what signals asked for since the last turn, each once, in a fixed order."""
        asked, self.requests = self.requests, set()
        if "reload" in asked and self.reload is not None:
            try:
                self.configure(self.reload())
                self.reload_error = ""
            except (OSError, ValueError, KeyError, TypeError) as exc:
                # Keep emulating the last good impairment; the stats say why, and the backend, which compares
                # the impairment there with the one it asked for, refuses to measure under the wrong one.
                self.reload_error = f"{type(exc).__name__}: {exc}"
                print(f"lab.emulator: kept the previous impairment: {exc}", file=sys.stderr, flush=True)
        if "window" in asked:
            self.new_window()
        if asked & {"reload", "dump"}:
            self.dump()
        if "stop" in asked:
            self.running = False

    def run(self) -> None:
        next_dump = time.monotonic() + 1.0
        fd = self.queue.fileno()
        watched = [fd] if self.wakeup is None else [fd, self.wakeup]
        while self.running:
            now = time.monotonic()
            timeout = min(next_dump, self.held[0][0] if self.held else next_dump) - now
            # select() sleeps with microsecond resolution; poll()/epoll() would round up to whole ms.
            readable, _, _ = select.select(watched, [], [], max(0.0, timeout))
            if self.wakeup is not None and self.wakeup in readable:
                _drain(self.wakeup)
            if self.requests:
                self.serve_requests()
                if not self.running:
                    break
            if fd in readable:
                packets = self.queue.receive(256)
                now = time.monotonic()
                realtime_offset = time.time() - now
                admit = self.admit
                for packet_id, stamp in packets:
                    admit(packet_id, now, stamp - realtime_offset if stamp else None)
            self.release_due()
            if time.monotonic() >= next_dump:
                self.dump()
                next_dump = time.monotonic() + 1.0
        self.dump()

    def snapshot(self) -> dict[str, object]:
        def view(w: Window) -> dict[str, object]:
            data = asdict(w)
            data["late_ms_mean"] = w.late_ms_sum / w.released if w.released else 0.0
            data["ingress_ms_mean"] = w.ingress_ms_sum / w.seen if w.seen else 0.0
            data["seconds"] = time.time() - w.started
            return data

        return {
            "pid": os.getpid(),
            "queue": self.queue.queue_num,
            "impairment": self.impairment.to_dict(),
            "reload_error": self.reload_error,
            "max_held_limit": self.max_held,
            "held_now": len(self.held),
            "dump_seq": self.dump_seq,
            "late_threshold_ms": LATE_THRESHOLD_MS,
            "window": view(self.window),
            "total": view(self.total),
        }

    def dump(self) -> None:
        self.dump_seq += 1
        tmp = self.stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.snapshot(), indent=1))
        os.replace(tmp, self.stats_path)

    def new_window(self) -> None:
        self.dump()
        self.closed = _merge(self.closed, self.window)
        self.window = Window(started=time.time())


def _asked(emulator: DelayEmulator, what: str, signum: int, frame: object) -> None:
    emulator.request(what)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _realtime() -> None:
    """Ask for SCHED_FIFO so other work on a small host does not delay releases (best effort).

    The process sleeps in select() between packets, and the kernel's RT throttling
    (sched_rt_runtime_us) keeps a flood from starving the rest of the machine.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.emulator", description=__doc__.splitlines()[0])
    parser.add_argument("--queue", type=int, required=True)
    parser.add_argument("--config", type=Path, required=True, help="JSON impairment (lab.profiles.Impairment)")
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--max-held", type=int, default=50_000, help="packets held at most (bounded queue)")
    parser.add_argument("--kernel-max-len", type=int, default=65_536, help="kernel-side queue length")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--no-realtime", action="store_true", help="do not ask for SCHED_FIFO priority")
    args = parser.parse_args(argv)
    if not args.no_realtime:
        _realtime()
    # Held packets are plain tuples without cycles; a collector pause would release them late.
    gc.disable()

    def load() -> Impairment:
        return Impairment.from_dict(json.loads(args.config.read_text()))

    stamps = enable_receive_timestamps()
    with stamps, NfQueue(args.queue, max_len=args.kernel_max_len, copy_range=0) as queue:
        emulator = DelayEmulator(queue, load(), max_held=args.max_held, stats_path=args.stats, seed=args.seed)
        emulator.reload = load
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        # The C-level handler writes a byte here, so a select() already asleep returns at once.
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        emulator.wakeup = wake_read
        for signum, what in SIGNALS.items():
            signal.signal(signum, functools.partial(_asked, emulator, what))
        emulator.dump()
        emulator.run()
    return 0


SIGNALS = {signal.SIGTERM: "stop", signal.SIGINT: "stop", signal.SIGHUP: "reload", signal.SIGUSR1: "window",
           signal.SIGUSR2: "dump"}


if __name__ == "__main__":
    sys.exit(main())

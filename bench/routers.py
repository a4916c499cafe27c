"""Router benchmark: per platform, the cold and warm time of an add, and how much of it is the router.

``main()`` starts each platform's simulator in-process on a free loopback port with its realistic
timing profile (``--scale`` shrinks it), then with the platform's driver measures:

* cold op: connect and log in, add one link, save the configuration (what a first operation costs);
* warm op: add another link and save on the already open session (what a queued operation costs);
* router share: the part of the cold op the driver spent waiting on the router (login included),
  and the part that was the device's own think time (the simulator's timing-profile delays).

Then, for the FCIP switches on a fabric of real size (``--fabric-size`` other hosts' zones, aliases
among their members): per add, list and remove, the show commands the driver sent, the bytes they
returned and the time they took, beside the reads the drivers made before they read only what a
change needs (the whole MDS running-config, FOS's tunnel detail), replayed on the same switch right
after the operation. The before op time is estimated as the op time with the one set of reads
swapped for the other.

Run with ``python -m bench routers``.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from routers.drivers import DRIVERS
from routers.drivers.base import LinkSpec, RouterError, RouterTarget
from routers.platforms import Platform, Transport
from simulators import PLATFORM_MODULES, available_platforms
from simulators.server import SimRouter

USERNAME, PASSWORD = "admin", "bench-password"
FCIP = ("brocade_fos", "cisco_mds")
# What the FCIP drivers read per operation until they read only what a change needs (their code at
# commit 037d2de): a fresh add, a listing, a remove of that link. A snapshot, kept as the baseline of the
# before figures; it does not follow later changes of the drivers.
BEFORE_READS = {
    "brocade_fos": {"add": ["cfgtransshow", "cfgshow", "cfgtransshow", "cfgshow"],
                    "list": ["portcfgshow fciptunnel all -c", "cfgshow"],
                    "remove": ["portcfgshow fciptunnel all -c", "cfgtransshow", "cfgshow", "cfgtransshow", "cfgshow"]},
    "cisco_mds": {"add": ["show zone status vsan 1", "show running-config"],
                  "list": ["show running-config"],
                  "remove": ["show zone status vsan 1", "show running-config"]},
}


def bench_specs(platform: str) -> tuple[LinkSpec, LinkSpec]:
    """Two distinct links the platform accepts (FCIP platforms need a VE/interface, local IP and WWN)."""
    if platform in ("brocade_fos", "cisco_mds"):
        port = 24 if platform == "brocade_fos" else 10
        return (
            LinkSpec(port, 1, "192.0.2.20", local_ip="192.0.2.10", wwn="50:00:00:00:00:00:00:01",
                     initiators=("10:00:00:00:00:00:00:01",)),
            LinkSpec(port + 1, 2, "192.0.2.21", local_ip="192.0.2.11", wwn="50:00:00:00:00:00:00:02",
                     initiators=("10:00:00:00:00:00:00:02",)),
        )
    return LinkSpec(3, 17, "192.0.2.20"), LinkSpec(4, 18, "192.0.2.21")


@dataclass
class Result:
    platform: str
    transport: str
    cold: float = 0.0
    warm: float = 0.0
    router_wait: float = 0.0
    device_think: float = 0.0
    error: str = ""


@dataclass
class ReadRow:
    """One operation's reads on a fabric of real size: now, and as the drivers read before."""

    platform: str
    operation: str
    reads: int
    kbytes: float
    read_s: float
    op_s: float
    before_reads: int
    before_kbytes: float
    before_read_s: float

    @property
    def before_op_s(self) -> float:
        return self.op_s - self.read_s + self.before_read_s


def serve(platform: str, scale: float, fabric_size: int = 0):
    """A simulator of `platform` on a free loopback port and a driver for it (not yet connected)."""
    driver_cls = DRIVERS[Platform(platform)]
    transports = getattr(driver_cls, "device_types", {Transport.TELNET: ""})
    transport = Transport.SSH if Transport.SSH in transports else Transport.TELNET
    address = ("127.0.0.1", 0)
    sim = SimRouter(platform, username=USERNAME, password=PASSWORD, scale=scale, fabric_size=fabric_size,
                    telnet=address if transport == Transport.TELNET else None,
                    ssh=address if transport == Transport.SSH else None)
    host, port = sim.start()[transport.value]
    target = RouterTarget(Platform(platform), host, port, transport, USERNAME, PASSWORD, name=f"bench-{platform}",
                          connect_timeout=60.0, command_timeout=120.0,
                          host_key=sim.host_key_line() if transport == Transport.SSH else "")
    return sim, driver_cls(target), transport


def measure(platform: str, scale: float, fabric_size: int = 0) -> Result:
    sim, driver, transport = serve(platform, scale, fabric_size if platform in FCIP else 0)
    result = Result(platform, transport.value)
    first, second = bench_specs(platform)
    try:
        start = time.monotonic()
        driver.connect()
        driver.add_link(first)
        driver.save_config()
        result.cold = time.monotonic() - start
        result.router_wait = driver.take_router_seconds()
        result.device_think = sim.think_seconds
        start = time.monotonic()
        driver.add_link(second)
        driver.save_config()
        result.warm = time.monotonic() - start
    except (RouterError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        driver.close()
        sim.stop()
    return result


def measure_reads(platform: str, scale: float, fabric_size: int) -> list[ReadRow]:
    """Add, list and remove one link on a fabric of `fabric_size` other zones: the driver's reads, and
    the reads of BEFORE_READS replayed on the same session right after each operation."""
    sim, driver, _transport = serve(platform, scale, fabric_size)
    spec = bench_specs(platform)[0]
    rows: list[ReadRow] = []
    try:
        driver.connect()
        driver.take_read_stats()
        for operation, run in (("add", lambda: driver.add_link(spec)), ("list", driver.list_links),
                               ("remove", lambda: driver.remove_link(spec))):
            started = time.monotonic()
            run()
            op_s = time.monotonic() - started
            now = driver.take_read_stats()
            before_bytes, started = 0, time.monotonic()
            for command in BEFORE_READS[platform][operation]:
                before_bytes += len(driver.read_command(command).encode())
            rows.append(ReadRow(platform, operation, now.reads, now.bytes / 1000, now.seconds, op_s,
                                len(BEFORE_READS[platform][operation]), before_bytes / 1000,
                                time.monotonic() - started))
    except (RouterError, ValueError) as exc:
        print(f"{platform}: reads not measured: {type(exc).__name__}: {exc}", flush=True)
    finally:
        driver.close()
        sim.stop()
    return rows


def format_reads(rows: list[ReadRow], fabric_size: int) -> str:
    lines = [
        f"Reads per operation on a fabric of {fabric_size} other zones (before: the reads made until the drivers "
        "read only what a change needs, replayed on the same switch)",
        f"{'platform':<12} {'op':<7} {'reads':>11} {'kB read':>17} {'read s':>13} {'op s':>13}",
        f"{'':<12} {'':<7} {'before/now':>11} {'before/now':>17} {'before/now':>13} {'before*/now':>13}",
    ]
    for r in rows:
        lines.append(f"{r.platform:<12} {r.operation:<7} {r.before_reads:>5}/{r.reads:<5} "
                     f"{r.before_kbytes:>8.1f}/{r.kbytes:<8.1f} {r.before_read_s:>6.2f}/{r.read_s:<6.2f} "
                     f"{r.before_op_s:>6.2f}/{r.op_s:<6.2f}")
    lines.append("* the before op time is the op time with the one set of reads swapped for the other")
    return "\n".join(lines)


def format_table(results: list[Result], scale: float) -> str:
    lines = [
        f"Router operations against the simulators (timing scale {scale:g}; cold = login + add + save,"
        " warm = add + save on an open session)",
        f"{'platform':<16} {'transport':<9} {'cold op s':>9} {'warm op s':>9} {'router wait':>11} {'device think':>12}",
    ]
    for r in results:
        if r.error:
            lines.append(f"{r.platform:<16} {r.transport:<9} error: {r.error}")
            continue
        wait = r.router_wait / r.cold if r.cold else 0.0
        think = r.device_think / r.cold if r.cold else 0.0
        lines.append(f"{r.platform:<16} {r.transport:<9} {r.cold:>9.2f} {r.warm:>9.2f} {wait:>11.0%} {think:>12.0%}")
    lines.append("router wait: share of the cold op spent waiting on the router (driver side, login included);")
    lines.append("device think: share that is the device's own delay (simulator timing profile).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench routers", description=__doc__.splitlines()[0])
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORM_MODULES),
                        help="benchmark only this platform (repeatable; default: every available one)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the realistic timing profiles (default 1.0: the seed's Eclipse ~18 s add)")
    parser.add_argument("--fabric-size", type=int, default=1000, metavar="N",
                        help="other hosts' zones on the FCIP switches (default 1000; 0: an empty fabric)")
    args = parser.parse_args(argv)
    if args.fabric_size < 0:
        parser.error("--fabric-size: must be 0 or more")
    platforms = args.platform or [p for p in available_platforms() if Platform(p) in DRIVERS]
    results = [measure(platform, args.scale, args.fabric_size) for platform in platforms]
    print(format_table(results, args.scale), flush=True)
    figures = [f"{r.platform}_cold_s={r.cold:.2f} {r.platform}_warm_s={r.warm:.2f}" for r in results if not r.error]
    fcip = [platform for platform in platforms if platform in FCIP and args.fabric_size]
    reads = [row for platform in fcip for row in measure_reads(platform, args.scale, args.fabric_size)]
    if reads:
        print(format_reads(reads, args.fabric_size), flush=True)
        figures += [f"{r.platform}_{r.operation}_kb={r.before_kbytes:.0f}/{r.kbytes:.0f}" for r in reads]
    print(" ".join(figures))
    return 1 if any(r.error for r in results) or len(reads) != 3 * len(fcip) else 0


if __name__ == "__main__":
    sys.exit(main())

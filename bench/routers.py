"""Router benchmark: per platform, the cold and warm time of an add, and how much of it is the router.

``main()`` starts each platform's simulator in-process on a free loopback port with its realistic
timing profile (``--scale`` shrinks it), then with the platform's driver measures:

* cold op: connect and log in, add one link, save the configuration (what a first operation costs);
* warm op: add another link and save on the already open session (what a queued operation costs);
* router share: the part of the cold op the driver spent waiting on the router (login included),
  and the part that was the device's own think time (the simulator's timing-profile delays).

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
from routers.sim import PLATFORM_MODULES, available_platforms
from routers.sim.server import SimRouter

USERNAME, PASSWORD = "admin", "bench-password"


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


def measure(platform: str, scale: float) -> Result:
    driver_cls = DRIVERS[Platform(platform)]
    transports = getattr(driver_cls, "device_types", {Transport.TELNET: ""})
    transport = Transport.SSH if Transport.SSH in transports else Transport.TELNET
    sim = SimRouter(platform, username=USERNAME, password=PASSWORD, scale=scale,
                    **{transport.value: ("127.0.0.1", 0)})
    result = Result(platform, transport.value)
    host, port = sim.start()[transport.value]
    first, second = bench_specs(platform)
    target = RouterTarget(Platform(platform), host, port, transport, USERNAME, PASSWORD, name=f"bench-{platform}",
                          connect_timeout=60.0, command_timeout=60.0,
                          host_key=sim.host_key_line() if transport == Transport.SSH else "")
    driver = driver_cls(target)
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
    args = parser.parse_args(argv)
    platforms = args.platform or [p for p in available_platforms() if Platform(p) in DRIVERS]
    results = [measure(platform, args.scale) for platform in platforms]
    print(format_table(results, args.scale), flush=True)
    figures = [f"{r.platform}_cold_s={r.cold:.2f} {r.platform}_warm_s={r.warm:.2f}" for r in results if not r.error]
    print(" ".join(figures))
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

"""A farm of simulated routers in one process, for `python -m bench scale`: many routers on one asyncio
loop, so that hundreds of them cost a few processes rather than hundreds of threads.

``python -m bench.scale_farm SPEC`` reads SPEC, a JSON list of routers (`name`, `platform`, `host` to
bind, `password`), serves each on a free port of its host (telnet or SSH, as its platform is served)
with the timing `--timing-scale` gives, and prints one JSON line: per router its transport, host, port
and (SSH) host key line. On SIGTERM or SIGINT it prints a second line, per router the sessions it
accepted (`started`) and the most it held at once (`peak`), counted by the simulators themselves, and
exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path

from simulators import personality_class
from simulators.server import SimRouter

USERNAME = "admin"


async def serve(spec: list[dict], scale: float, seed: int) -> int:
    routers: dict[str, SimRouter] = {}
    for index, entry in enumerate(spec):
        address = (entry["host"], 0)
        telnet = "telnet" in personality_class(entry["platform"]).transports
        routers[entry["name"]] = SimRouter(entry["platform"], telnet=address if telnet else None,
                                           ssh=None if telnet else address, scale=scale,
                                           username=USERNAME, password=entry["password"], seed=seed + index)
    addresses = {}
    for name, router in routers.items():
        served = await router.serve()
        transport, (host, port) = next(iter(served.items()))
        addresses[name] = {"transport": transport, "host": host, "port": port,
                           "host_key": router.host_key_line() if transport == "ssh" else ""}
    print(json.dumps({"addresses": addresses}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    stats = {name: {"started": router.sessions_started, "peak": router.peak_sessions}
             for name, router in routers.items()}
    print(json.dumps({"stats": stats}), flush=True)
    for router in routers.values():
        await router.aclose()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_farm", description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", type=Path, help="JSON list of {name, platform, host, password}")
    parser.add_argument("--timing-scale", type=float, default=0.1, help="multiply every platform delay")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    return asyncio.run(serve(json.loads(args.spec.read_text()), args.timing_scale, args.seed))


if __name__ == "__main__":
    sys.exit(main())

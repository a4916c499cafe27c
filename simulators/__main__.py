"""Run one simulated router: ``python -m simulators --platform mcdata_eclipse --telnet 127.0.0.1:0``.

On startup one JSON line goes to stdout with the bound addresses, e.g.
``{"platform": "mcdata_eclipse", "telnet": ["127.0.0.1", 40123], "pid": 4242}``, so a parent that
asked for port 0 can read the real ports. SIGTERM/SIGINT stop it cleanly. Faults can be changed
while it runs by rewriting ``faults.json`` in the ``--state`` directory (simulators.faults).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from simulators import PLATFORM_MODULES, personality_class
from simulators.faults import KINDS, parse_fault
from simulators.personality import TimingProfile
from simulators.server import SimRouter


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m simulators", description="Serve one simulated storage router.")
    parser.add_argument("--platform", required=True, choices=sorted(PLATFORM_MODULES))
    parser.add_argument("--telnet", metavar="HOST:PORT", help="serve telnet here (port 0: any free port)")
    parser.add_argument("--ssh", metavar="HOST:PORT", help="serve SSH here (port 0: any free port)")
    parser.add_argument("--state", metavar="DIR", help="keep configuration, transcript, host key and faults here")
    parser.add_argument("--username", default="admin")
    secret = parser.add_mutually_exclusive_group()
    secret.add_argument("--password", default="password", help="the login password (visible in `ps`; see below)")
    secret.add_argument(
        "--password-file", type=Path, metavar="FILE", help="read the login password from FILE (keeps it out of `ps`)"
    )
    parser.add_argument("--hostname", help="device name shown in prompts (platform default otherwise)")
    parser.add_argument("--max-sessions", type=int, help="concurrent CLI sessions accepted (platform default)")
    parser.add_argument("--idle-timeout", type=float, help="log an idle session out after this many seconds")
    parser.add_argument(
        "--production-zoning", action="store_true",
        help="on a new state (no state.json yet), start with other hosts' zoning in force (FOS, MDS)",
    )
    parser.add_argument(
        "--fabric-size", type=int, default=0, metavar="N",
        help="on a new state, start with N other hosts' zones in force, a production-sized fabric (FOS, MDS)",
    )
    timing = parser.add_argument_group("timing (seconds; platform defaults unless given)")
    timing.add_argument("--timing-scale", type=float, default=1.0, help="multiply every delay (0 = no delays)")
    timing.add_argument("--connect-delay", type=float, help="TCP accept -> login prompt")
    timing.add_argument("--login-delay", type=float, help="password -> first prompt")
    timing.add_argument("--command-delay", type=float, help="per read-only command")
    timing.add_argument("--mutating-delay", type=float, help="per configuration-changing command")
    timing.add_argument("--jitter", type=float, help="uniform +/- fraction applied to each delay")
    timing.add_argument("--seed", type=int, help="random seed for jitter and garbling")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="KIND[,count=N][,seconds=S][,match=REGEX]",
        help=f"arm a fault (repeatable); KIND is one of: {', '.join(KINDS)}",
    )
    return parser


def timing_from_args(platform: str, args: argparse.Namespace) -> TimingProfile:
    timing = TimingProfile(**vars(personality_class(platform).timing))
    for option, name in (("connect_delay", "connect_to_login"), ("login_delay", "after_password"),
                         ("command_delay", "command"), ("mutating_delay", "mutating_command"), ("jitter", "jitter")):
        value = getattr(args, option)
        if value is not None:
            setattr(timing, name, value)
    return timing


async def run(args: argparse.Namespace) -> int:
    if not args.telnet and not args.ssh:
        transports = personality_class(args.platform).transports
        args.telnet = "127.0.0.1:0" if "telnet" in transports else None
        args.ssh = "127.0.0.1:0" if "telnet" not in transports else None
    faults = [parse_fault(text) for text in args.fault] if args.fault else None
    if args.password_file is not None:
        args.password = args.password_file.read_text().strip()
        if not args.password:
            raise ValueError(f"--password-file: {args.password_file} is empty")
    router = SimRouter(
        args.platform, telnet=args.telnet, ssh=args.ssh, state_dir=args.state, username=args.username,
        password=args.password, hostname=args.hostname, timing=timing_from_args(args.platform, args),
        scale=args.timing_scale, faults=faults, max_sessions=args.max_sessions, seed=args.seed,
        idle_timeout=args.idle_timeout, production_zoning=args.production_zoning, fabric_size=args.fabric_size,
    )
    addresses = await router.serve()
    print(json.dumps({"platform": args.platform, "pid": os.getpid(), **addresses}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await router.aclose()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(run(args))
    except (ValueError, OSError) as exc:
        print(f"simulators: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

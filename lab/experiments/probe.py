"""A management-session probe run inside the primary site: add / list / remove a link on a simulated router.

    python -m lab.experiments.probe --platform mcdata_eclipse --host 198.18.2.10 --port 2323 --reps 5

Each operation is what a management service does for one request: open a session (connect, log in),
issue the command(s), save where the platform needs it, close. One JSON line per operation goes to
stdout: {"op", "rep", "ok", "seconds", "router_seconds", "error"}; a last line {"final": ...} reports
the links the router holds afterwards (read in a fresh session, retried) and the links the probe
believes it created, so a caller can check that both sides agree.

It runs as its own process because it has to live in the primary site's namespace, where the lab's
addresses are routed across the emulated WAN.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

LOCAL_DATA = "198.18.1.11"  # configuration value: router A's data-path address, named by the link


def _target(args: argparse.Namespace) -> Any:
    from routers.drivers.base import RouterTarget
    from routers.platforms import Platform, Transport

    return RouterTarget(Platform(args.platform), args.host, args.port, Transport(args.transport), args.username,
                        args.password, name="probe", connect_timeout=args.op_timeout,
                        command_timeout=args.op_timeout)


def _session(target: Any, work: Any) -> tuple[Any, float]:
    from routers.drivers import get_driver

    driver = get_driver(target)
    try:
        driver.connect()
        result = work(driver)
        return result, driver.take_router_seconds()
    finally:
        try:
            driver.close()
        except Exception:  # noqa: BLE001 - closing a broken session must not hide the real error
            pass


def _operation(op: str, rep: int, target: Any, spec: Any) -> dict[str, Any]:
    def add(driver: Any) -> None:
        driver.add_link(spec)
        driver.save_config()

    def remove(driver: Any) -> None:
        driver.remove_link(spec)
        driver.save_config()

    def listing(driver: Any) -> int:
        return len(driver.list_links())

    work = {"add": add, "list": listing, "remove": remove}[op]
    started = time.monotonic()
    try:
        _, router_seconds = _session(target, work)
        return {"op": op, "rep": rep, "ok": True, "seconds": time.monotonic() - started,
                "router_seconds": router_seconds, "error": ""}
    except Exception as exc:  # noqa: BLE001 - every failure is data here (typed RouterError or not)
        from routers.drivers.base import LinkAbsent, LinkExists

        if isinstance(exc, LinkExists if op == "add" else LinkAbsent if op == "remove" else ()):
            # The driver contract: the operations engine treats these as done (idempotent add/remove).
            return {"op": op, "rep": rep, "ok": True, "seconds": time.monotonic() - started, "router_seconds": 0.0,
                    "error": f"{type(exc).__name__} (counted as done)"}
        return {"op": op, "rep": rep, "ok": False, "seconds": time.monotonic() - started, "router_seconds": 0.0,
                "error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.experiments.probe")
    parser.add_argument("--platform", default="mcdata_eclipse")
    parser.add_argument("--transport", default="telnet")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--username", default="admin")
    parser.add_argument("--password", default="password")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--zone-base", type=int, default=100)
    parser.add_argument("--op-timeout", type=float, default=30.0)
    parser.add_argument("--ops", default="add,list,remove")
    args = parser.parse_args(argv)

    from routers.drivers.base import LinkSpec

    target = _target(args)
    believed: set[tuple[int, int, str]] = set()
    for rep in range(1, args.reps + 1):
        spec = LinkSpec(port=3, zone=args.zone_base + rep, remote_ip=LOCAL_DATA, local_ip=None)
        for op in args.ops.split(","):
            row = _operation(op, rep, target, spec)
            if row["ok"] and op == "add":
                believed.add(spec.key)
            elif row["ok"] and op == "remove":
                believed.discard(spec.key)
            print(json.dumps(row), flush=True)
    held: list[list[Any]] | None = None
    for _ in range(5):
        try:
            links, _ = _session(target, lambda driver: driver.list_links())
            held = sorted([link.port, link.zone, link.remote_ip] for link in links)
            break
        except Exception:  # noqa: BLE001 - retried: the read-back may itself suffer the impairment
            time.sleep(0.5)
    print(json.dumps({"final": {"router": held, "believed": sorted(list(k) for k in believed)}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The flexzone service at the primary site: real operations through the engine, one JSON line each.

    python -m netem.experiments.service_probe setup --spec '{...}'      # migrate, load the lab registry
    python -m netem.experiments.service_probe run --reps 5 [--reconcile]

It runs inside the primary site's namespace (`ip netns exec`), so the engine reaches the remote router
across the emulated WAN exactly as the management server of the reference testbed did. The database is
reached over PostgreSQL's UNIX socket (DATABASE_URL=postgres://postgres@%2Fvar%2Frun%2Fpostgresql/<db>):
a socket file works from any network namespace, while 127.0.0.1 inside a namespace is that namespace's
own loopback, where no PostgreSQL listens.

`run` submits and executes (FLEXZONE_OPS_QUEUE=manual: no worker, `execute` runs it here) add / list /
remove per repetition and prints {"kind", "rep", "state", "attempts", "error", "registry_ms",
"invocation_ms", "router_ms", "total_ms", "wall_ms"} per operation. With --reconcile a last line
{"reconcile": {...}} says whether registry and routers agree (report only, nothing repaired) and what
each router holds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

REQUESTER = "primary-site"
DEVICE = "XRAID2"  # owned by the remote site: an add configures both routers, the remote one across the WAN


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")
    os.environ.setdefault("FLEXZONE_OPS_QUEUE", "manual")
    import django

    django.setup()


def load_registry(spec: dict[str, Any]) -> dict[str, int]:
    """Sites primary-site / remote-site on the lab's addresses, one router each, zones and devices (as demo.py)."""
    from django.db import transaction

    from registry.demo import DEVICES, ZONES
    from registry.models import Device, Router, Site, Zone

    with transaction.atomic():
        for zone in ZONES:
            Zone.objects.update_or_create(zone_id=zone["zone_id"], defaults={"description": zone["description"]})
        sites = {}
        for n, site in enumerate(spec["sites"], start=1):
            sites[site["name"]], _ = Site.objects.update_or_create(name=site["name"], defaults={
                "display_name": site["display_name"], "msan_id": n, "management_ip": site["mgmt"],
                "data_ip": site["data"], "router_port": site["router_port"],
                "description": f"lab site in namespace {site['netns']}"})
            Router.objects.update_or_create(name=site["router"], defaults={
                "site": sites[site["name"]], "platform": site["platform"], "transport": "telnet",
                "host": site["mgmt"], "port": site["port"], "username": spec["username"],
                "secret_ref": f"env:{spec['secret_env']}", "connect_timeout": spec["timeout"],
                "command_timeout": spec["timeout"]})
        owners = {"primary-site": spec["sites"][0]["name"], "remote-site": spec["sites"][1]["name"]}
        for device in DEVICES:
            Device.objects.update_or_create(device_id=device["device_id"], defaults={
                "description": device["description"], "wwn": device["wwn"],
                "zone": Zone.objects.get(zone_id=device["zone"]), "owner_site": sites[owners[device["owner"]]]})
    return {"sites": len(sites), "routers": len(sites), "devices": len(DEVICES)}


def _row(kind: str, rep: int, op: Any, wall_ms: float) -> dict[str, Any]:
    return {"kind": kind, "rep": rep, "state": op.state, "attempts": op.attempts, "error": op.error[:300],
            "registry_ms": op.registry_ms, "invocation_ms": op.invocation_ms, "router_ms": op.router_ms,
            "total_ms": op.total_ms, "wall_ms": wall_ms}


def operation(kind: str, rep: int) -> dict[str, Any]:
    """Submit and execute one operation; a request refused at planning is a row too (state "refused")."""
    from operations import execute, submit
    from registry.planner import PlanError

    request = {} if kind == "list" else {"site": REQUESTER, "device_description": DEVICE}
    started = time.perf_counter()
    try:
        op = execute(submit(kind, request, enqueue=False).pk)
    except PlanError as exc:
        wall = (time.perf_counter() - started) * 1000
        return {"kind": kind, "rep": rep, "state": "refused", "attempts": 0, "error": str(exc)[:300],
                "registry_ms": wall, "invocation_ms": 0.0, "router_ms": 0.0, "total_ms": wall, "wall_ms": wall}
    return _row(kind, rep, op, (time.perf_counter() - started) * 1000)


def agreement(tries: int = 3) -> dict[str, Any]:
    """Reconcile (report only) and say whether registry and routers agree; retried, since it crosses the WAN."""
    from operations import reconcile

    last: dict[str, Any] = {}
    for _ in range(tries):
        op = reconcile(repair=False)
        routers = op.result.get("routers", {})
        drift = {name: {key: report.get(key, []) for key in ("missing", "extra", "mismatched", "unresolved")}
                 for name, report in routers.items()}
        readable = op.state == "succeeded" and all("error" not in r for r in routers.values())
        last = {"state": op.state, "error": op.error[:300], "readable": readable, "drift": drift,
                "agree": readable and not any(v for d in drift.values() for v in d.values()),
                "reconcile_ms": op.total_ms}
        if readable:
            break
    last["final_links"] = _final_links()
    return last


def _final_links() -> Any:
    from operations import list_links

    try:
        return {name: sorted([link["port"], link["zone"], link["remote_ip"], link.get("state")] for link in links)
                for name, links in list_links().items()}
    except Exception as exc:  # noqa: BLE001 - under heavy loss the read-back itself may fail: say so
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m netem.experiments.service_probe")
    sub = parser.add_subparsers(dest="action", required=True)
    setup = sub.add_parser("setup", help="migrate the database and load the lab registry")
    setup.add_argument("--spec", required=True, help="JSON: sites, username, secret_env, timeout")
    run = sub.add_parser("run", help="add / list / remove through the engine, one JSON line per operation")
    run.add_argument("--reps", type=int, default=3)
    run.add_argument("--ops", default="add,list,remove")
    run.add_argument("--warmup", action="store_true", help="one list first (logs the pool in), reported as rep 0")
    run.add_argument("--reconcile", action="store_true", help="report registry/router agreement at the end")
    run.add_argument("--repair", action="store_true", help="after a disagreeing report, repair and report again")
    args = parser.parse_args(argv)
    _django()
    if args.action == "setup":
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        print(json.dumps({"loaded": load_registry(json.loads(args.spec))}), flush=True)
        return 0
    try:
        if args.warmup:
            print(json.dumps(operation("list", 0)), flush=True)
        for rep in range(1, args.reps + 1):
            for kind in args.ops.split(","):
                print(json.dumps(operation(kind, rep)), flush=True)
        if args.reconcile:
            report = agreement()
            if args.repair and not report["agree"]:
                from operations import reconcile

                op = reconcile(repair=True)
                report["repair"] = {"state": op.state, "error": op.error[:300], "result": op.result}
                report["after_repair"] = agreement()
            print(json.dumps({"reconcile": report}, default=str), flush=True)
    finally:
        from operations.pool import pool

        pool.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())

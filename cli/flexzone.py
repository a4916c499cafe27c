"""`flexzone`: the registry-aware client. Name a device (or WWN, or zone) and a site; flexzone does the rest.

    flexzone --lsifcp                                          links, with state and lease
    flexzone --add --device-description XRAID1 --site remote-site [--for 2h] [--host NAME ...]
    flexzone --remove --wwn 20:04:00:04:53:00:02:f0 --site primary-site
    flexzone --plan [--remove] --zone 2 --site primary-site    dry run: the exact router commands
    flexzone --sites | --zones | --devices | --routers | --hosts [--site S]
    flexzone --grants [--site S]                               who may reach what, until when
    flexzone --zoning-history ROUTER                           zoning in force before/after each change (admin)
    flexzone --status 12 | --journal [12] | --reconcile [--repair [--policy router]] | --health

Each flag also works as a word: `flexzone add --device-description XRAID1 --site remote-site`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cli import output
from cli.client import Client
from cli.common import (
    CONFIG_HELP,
    EXIT_CODES,
    Parser,
    add_connection_flags,
    config_from,
    run,
    show_config,
    submit_operation,
)
from cli.errors import DONE, USAGE, CliError

PROGRAM = "flexzone"
RECENT = -1
ACTIONS = ("lsifcp", "add", "remove", "sites", "zones", "devices", "routers", "hosts", "grants", "zoning_history",
           "status", "journal", "reconcile", "health")
# Where an action's flag is stored when not under its own name (`--host NAME` fills `hosts`).
ACTION_DESTS = {"hosts": "list_hosts"}
# Subcommand words and the flag each stands for.
WORDS = {
    **{action.replace("_", "-"): f"--{action.replace('_', '-')}" for action in ACTIONS},
    "ls": "--lsifcp", "links": "--lsifcp", "list": "--lsifcp", "connect": "--add", "disconnect": "--remove",
    "rm": "--remove", "plan": "--plan", "operations": "--journal",
}


def build_parser() -> Parser:
    parser = Parser(
        prog=PROGRAM,
        description="Connect sites to shared Fibre Channel storage through the flexzone registry (REST over mTLS).",
        epilog=f"{EXIT_CODES}\n\n{CONFIG_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_argument_group("actions (one; each also works as a word, e.g. `flexzone add ...`)")
    exclusive = actions.add_mutually_exclusive_group()
    exclusive.add_argument("--lsifcp", action="store_true", help="list links: state, site, device, router, port, "
                           "zone, remote IP, lease")
    exclusive.add_argument("--add", action="store_true", help="connect --site to a device or zone")
    exclusive.add_argument("--remove", action="store_true", help="disconnect --site from a device or zone")
    exclusive.add_argument("--sites", action="store_true", help="list sites")
    exclusive.add_argument("--zones", action="store_true", help="list zones")
    exclusive.add_argument("--devices", action="store_true", help="list shared devices")
    exclusive.add_argument("--routers", action="store_true", help="list storage routers")
    exclusive.add_argument("--hosts", dest="list_hosts", action="store_true",
                           help="list hosts and their initiator WWNs (--site: of one site)")
    exclusive.add_argument("--grants", action="store_true",
                           help="list grants: which site may reach which device, shared or exclusive, until when "
                                "(--site: held by one site; --device-description: of one device)")
    exclusive.add_argument("--zoning-history", metavar="ROUTER",
                           help="admin: the zoning in force on an FCIP switch before and after each of flexzone's "
                                "changes, newest first, with the commands that would put each before-image back "
                                "(printed only, never sent)")
    exclusive.add_argument("--status", type=int, metavar="ID", help="state, phase and timings of an operation")
    exclusive.add_argument("--journal", nargs="?", type=int, const=RECENT, metavar="ID",
                           help="recent operations; with ID, one operation in full (plan, result, transcript)")
    exclusive.add_argument("--reconcile", action="store_true", help="compare the registry with the routers")
    exclusive.add_argument("--health", action="store_true", help="is the service up?")
    actions.add_argument("--plan", action="store_true",
                         help="dry run of --add (default) or --remove: print the exact router commands")

    target = parser.add_argument_group("what and where")
    selector = target.add_mutually_exclusive_group()
    selector.add_argument("--device-description", metavar="TEXT", help="the device, e.g. XRAID1")
    selector.add_argument("--wwn", metavar="WWN", help="the device's WWN, e.g. 20:04:00:04:53:00:02:f0")
    selector.add_argument("--zone", type=int, metavar="N", help="a whole zone")
    target.add_argument("--site", metavar="SITE", help="the requesting site: short name, display name or MSAN id")
    target.add_argument("--for", dest="lease", metavar="DURATION", help="lease for --add: 90s, 30m, 2h, 1d, 1h30m")
    target.add_argument("--host", dest="hosts", action="append", metavar="NAME",
                        help="--add, --plan: zone only this host of --site (FCIP; repeat for several)")
    target.add_argument("--router", metavar="NAME", help="--lsifcp: one router only")
    target.add_argument("--repair", action="store_true", help="--reconcile: converge registry and routers (admin)")
    target.add_argument("--policy", choices=("registry", "router"), default="registry",
                        help="--reconcile --repair: which side is the truth (default registry)")
    target.add_argument("--all", action="store_true", help="--lsifcp: include links that are down")
    target.add_argument("--limit", type=int, default=20, metavar="N", help="--journal: how many (default 20)")
    add_connection_flags(parser)
    return parser


def translate_words(argv: list[str]) -> list[str]:
    """`flexzone add ...` -> `flexzone --add ...`; `flexzone status 12` -> `flexzone --status 12`."""
    if argv and argv[0] in WORDS:
        return [WORDS[argv[0]], *argv[1:]]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    return run(PROGRAM, _main, argv)


def _main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(translate_words(list(argv)))
    action = next((name for name in ACTIONS if getattr(args, ACTION_DESTS.get(name, name)) not in (None, False)),
                  None)
    if args.plan and action not in (None, "add", "remove"):
        parser.error("--plan goes with --add (the default) or --remove")
    if action is None and not args.plan and not args.show_config:
        parser.error("choose an action: --lsifcp, --add, --remove, --plan, --sites, --zones, --devices, "
                     "--routers, --hosts, --grants, --zoning-history ROUTER, --status ID, --journal, --reconcile or "
                     "--health")
    if args.hosts and (args.remove or not (args.add or args.plan)):
        parser.error("--host goes with --add or --plan (a disconnect removes the link for every host)")
    lease = _lease(parser, args)
    config = config_from(args)
    if args.show_config:
        return show_config(config, args.json)
    client = Client(config)
    if args.plan:
        return plan(client, args)
    handlers = {
        "lsifcp": lsifcp, "sites": sites, "zones": zones, "devices": devices, "routers": routers, "hosts": hosts,
        "grants": grants, "zoning_history": zoning_history,
        "status": status, "journal": journal, "reconcile": reconcile, "health": health,
    }
    if action in ("add", "remove"):
        return connect(client, args, lease)
    assert action is not None  # checked above: no action only with --plan or --show-config, both answered
    return handlers[action](client, args)


def _lease(parser: Parser, args: argparse.Namespace) -> int | None:
    if args.lease is None:
        return None
    if not args.add:
        parser.error("--for (a lease) goes with --add")
    try:
        return output.parse_duration(args.lease)
    except ValueError as exc:
        parser.error(f"--for: {exc}")
    return None


def _target(args: argparse.Namespace) -> dict:
    if not args.site:
        raise CliError("--site is required", "name the requesting site, e.g. --site remote-site", USAGE)
    body: dict = {"site": args.site}
    if args.hosts:
        body["hosts"] = args.hosts
    if args.device_description is not None:
        body["device_description"] = args.device_description
    elif args.wwn is not None:
        body["wwn"] = args.wwn
    elif args.zone is not None:
        body["zone"] = args.zone
    else:
        raise CliError("name the device: --device-description, --wwn or --zone",
                       "e.g. --device-description XRAID1 (flexzone --devices lists them)", USAGE)
    return body


# --- operations --------------------------------------------------------------------------------


def connect(client: Client, args: argparse.Namespace, lease: int | None) -> int:
    body = _target(args)
    if lease is not None:
        body["duration"] = lease
    path = "/api/connect/" if args.add else "/api/disconnect/"
    submit_operation(client, path, body, args, describe_link_operation)
    return DONE


def describe_link_operation(operation: dict) -> str:
    plan = operation.get("plan") or {}
    request = operation.get("request") or {}
    adding = operation.get("kind") == "add"
    verb = "connect" if adding else "disconnect"
    if operation.get("state") == "succeeded":
        verb += "ed"
    what = ", ".join(plan.get("devices") or []) or request.get("device_description") or request.get("wwn") or "?"
    site = plan.get("site") or request.get("site")
    text = f"{verb} {site} {'to' if adding else 'from'} {what} (zone {plan.get('zone', request.get('zone', '?'))})"
    routers = [step.get("router") for step in plan.get("steps") or []]
    if routers:
        text += f" via {', '.join(routers)}"
    result = operation.get("result") or {}
    if result.get("lease_expires_at"):
        text += f"; lease until {output.lease_text(result['lease_expires_at'])}"
    return text + waits_text(result)


def waits_text(result: dict) -> str:
    """What the engine said about the operations this one waited for (the same request, or an earlier one)."""
    text = ""
    if result.get("joined"):
        text += f"; joined operation {_ids(result['joined'])} (the same request, already under way)"
    if result.get("after"):
        text += f"; ran after operation {_ids(result['after'])} (submitted earlier for the same site and zone)"
    return text


def _ids(ids: list) -> str:
    return ", ".join(str(pk) for pk in ids)


def plan(client: Client, args: argparse.Namespace) -> int:
    query = {**_target(args), "action": "disconnect" if args.remove else "connect"}
    result = client.get("/api/plan/", **query)
    if args.json:
        output.print_json(result)
        return DONE
    print(describe_plan(result))
    return DONE


def describe_plan(result: dict) -> str:
    devices = ", ".join(result.get("devices") or [])
    lines = [f"Plan: {result.get('action')} site {result.get('site')} -> zone {result.get('zone')} ({devices})"]
    for step in result.get("steps") or []:
        lines.append(f"  {step.get('order')}. {step.get('action')} on router {step.get('router')} "
                     f"({step.get('platform')}, site {step.get('site')}): port {step.get('port')}, "
                     f"zone {step.get('zone')}, remote gateway {step.get('remote_ip')}"
                     + (f" [{step['delta']}]" if step.get("delta") else ""))
        if step.get("initiators"):
            lines.append(f"       zone members: initiators {', '.join(step['initiators'])}; target {step.get('wwn')}")
        if step.get("pairs"):
            lines.append(f"       further targets: {', '.join(sorted({pair[1] for pair in step['pairs']}))}")
        lines.extend(f"       {command}" for command in step.get("commands") or [])
        lines.extend(f"       note: {note}" for note in step.get("notes") or [])
    if not result.get("steps"):
        lines.append("  nothing to do")
    return "\n".join(lines)


def reconcile(client: Client, args: argparse.Namespace) -> int:
    body: dict = {"repair": bool(args.repair), "policy": args.policy}
    submit_operation(client, "/api/reconcile/", body, args, describe_reconcile, reconcile_report)
    return DONE


def describe_reconcile(operation: dict) -> str:
    routers = (operation.get("result") or {}).get("routers") or {}
    drift = sum(len(v) for report in routers.values() if isinstance(report, dict)
                for k, v in report.items() if k in ("missing", "extra", "mismatched") and isinstance(v, list))
    mode = "repair" if (operation.get("request") or {}).get("repair") else "check"
    return f"reconcile ({mode}) of {len(routers)} router(s): {drift} difference(s)"


def reconcile_report(operation: dict) -> list[str]:
    lines = []
    for name, report in ((operation.get("result") or {}).get("routers") or {}).items():
        if not isinstance(report, dict):
            continue
        if report.get("error"):
            lines.append(f"  {name}: could not be read: {report['error']}")
            continue
        found = [(kind, items) for kind, items in report.items() if isinstance(items, list) and items]
        if not found:
            lines.append(f"  {name}: in agreement with the registry")
        for kind, items in found:
            for item in items:
                described = " ".join(f"{k}={v}" for k, v in item.items()) if isinstance(item, dict) else str(item)
                lines.append(f"  {name}: {kind.replace('_', ' ')}: {described}")
    return lines


# --- listings ----------------------------------------------------------------------------------


def lsifcp(client: Client, args: argparse.Namespace) -> int:
    filters = {"site": args.site, "router": args.router, "device": args.device_description}
    links = client.get_all("/api/links/", **filters)
    if not args.all:
        links = [link for link in links if link.get("state") != "down"]
    if args.zone is not None:
        links = [link for link in links if str(link.get("zone")) == str(args.zone)]
    if args.json:
        output.print_json([output.project("link", link) for link in links])
        return DONE
    output.table(
        ["ID", "STATE", "SITE", "DEVICE", "ROUTER", "PORT", "ZONE", "REMOTE-IP", "LEASE"],
        [[link.get("id"), link.get("state"), link.get("site"), link.get("device"), link.get("router"),
          link.get("port"), link.get("zone"), link.get("remote_ip"), output.lease_text(link.get("lease_expires_at"))]
         for link in links],
    )
    return DONE


def _listing(client: Client, args: argparse.Namespace, kind: str, path: str, headers: list[str],
             columns: list[str]) -> int:
    items = client.get_all(path)
    if args.json:
        output.print_json([output.project(kind, item) for item in items])
    else:
        output.table(headers, [[item.get(column) for column in columns] for item in items])
    return DONE


def sites(client: Client, args: argparse.Namespace) -> int:
    return _listing(client, args, "site", "/api/sites/",
                    ["NAME", "DISPLAY-NAME", "MSAN", "MANAGEMENT-IP", "DATA-IP", "PORT", "DESCRIPTION"],
                    ["name", "display_name", "msan_id", "management_ip", "data_ip", "router_port", "description"])


def zones(client: Client, args: argparse.Namespace) -> int:
    return _listing(client, args, "zone", "/api/zones/", ["ZONE", "DESCRIPTION"], ["zone_id", "description"])


def devices(client: Client, args: argparse.Namespace) -> int:
    return _listing(client, args, "device", "/api/devices/",
                    ["DESCRIPTION", "WWN", "ZONE", "OWNER", "SHAREABLE"],
                    ["description", "wwn", "zone", "owner_site", "shareable"])


def routers(client: Client, args: argparse.Namespace) -> int:
    return _listing(client, args, "router", "/api/routers/",
                    ["NAME", "SITE", "PLATFORM", "TRANSPORT", "HOST", "PORT", "SECURITY", "HOST KEY"],
                    ["name", "site", "platform", "transport", "host", "port", "transport_security",
                     "ssh_host_key_sha256"])


def hosts(client: Client, args: argparse.Namespace) -> int:
    items = client.get_all("/api/hosts/", site=args.site)
    if args.json:
        output.print_json([output.project("host", item) for item in items])
        return DONE
    output.table(["NAME", "SITE", "INITIATORS", "DESCRIPTION"],
                 [[item.get("name"), item.get("site"), ",".join(item.get("initiators") or []), item.get("description")]
                  for item in items])
    return DONE


def grants(client: Client, args: argparse.Namespace) -> int:
    items = client.get_all("/api/grants/", site=args.site, device=args.device_description)
    if args.json:
        output.print_json([output.project("grant", item) for item in items])
        return DONE
    output.table(["ID", "SITE", "DEVICE", "OWNER", "ZONE", "MODE", "STATE", "ORIGIN", "UNTIL", "INITIATORS"],
                 [[item.get("id"), item.get("site"), item.get("device"), item.get("owner_site"), item.get("zone"),
                   "exclusive" if item.get("exclusive") else "shared", item.get("state"), item.get("origin"),
                   output.lease_text(item.get("expires_at")), ",".join(item.get("initiators") or []) or "-"]
                  for item in items])
    return DONE


def zoning_history(client: Client, args: argparse.Namespace) -> int:
    items = client.get_all("/api/zoning-history/", router=args.zoning_history)
    if args.json:
        output.print_json([output.project("zoning_image", item) for item in items])
        return DONE
    if not items:
        print(f"no zoning change of flexzone's recorded on {args.zoning_history}")
        return DONE

    def in_effect(image: dict | None) -> str:
        return "?" if image is None else (image.get("in_effect") or "(none)")

    output.table(["ID", "TAKEN", "OPERATION", "IN EFFECT", "ADDED", "REMOVED", "CHANGED"],
                 [[item.get("id"), item.get("taken_at"), item.get("operation") or "-",
                   f"{in_effect(item.get('before'))} -> {in_effect(item.get('after'))}",
                   *(",".join(item["changes"].get(kind) or []) or "-" for kind in ("added", "removed", "changed"))]
                  for item in items])
    print("\nTo put a before-image back (relative to what flexzone left; read the switch first), an admin runs "
          "these; flexzone never sends them:")
    for item in items:
        print(f"  #{item.get('id')}: " + ("; ".join(item.get("restore") or []) or "(nothing to undo)"))
    return DONE


def health(client: Client, args: argparse.Namespace) -> int:
    body = client.get("/api/health/")
    if args.json:
        output.print_json(body)
    else:
        print(" ".join(f"{key}: {value}" for key, value in body.items()))
    return DONE


def status(client: Client, args: argparse.Namespace) -> int:
    operation = client.get(f"/api/operations/{args.status}/")
    if args.json:
        output.print_json(output.project("operation", operation))
        return DONE
    print(describe_operation(operation))
    return DONE


def describe_operation(operation: dict) -> str:
    lines = [
        f"operation {operation.get('id')}: {operation.get('kind')} by {operation.get('principal') or '-'}",
        f"  state     {operation.get('state')} (phase {str(operation.get('phase')).replace('_', ' ')}, "
        f"attempts {operation.get('attempts')})",
        f"  request   {_inline(operation.get('request'))}",
        f"  created   {output.short_time(operation.get('created_at'))}   "
        f"finished {output.short_time(operation.get('finished_at'))}",
        f"  {output.timing_line(operation)}",
    ]
    if operation.get("error"):
        lines.append(f"  error     {operation['error']}")
    return "\n".join(lines)


def _inline(data: object) -> str:
    if isinstance(data, dict):
        return " ".join(f"{key}={value}" for key, value in data.items() if value not in (None, ""))
    return str(data)


def journal(client: Client, args: argparse.Namespace) -> int:
    if args.journal != RECENT:
        return journal_entry(client, args)
    page = client.get("/api/operations/")
    items = (page.get("results", []) if isinstance(page, dict) else page)[: max(1, args.limit)]
    if args.json:
        output.print_json([output.project("operation", item) for item in items])
        return DONE
    output.table(
        ["ID", "KIND", "STATE", "PHASE", "BY", "CREATED", "TOTAL-MS", "REQUEST / ERROR"],
        [[item.get("id"), item.get("kind"), item.get("state"), item.get("phase"), item.get("principal"),
          output.short_time(item.get("created_at")), item.get("total_ms"),
          (item.get("error") or _inline(item.get("request")))[:70]] for item in items],
    )
    return DONE


def journal_entry(client: Client, args: argparse.Namespace) -> int:
    operation = client.get(f"/api/operations/{args.journal}/")
    if args.json:
        record = output.project("operation", operation)
        record.update(plan=operation.get("plan"), transcript=operation.get("transcript"))
        output.print_json(record)
        return DONE
    print(describe_operation(operation))
    if operation.get("plan", {}).get("steps"):
        print(describe_plan(operation["plan"]))
    if operation.get("result"):
        print(f"  result    {_inline(operation['result'])}")
    if operation.get("transcript"):
        print("  transcript (secrets masked):")
        for line in operation["transcript"].splitlines():
            print(f"    {line}")
    elif "transcript" not in operation:
        print("  (router transcripts are shown to admins only)")
    return DONE


if __name__ == "__main__":
    raise SystemExit(main())

"""`flexzone-rtr`: the V1 low-level client. Raw iFCP session commands on one named router, journaled.

    flexzone-rtr --lsifcp [--router NAME]
    flexzone-rtr --addifcp --port 8 --zone 3 --ifcpip 10.0.8.50 [--router NAME]
    flexzone-rtr --rmifcp  --port 8 --zone 3 --ifcpip 10.0.8.50 [--router NAME]

`--router` is needed when more than one router is registered (`--lsifcp` then lists every router).
The service still journals each command and keeps the registry's links in step with the router.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cli import output
from cli.client import Client, json_body
from cli.common import (
    CONFIG_HELP,
    EXIT_CODES,
    Parser,
    add_connection_flags,
    config_from,
    ip_address,
    raise_failed,
    run,
    show_config,
    submit_operation,
)
from cli.errors import DONE, USAGE, CliError
from cli.progress import follow, make_progress

PROGRAM = "flexzone-rtr"
COMMANDS = ("lsifcp", "addifcp", "rmifcp")


def build_parser() -> Parser:
    parser = Parser(
        prog=PROGRAM,
        description="V1 low-level iFCP commands on a storage router, through the flexzone service (REST over mTLS).",
        epilog=f"{EXIT_CODES}\n\n{CONFIG_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command = parser.add_argument_group("command (one)").add_mutually_exclusive_group()
    command.add_argument("--lsifcp", action="store_true", help="list the router's iFCP sessions")
    command.add_argument("--addifcp", action="store_true", help="add an iFCP session (needs --port --zone --ifcpip)")
    command.add_argument("--rmifcp", action="store_true", help="remove an iFCP session (needs --port --zone --ifcpip)")
    command.add_argument("--routers", action="store_true", help="list the registered routers")
    session = parser.add_argument_group("session")
    session.add_argument("--router", metavar="NAME", help="the router (needed when several are registered)")
    session.add_argument("--port", type=int, metavar="N", help="router port, e.g. 8")
    session.add_argument("--zone", type=int, metavar="N", help="zone, e.g. 3")
    session.add_argument("--ifcpip", type=ip_address, metavar="IP", help="remote iFCP gateway, e.g. 10.0.8.50")
    add_connection_flags(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(PROGRAM, _main, argv)


def _main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv))
    command = next((name for name in COMMANDS if getattr(args, name)), None)
    if command is None and not args.routers and not args.show_config:
        parser.error("choose a command: --lsifcp, --addifcp, --rmifcp or --routers")
    if command in ("addifcp", "rmifcp"):
        missing = [f"--{name}" for name in ("port", "zone", "ifcpip") if getattr(args, name) is None]
        if missing:
            parser.error(f"--{command} needs {' '.join(missing)}")
    config = config_from(args)
    if args.show_config:
        return show_config(config, args.json)
    client = Client(config)
    if args.routers:
        return list_routers(client, args)
    if command == "lsifcp":
        return lsifcp(client, args)
    assert command is not None  # checked above: no command only with --routers or --show-config, both answered
    body = {"router": choose_router(client, args.router, command), "command": command, "port": args.port,
            "zone": args.zone, "ifcpip": args.ifcpip}
    submit_operation(client, "/api/invoke/", body, args, describe_session_operation)
    return DONE


def choose_router(client: Client, name: str | None, command: str) -> str:
    if name:
        return name
    names = [router["name"] for router in client.get_all("/api/routers/")]
    if len(names) == 1:
        return names[0]
    if not names:
        raise CliError("no router is registered", "an admin registers routers first", USAGE)
    raise CliError(f"{len(names)} routers are registered: name one with --router",
                   f"e.g. {PROGRAM} --{command} --router {names[0]} (choices: {', '.join(names)})", USAGE)


def describe_session_operation(operation: dict) -> str:
    request = operation.get("request") or {}
    remote = request.get("ifcpip") or request.get("remote_ip")
    return (f"{request.get('command')} on {request.get('router')}: port {request.get('port')}, "
            f"zone {request.get('zone')}, remote {remote}")


def lsifcp(client: Client, args: argparse.Namespace) -> int:
    names = [args.router] if args.router else [router.get("name") for router in client.get_all("/api/routers/")]
    if not names:
        raise CliError("no router is registered", "an admin registers routers first", USAGE)
    rows: list[dict] = []
    operations = []
    for name in names:
        body: dict = {"router": name, "command": "lsifcp"}
        for key in ("port", "zone", "ifcpip"):
            if getattr(args, key) is not None:
                body[key] = getattr(args, key)
        response = client.post("/api/invoke/", body)
        operation = follow(client, json_body(response), response.headers.get("Location"), max_wait=args.wait,
                           progress=make_progress(args.json))
        operations.append(operation)
        if operation.get("state") != "succeeded":
            raise_failed(operation, operation.get("error") or "the router could not be read")
        for link in (operation.get("result") or {}).get("links") or []:
            rows.append(output.project("router_link", {"router": name, **link}))
    if args.json:
        output.print_json(rows)
        return DONE
    output.table(["ROUTER", "PORT", "ZONE", "IFCP-IP", "STATE", "OPER"],
                 [[row["router"], row["port"], row["zone"], row["remote_ip"], row["state"], row["oper"] or "-"]
                  for row in rows])
    for operation in operations:
        print(f"{operation.get('request', {}).get('router')}: {output.timing_line(operation)}")
    return DONE


def list_routers(client: Client, args: argparse.Namespace) -> int:
    items = client.get_all("/api/routers/")
    if args.json:
        output.print_json([output.project("router", item) for item in items])
    else:
        output.table(["NAME", "SITE", "PLATFORM", "TRANSPORT", "HOST", "PORT"],
                     [[i.get("name"), i.get("site"), i.get("platform"), i.get("transport"), i.get("host"),
                       i.get("port")] for i in items])
    return DONE


if __name__ == "__main__":
    raise SystemExit(main())

"""What both clients share: connection flags, the error-to-exit-code wrapper, and submitting operations."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Callable, Sequence

from cli import output
from cli.client import Client, json_body
from cli.config import ENV_VAR, Config, default_path, load_config
from cli.errors import DONE, OPERATION_FAILED, USAGE, CliError
from cli.progress import follow, make_progress

EXIT_CODES = """exit status:
  0  done                          1  the operation failed (or conflicts, or the server erred)
  2  usage: bad arguments, configuration or input the server rejected
  3  authentication or TLS refused  4  server unreachable or not answering"""

CONFIG_HELP = f"""configuration: {default_path()} (or the file named by ${ENV_VAR}), TOML:
  server = "https://127.0.0.1:8443"
  ca = "pki/ca.pem"          # relative paths are taken from the file's directory
  cert = "pki/alice.pem"
  key = "pki/alice.key"
flags --server --ca --cert --key override single values."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line with a hint and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CliError(message, f"see {self.prog} --help", USAGE)


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection (override the configuration file)")
    group.add_argument("--server", metavar="URL", help="API base URL, e.g. https://127.0.0.1:8443")
    group.add_argument("--ca", metavar="FILE", help="CA certificate that signed the server's certificate")
    group.add_argument("--cert", metavar="FILE", help="your client certificate (PEM)")
    group.add_argument("--key", metavar="FILE", help="its private key (PEM)")
    group.add_argument("--show-config", action="store_true", help="print the configuration in use and exit")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="machine-readable JSON on stdout (see cli/README.md)")
    out.add_argument("--wait", type=positive_seconds, default=600.0, metavar="SECONDS",
                     help="follow an operation at most this long (default 600)")
    out.add_argument("--no-wait", action="store_true", help="submit an operation and return at once")


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def ip_address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IP address (e.g. 10.0.8.50)") from None


def config_from(args: argparse.Namespace) -> Config:
    return load_config({"server": args.server, "ca": args.ca, "cert": args.cert, "key": args.key})


def show_config(config: Config, json_mode: bool) -> int:
    if json_mode:
        output.print_json(config.as_dict())
    else:
        for name, value in config.as_dict().items():
            print(f"{name:8} {value}")
    return DONE


def run(program: str, main: Callable[[Sequence[str]], int], argv: Sequence[str] | None) -> int:
    """Run `main`, turning a CliError into one stderr line and its exit status."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    try:
        return main(list(sys.argv[1:] if argv is None else argv))
    except CliError as exc:
        sys.stdout.flush()
        print(exc.line(program), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{program}: interrupted (an operation already submitted continues on the server; "
              "see --journal)", file=sys.stderr)
        return 130


def submit_operation(client: Client, path: str, body: dict, args: argparse.Namespace,
                     describe: Callable[[dict], str], details: Callable[[dict], list[str]] | None = None) -> dict:
    """POST an operation, follow it with a progress line and print the outcome (one line, the timing line,
    then `details`, failed or not); a failure raises CliError."""
    response = client.post(path, body)
    operation = json_body(response)
    location = response.headers.get("Location")
    if args.no_wait:
        if args.json:
            output.print_json(output.project("operation", operation))
        else:
            print(f"operation {operation.get('id')} submitted ({operation.get('state')}); "
                  f"follow it with: flexzone --status {operation.get('id')}")
        return operation
    operation = follow(client, operation, location, max_wait=args.wait, progress=make_progress(args.json))
    ok = operation.get("state") == "succeeded"
    if args.json:
        output.print_json(output.project("operation", operation))
    else:
        word = "done" if ok else operation.get("state", "failed").replace("_", " ")
        print(f"operation {operation.get('id')} {word}: {describe(operation)}")
        print(output.timing_line(operation))
        for line in details(operation) if details else []:
            print(line)
    if not ok:
        error = operation.get("error") or "no reason recorded"
        raise_failed(operation, error)
    return operation


def raise_failed(operation: dict, error: str) -> None:
    state = operation.get("state", "failed").replace("_", " ")
    raise CliError(f"operation {operation.get('id')} {state}: {error}",
                   f"`flexzone --journal {operation.get('id')}` shows what happened", OPERATION_FAILED)

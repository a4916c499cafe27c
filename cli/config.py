"""Where the clients find the service and their certificate.

The configuration file is TOML with four keys (and an optional timeout)::

    # ~/.flexzone/config.toml
    server = "https://127.0.0.1:8443"   # the API's base URL (https only)
    ca = "pki/ca.pem"                   # CA that signed the server's certificate
    cert = "pki/alice.pem"              # this user's client certificate (PEM)
    key = "pki/alice.key"               # its private key (PEM, unencrypted)
    timeout = 30                        # optional: seconds to wait for one HTTP answer

Relative paths are taken from the directory holding the file, so a whole directory (such as
`.demo/`) can move. Which file is read: `$FLEXZONE_CONFIG` when set, else `~/.flexzone/config.toml`.
Flags (`--server`, `--ca`, `--cert`, `--key`) override single values; relative paths given as
flags are taken from the current directory. `write_config` writes such a file (`make demo` uses it).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cli.errors import USAGE, CliError

ENV_VAR = "FLEXZONE_CONFIG"
KEYS = ("server", "ca", "cert", "key")
DEFAULT_TIMEOUT = 30.0


def default_path() -> Path:
    return Path.home() / ".flexzone" / "config.toml"


@dataclass(frozen=True)
class Config:
    server: str
    ca: Path
    cert: Path
    key: Path
    timeout: float = DEFAULT_TIMEOUT
    source: str = "flags"

    def as_dict(self) -> dict:
        return {"server": self.server, "ca": str(self.ca), "cert": str(self.cert), "key": str(self.key),
                "timeout": self.timeout, "source": self.source}


def _config_error(message: str, source: str) -> CliError:
    hint = f"fix {source}" if source != "flags" else "see --help for --server, --ca, --cert and --key"
    return CliError(message, hint, USAGE)


def read_file(path: Path) -> dict:
    """The file's values with paths resolved against its directory."""
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise CliError(f"configuration file {path} does not exist",
                       f"create it with server, ca, cert and key (see `flexzone --help`) or set {ENV_VAR}",
                       USAGE) from None
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"configuration file {path} is not valid TOML: {exc}", "check its syntax", USAGE) from None
    except OSError as exc:
        raise CliError(f"cannot read configuration file {path}: {exc.strerror}", "check its permissions",
                       USAGE) from None
    unknown = sorted(set(data) - {*KEYS, "timeout"})
    if unknown:
        raise CliError(f"configuration file {path} has unknown key(s): {', '.join(unknown)}",
                       f"the keys are {', '.join(KEYS)} and timeout", USAGE)
    values: dict = {}
    for name in KEYS:
        if name in data:
            if not isinstance(data[name], str) or not data[name]:
                raise CliError(f"{path}: {name} must be a non-empty string", f"e.g. {name} = \"...\"", USAGE)
            values[name] = data[name] if name == "server" else str(path.parent / Path(data[name]).expanduser())
    if "timeout" in data:
        timeout = data["timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise CliError(f"{path}: timeout must be a positive number of seconds", "e.g. timeout = 30", USAGE)
        values["timeout"] = float(timeout)
    return values


def load_config(flags: dict[str, str | None], environ: Mapping[str, str] | None = None) -> Config:
    """Flags over the file named by $FLEXZONE_CONFIG (or ~/.flexzone/config.toml) over nothing."""
    explicit = (os.environ if environ is None else environ).get(ENV_VAR)
    values: dict = {}
    source = "flags"
    if explicit:
        path = Path(explicit).expanduser()
        values, source = read_file(path), str(path)
    elif default_path().exists():
        values, source = read_file(default_path()), str(default_path())
    for name in KEYS:
        if flag := flags.get(name):
            values[name] = flag if name == "server" else str(Path(flag).expanduser())
    missing = [name for name in KEYS if not values.get(name)]
    if missing:
        if source == "flags":
            raise CliError(
                f"no configuration: {', '.join(missing)} not given and {default_path()} does not exist",
                f"create {default_path()} with server, ca, cert and key, set {ENV_VAR}=PATH, "
                "or pass --server --ca --cert --key",
                USAGE,
            )
        raise _config_error(f"{', '.join(missing)} missing from {source}", source)
    server = values["server"].rstrip("/")
    try:
        parts = urlsplit(server)
        valid = parts.scheme == "https" and bool(parts.hostname) and (parts.port is None or parts.port > 0)
        valid = valid and not any(char.isspace() for char in server) and not parts.query and not parts.fragment
    except ValueError:  # an unclosed [IPv6] bracket, a port that is not a number...
        valid = False
    if not valid:
        raise _config_error(f"server must be an https:// URL (host, optional port and path), got {server!r}", source)
    config = Config(server=server, ca=Path(values["ca"]), cert=Path(values["cert"]), key=Path(values["key"]),
                    timeout=values.get("timeout", DEFAULT_TIMEOUT), source=source)
    for name in ("ca", "cert", "key"):
        path = getattr(config, name)
        if not path.is_file():
            where = f"--{name}" if flags.get(name) else source
            raise CliError(f"{name} file {path} does not exist", f"check {name} in {where}", USAGE)
    return config


def _relative(path: Path, directory: Path) -> str:
    try:
        return str(path.resolve().relative_to(directory.resolve()))
    except ValueError:
        return str(path.resolve())


def write_config(path: str | Path, *, server: str, ca: str | Path, cert: str | Path, key: str | Path,
                 timeout: float | None = None) -> Path:
    """Write a configuration file; paths inside its directory are stored relative to it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# flexzone client configuration (paths are relative to this file's directory)",
             f"server = {_toml_string(server)}"]
    for name, value in (("ca", ca), ("cert", cert), ("key", key)):
        lines.append(f"{name} = {_toml_string(_relative(Path(value), path.parent))}")
    if timeout is not None:
        lines.append(f"timeout = {float(timeout)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'

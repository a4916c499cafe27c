"""Human tables, the stable JSON projections (`--json`), durations and the timing summary line."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

# The field names of every --json record. They are the clients' contract with scripts: add fields,
# never rename or remove one (cli/README.md documents them).
FIELDS: dict[str, tuple[str, ...]] = {
    "link": ("id", "state", "site", "device", "router", "port", "zone", "remote_ip", "lease_expires_at",
             "up_at", "down_at"),
    "site": ("id", "name", "display_name", "msan_id", "management_ip", "data_ip", "router_port", "description"),
    "zone": ("id", "zone_id", "description"),
    "device": ("id", "device_id", "description", "wwn", "zone", "owner_site", "shareable"),
    "router": ("id", "name", "site", "platform", "transport", "host", "port", "transport_security",
               "ssh_host_key_sha256"),
    "host": ("id", "name", "site", "initiators", "description"),
    "grant": ("id", "site", "device", "owner_site", "zone", "exclusive", "state", "origin", "initiators",
              "acquired_at", "expires_at", "operation"),
    "operation": ("id", "url", "kind", "state", "phase", "principal", "request", "plan", "result", "error", "attempts",
                  "registry_ms", "invocation_ms", "router_ms", "total_ms", "created_at", "started_at",
                  "finished_at"),
    "router_link": ("router", "port", "zone", "remote_ip", "state", "oper"),
    "zoning_image": ("id", "router", "operation", "taken_at", "before", "after", "changes", "restore"),
}


def project(kind: str, item: dict) -> dict:
    return {name: item.get(name) for name in FIELDS[kind]}


def print_json(data: Any, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    json.dump(data, stream, indent=2, sort_keys=False)
    stream.write("\n")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], stream: TextIO | None = None) -> None:
    """A plain aligned table; an empty listing says so instead of printing headers alone."""
    stream = stream or sys.stdout
    text_rows = [[_cell(value) for value in row] for row in rows]
    if not text_rows:
        stream.write("(none)\n")
        return
    widths = [max(len(headers[i]), *(len(row[i]) for row in text_rows)) for i in range(len(headers))]
    for row in [list(headers), *text_rows]:
        stream.write("  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip() + "\n")


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.0f}"
    return " ".join(str(value).split())


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> int:
    """'90s', '30m', '2h', '1d', '1h30m' or plain seconds -> whole seconds (ValueError when not one)."""
    cleaned = text.strip().lower()
    if cleaned.isdigit():
        return int(cleaned)
    matched = _DURATION.findall(cleaned)
    if not matched or _DURATION.sub("", cleaned).strip():
        raise ValueError(f"{text!r} is not a duration such as 90s, 30m, 2h, 1d or 1h30m")
    return int(sum(float(number) * _UNIT[unit] for number, unit in matched))


def human_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s" if seconds else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


def parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def lease_text(expires_at: str | None, now: dt.datetime | None = None) -> str:
    expires = parse_time(expires_at)
    if expires is None:
        return "-"
    now = now or dt.datetime.now(dt.UTC)
    left = (expires - now).total_seconds()
    when = expires.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{when} ({human_duration(left)} left)" if left > 0 else f"{when} (expired)"


def short_time(value: str | None) -> str:
    parsed = parse_time(value)
    return parsed.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S") if parsed else "-"


def timing_line(operation: dict) -> str:
    """The one-line summary after an operation: the seed's registry / invocation / router split."""
    def ms(name: str) -> str:
        value = operation.get(name)
        return f"{value:.0f} ms" if isinstance(value, int | float) else "?"

    return (f"timing: registry {ms('registry_ms')} · invocation {ms('invocation_ms')} · "
            f"router {ms('router_ms')} · total {ms('total_ms')}")

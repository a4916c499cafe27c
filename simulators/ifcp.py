"""Shared iFCP data model for the SYNTHETIC McData Eclipse and Nishan IPS 3000 personalities.

SYNTHETIC: no public CLI transcript of either product exists (see simulators/README.md). The model
follows RFC 4172 (iFCP) and RFC 4369 (its MIB): a local gateway instance fronts the FC ports; an
iFCP connection here is what the registry calls a link, the binding of one local FC port and one
zone (an iSNS discovery domain) to one remote gateway (IP, TCP 3420), over which the gateway opens
N_Port sessions for the zone's members with CBIND and closes them with UNBIND.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from routers.drivers.base import RouterLink

IFCP_TCP_PORT = 3420  # IANA well-known port for iFCP (RFC 4172)


def connections(running: dict[str, Any]) -> list[dict[str, Any]]:
    return running.setdefault("connections", [])


def find(running: dict[str, Any], port: int, zone: int, remote: str) -> dict[str, Any] | None:
    for item in connections(running):
        if (item["port"], item["zone"], item["remote"]) == (port, zone, remote):
            return item
    return None


def links(running: dict[str, Any]) -> list[RouterLink]:
    return [
        RouterLink(port=item["port"], zone=item["zone"], remote_ip=item["remote"], state=item.get("state", "up"))
        for item in sorted(connections(running), key=lambda c: (c["port"], c["zone"], c["remote"]))
    ]


def parse_int(text: str, low: int, high: int) -> int | None:
    """A decimal integer in [low, high], or None."""
    if not text.isdigit():
        return None
    value = int(text)
    return value if low <= value <= high else None


def parse_ip(text: str) -> str | None:
    """A canonical unicast IPv4/IPv6 address, or None (a gateway cannot be multicast or unspecified)."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.is_multicast or address.is_unspecified or str(address) != text:
        return None
    return text


def remote_gateways(running: dict[str, Any]) -> list[tuple[str, int]]:
    """(remote gateway IP, number of connections to it), in address order."""
    counts: dict[str, int] = {}
    for item in connections(running):
        counts[item["remote"]] = counts.get(item["remote"], 0) + 1
    return sorted(counts.items(), key=lambda pair: ipaddress.ip_address(pair[0]))

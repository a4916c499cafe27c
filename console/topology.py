"""The topology picture: sites as nodes on a circle, their routers beside them, and one curve per
connection (a site reaching a device another site owns), coloured by the state of its links.

A connection is a site holding a device (its lock) and the link records that serve it: the active ones
of that site towards the device's zone and owner (devices of one zone share their links), and a
failed one while no newer record of the same router endpoint replaced it. Records no lock holds (a
failed add, a link found on a router) are drawn by their own device. A connection's state is the
most urgent of its records' (failed, then drifted, then configuring, then up); a record is drifted
when the last reconcile of its router left it differing and nothing changed it since. The geometry
is computed here and drawn as inline SVG by the template: no script or library is needed to see it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef

from access.models import Principal
from access.permissions import visible
from operations.models import Grant, Link
from registry.models import Router, Site

WIDTH, HEIGHT = 960, 620
RADIUS, NODE_RADIUS = 190, 46
CURVE_SPACING = 46
URGENCY = ("failed", "drifted", "configuring", "up")  # the first that any record has is the connection's


@dataclass
class RouterBox:
    router: Router
    x: float
    y: float
    drift: int = 0  # differences its last reconcile left (extra links are on no curve)

    @property
    def platform(self) -> str:
        """"McData Eclipse" of "McData Eclipse (iFCP, telnet)"."""
        return self.router.get_platform_display().split(" (")[0]


@dataclass
class Node:
    site: Site
    x: float
    y: float
    routers: list[RouterBox] = field(default_factory=list)


@dataclass
class Connection:
    site: Site  # the requesting site
    owner: Site  # the device's owning site
    device: Any
    links: list[Link]
    state: str = "up"
    path: str = ""
    label_x: float = 0.0
    label_y: float = 0.0
    lease_expires_at: datetime | None = None


def link_state(link: Link, drifted: bool) -> str:
    """The picture's four states: removing and requested count as configuring (work under way)."""
    if link.state == Link.State.FAILED:
        return "failed"
    if drifted:
        return "drifted"
    return "up" if link.state == Link.State.UP else "configuring"


def drifted_links(reports: dict[str, dict[str, Any]], links: list[Link]) -> set[int]:
    """The records whose router's last reconcile left them differing from it, unchanged since."""
    found: set[int] = set()
    for link in links:
        report = reports.get(link.router.name)
        if not report or link.updated_at > report["finished_at"]:
            continue
        key = link.key
        wrong = {(item["port"], item["zone"], item["remote_ip"])
                 for items in report["outstanding"].values() for item in items}
        if key in wrong:
            found.add(link.pk)
    return found


def shown_links(principal: Principal | None) -> list[Link]:
    """The links the picture shows: those the principal may see (`visible`), a failed one only until a
    newer record of its endpoint replaces it."""
    newer = Link.objects.filter(router=OuterRef("router"), port=OuterRef("port"), zone=OuterRef("zone"),
                                remote_ip=OuterRef("remote_ip"), created_at__gt=OuterRef("created_at"))
    return list(
        visible(Link.objects.all(), principal).filter(state__in=[*Link.ACTIVE_STATES, Link.State.FAILED])
        .annotate(replaced=Exists(newer))
        .exclude(state=Link.State.FAILED, replaced=True)
        .select_related("site", "device", "device__owner_site", "router")
        .order_by("site__name", "device__description", "router__name")
    )


def held_connections(links: list[Link], principal: Principal | None) -> list[Connection]:
    """One connection per lock the principal may see, with the links that serve it; then the links no
    such lock holds, by device."""
    serving: dict[tuple[int, int, int], list[Link]] = {}
    for link in links:
        serving.setdefault((link.site_id, link.zone_id, link.device.owner_site_id), []).append(link)
    connections: list[Connection] = []
    held: set[int] = set()
    locks = visible(Grant.objects.select_related("site", "device", "device__owner_site"), principal).order_by(
        "site__name", "device__description")
    for lock in locks:
        served = serving.get((lock.site_id, lock.device.zone_id, lock.device.owner_site_id))
        if served and lock.site_id != lock.device.owner_site_id:
            connections.append(Connection(lock.site, lock.device.owner_site, lock.device, served,
                                          lease_expires_at=lock.expires_at))
            held.update(link.pk for link in served)
    unheld: dict[tuple[int, int], Connection] = {}
    for link in links:
        if link.pk not in held and link.site_id != link.device.owner_site_id:
            connection = unheld.setdefault((link.site_id, link.device_id),
                                           Connection(link.site, link.device.owner_site, link.device, []))
            connection.links.append(link)
            if link.lease_expires_at and (connection.lease_expires_at is None
                                          or link.lease_expires_at < connection.lease_expires_at):
                connection.lease_expires_at = link.lease_expires_at
    return connections + list(unheld.values())


def _circle(count: int) -> list[tuple[float, float]]:
    if count == 1:
        return [(WIDTH / 2, HEIGHT / 2)]
    return [(WIDTH / 2 + RADIUS * math.cos(-math.pi / 2 + 2 * math.pi * i / count),
             HEIGHT / 2 + RADIUS * math.sin(-math.pi / 2 + 2 * math.pi * i / count)) for i in range(count)]


def _curve(a: Node, b: Node, offset: float) -> tuple[str, float, float]:
    """A quadratic curve from a to b bowed sideways by `offset` px; its midpoint for the label."""
    mx, my = (a.x + b.x) / 2, (a.y + b.y) / 2
    dx, dy = b.x - a.x, b.y - a.y
    length = math.hypot(dx, dy) or 1.0
    cx, cy = mx - dy / length * offset, my + dx / length * offset
    label_x, label_y = 0.25 * a.x + 0.5 * cx + 0.25 * b.x, 0.25 * a.y + 0.5 * cy + 0.25 * b.y
    return f"M {a.x:.1f} {a.y:.1f} Q {cx:.1f} {cy:.1f} {b.x:.1f} {b.y:.1f}", label_x, label_y


def build(reports: dict[str, dict[str, Any]], principal: Principal | None) -> dict[str, Any]:
    """Nodes, router boxes and connections with their geometry, for the topology template: every site and
    router, and the connections the principal may see."""
    sites = list(Site.objects.order_by("name").prefetch_related("routers"))
    nodes = {site.pk: Node(site, x, y) for site, (x, y) in zip(sites, _circle(len(sites)), strict=True)}
    for node in nodes.values():
        outward = math.atan2(node.y - HEIGHT / 2, node.x - WIDTH / 2) if len(nodes) > 1 else math.pi / 2
        for index, router in enumerate(node.site.routers.all()):
            distance = NODE_RADIUS + 50 + 40 * index
            drift = sum(map(len, (reports.get(router.name) or {}).get("outstanding", {}).values()))
            node.routers.append(RouterBox(router, node.x + distance * math.cos(outward),
                                          node.y + distance * math.sin(outward), drift))
    links = shown_links(principal)
    drifted = drifted_links(reports, links)
    connections = held_connections(links, principal)
    by_pair: dict[frozenset[int], list[Connection]] = {}
    for connection in connections:
        states = {link_state(link, link.pk in drifted) for link in connection.links}
        connection.state = next(state for state in URGENCY if state in states)
        by_pair.setdefault(frozenset((connection.site.pk, connection.owner.pk)), []).append(connection)
    for pair in by_pair.values():
        for index, connection in enumerate(pair):
            # Drawn from the lower site id to the higher whichever way it goes, so that curves of one
            # pair bow apart instead of onto each other.
            a, b = sorted((connection.site.pk, connection.owner.pk))
            offset = (index - (len(pair) - 1) / 2) * CURVE_SPACING
            connection.path, connection.label_x, connection.label_y = _curve(nodes[a], nodes[b], offset)
    return {"width": WIDTH, "height": HEIGHT, "node_radius": NODE_RADIUS, "nodes": list(nodes.values()),
            "connections": connections, "drifted": drifted}

"""The operator console: server-rendered pages over the registry and the journal.

Every page is a GET for a principal of at least viewer role (console.access); what a page offers
beyond reading (connect, disconnect, check, repair) is shown only to the roles the API will accept it
from, and is sent by console.js to the API as JSON, where the roles and scopes are enforced again.
Pages that show something in progress carry `data-refresh`: console.js re-fetches the page and swaps
that element until the server renders it without the attribute (the work is over).
"""

from __future__ import annotations

import json

from django.db.models import Count, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from access import redaction
from access.models import Role
from access.permissions import has_role, visible, within_site_scope, within_zone_scope
from console import topology
from console.access import console_page
from operations.drift_reports import DRIFT_KINDS, last_reports
from operations.models import TERMINAL_STATES, Grant, Link, Operation
from registry.models import Device, Host, Router, Site, Zone
from routers.drivers import DRIVERS
from routers.drivers.zoning_restore import differences as zoning_differences

PHASES = [(value, label.lower()) for value, label in Operation.Phase.choices]  # queued ... on router ... done
RECENT = 50  # ended operations listed
LIVE = 100  # running and queued operations listed (the page says how many more there are)


def _page(request, template: str, context: dict, **kwargs):
    principal = request.principal
    base = {"principal": principal, "can_operate": has_role(principal, Role.OPERATOR),
            "is_admin": has_role(principal, Role.ADMIN)}
    return render(request, f"console/{template}", {**base, **context}, **kwargs)


@require_safe
@console_page()
def topology_page(request):
    return _page(request, "topology.html", {"picture": topology.build(last_reports(), request.principal),
                                            "section": "topology"})


def describe(op: Operation) -> str:
    """One line saying what an operation was asked to do."""
    request = op.request or {}
    target = request.get("device_description") or request.get("wwn") or (
        f"zone {request['zone']}" if request.get("zone") is not None else "")
    if op.kind in (Operation.Kind.ADD, Operation.Kind.REMOVE, Operation.Kind.EXPIRE):
        arrow = {"add": "→", "remove": "✕", "expire": "lease ran out:"}[op.kind]
        return f"{request.get('site', '?')} {arrow} {target}"
    if op.kind == Operation.Kind.INVOKE:
        return " ".join(str(part) for part in (request.get("command"), request.get("router"), request.get("port"),
                                               request.get("zone"), request.get("remote_ip")) if part is not None)
    if op.kind == Operation.Kind.RECONCILE:
        scope = request.get("router") or "every router"
        return f"{'repair' if request.get('repair') else 'check'} {scope} (policy {request.get('policy', 'registry')})"
    return request.get("router") or "every router"


def _filtered(request):
    operations = Operation.objects.select_related("principal").defer("transcript")
    filters = {}
    for name, choices in (("state", Operation.State.values), ("kind", Operation.Kind.values)):
        value = request.GET.get(name, "")
        if value in choices:
            filters[name] = value
    return operations.filter(**filters), filters


@require_safe
@console_page()
def operations_page(request):
    operations, filters = _filtered(request)
    live_rows = operations.filter(state__in=(Operation.State.QUEUED, Operation.State.RUNNING))
    live = list(live_rows.order_by("pk")[:LIVE])
    more = live_rows.count() - LIVE if len(live) == LIVE else 0
    ended = list(operations.filter(state__in=TERMINAL_STATES).order_by("-pk")[:RECENT])
    for op in (*live, *ended):
        op.summary = describe(op)
    return _page(request, "operations.html", {
        "live": live, "more": more, "ended": ended, "filters": filters, "section": "operations",
        "states": Operation.State.values, "kinds": Operation.Kind.values,
    })


def timing_bar(op: Operation) -> list[dict]:
    """The three phases as consecutive segments of a bar 100 units long (the seed's Figure 11-13)."""
    parts = [("registry", op.registry_ms), ("invocation", op.invocation_ms), ("router", op.router_ms)]
    total = sum(ms for _, ms in parts) or 1.0
    segments, x = [], 0.0
    for name, ms in parts:
        width = 100 * ms / total
        segments.append({"name": name, "ms": ms, "x": round(x, 2), "width": round(width, 2)})
        x += width
    return segments


@require_safe
@console_page()
def operation_page(request, pk: int):
    operations = Operation.objects.select_related("principal")
    if not has_role(request.principal, Role.ADMIN):
        operations = operations.defer("transcript")  # shown to admins only; this page is re-read twice a second
    op = get_object_or_404(operations, pk=pk)
    hidden = redaction.for_request(request)  # other sites' initiator WWNs, out of everything shown
    op.request, op.plan, op.result, op.error = (hidden.redact(value) for value in (op.request, op.plan, op.result,
                                                                                  op.error))
    done = op.state in TERMINAL_STATES
    phase = "done" if done else op.phase
    reached = [key for key, _ in PHASES].index(phase) if phase in dict(PHASES) else 0
    steps = [{"key": key, "label": label, "reached": index <= reached, "current": index == reached}
             for index, (key, label) in enumerate(PHASES)]
    return _page(request, "operation.html", {
        "op": op, "summary": describe(op), "done": done, "phase": phase, "phases": steps,
        "timing": timing_bar(op), "plan_steps": (op.plan or {}).get("steps") or [],
        "reports": reconcile_reports(op), "request_json": json.dumps(op.request, indent=2, sort_keys=True),
        "zoning_images": zoning_images(op) if has_role(request.principal, Role.ADMIN) else [],
        "section": "operations",
    })


def zoning_images(op: Operation) -> list[dict]:
    """The zoning in force before and after each of the operation's zoning changes (admins' view)."""
    shown = []
    for image in op.zoning_images.select_related("router").order_by("taken_at", "pk"):
        added, removed, changed = zoning_differences(image.before, image.after or image.before)
        shown.append({
            "id": image.pk, "router": image.router.name, "vsan": image.before.get("vsan"), "taken_at": image.taken_at,
            "before_name": image.before.get("in_effect") or "(none)",
            "after_name": "(not read)" if image.after is None else image.after.get("in_effect") or "(none)",
            "changes": [("added", added), ("removed", removed), ("changed", changed)],
            "restore": DRIVERS[image.router.platform].render_restore(image.before, image.after),
            "before_json": json.dumps(image.before, indent=2, sort_keys=True),
            "after_json": json.dumps(image.after, indent=2, sort_keys=True),
        })
    return shown


def reconcile_reports(op: Operation) -> list[dict]:
    """A reconcile's result per router: its error, or each non-empty list with its items as JSON."""
    if op.kind != Operation.Kind.RECONCILE:
        return []
    reports = []
    for router, report in sorted(((op.result or {}).get("routers") or {}).items()):
        lists = [(kind, [json.dumps(item, sort_keys=True) for item in items])
                 for kind, items in report.items() if isinstance(items, list) and items]
        notes = [f"{kind}: {value}" for kind, value in report.items()
                 if kind != "error" and not isinstance(value, list)]
        reports.append({"router": router, "error": report.get("error", ""), "lists": lists, "notes": notes})
    return reports


@require_safe
@console_page()
def connect_page(request):
    principal = request.principal
    sites = within_site_scope(Site.objects.order_by("name"), principal, "pk")
    zones = within_zone_scope(Zone.objects.order_by("zone_id"), principal, "pk")
    return _page(request, "connect.html", {
        "sites": sites, "zones": zones, "section": "connect",
        "devices": Device.objects.select_related("zone", "owner_site").filter(zone__in=zones),
        "hosts": within_site_scope(Host.objects.select_related("site"), principal, "site").order_by("site__name",
                                                                                                    "name"),
        "refusal": "" if has_role(principal, Role.OPERATOR) else
        f"Principal {principal.name} has role {principal.role}; connecting and disconnecting need role operator.",
        "preset": {name: request.GET.get(name, "") for name in ("site", "device", "zone", "action")},
    })


@require_safe
@console_page()
def drift_page(request):
    reports = redaction.for_request(request).redact(last_reports())
    routers = []
    for router in Router.objects.select_related("site").order_by("name"):
        report = reports.get(router.name)
        differences = sum(map(len, report["outstanding"].values())) if report else 0
        routers.append({"router": router, "report": report, "differences": differences,
                        "lists": [(kind, report.get(kind) or []) for kind in (*DRIFT_KINDS, "in_flight", "repaired")]
                        if report else []})
    return _page(request, "drift.html", {"routers": routers, "section": "drift"})


@require_safe
@console_page()
def sites_page(request):
    sites = Site.objects.annotate(device_count=Count("devices", distinct=True)).prefetch_related("routers")
    return _page(request, "sites.html", {"sites": sites.order_by("name"), "section": "sites"})


@require_safe
@console_page()
def site_page(request, name: str):
    site = get_object_or_404(Site, name=name)
    hosts = visible(Host.objects.filter(site=site).prefetch_related("initiators"), request.principal)
    links = (visible(Link.objects.filter(Q(site=site) | Q(device__owner_site=site), state__in=Link.ACTIVE_STATES),
                     request.principal).select_related("site", "device", "router", "zone"))
    return _page(request, "site.html", {
        "site": site, "routers": site.routers.order_by("name"), "hosts": hosts,
        "hosts_hidden": not hosts.exists() and Host.objects.filter(site=site).exists(),
        "devices": site.devices.select_related("zone").order_by("description"), "links": links,
        "section": "sites",
    })


@require_safe
@console_page()
def zones_page(request):
    zones = Zone.objects.prefetch_related(Prefetch("devices", Device.objects.select_related("owner_site")))
    return _page(request, "zones.html", {"zones": zones.order_by("zone_id"), "section": "zones"})


def _devices(principal):
    """Every device, with the grants of it the principal may see (`visible`)."""
    return Device.objects.select_related("zone", "owner_site").prefetch_related(
        Prefetch("grants", visible(Grant.objects.select_related("site"), principal).order_by("acquired_at")))


@require_safe
@console_page()
def devices_page(request):
    return _page(request, "devices.html", {"devices": _devices(request.principal).order_by("description"),
                                           "section": "devices"})


@require_safe
@console_page()
def device_page(request, pk: int):
    device = get_object_or_404(_devices(request.principal), pk=pk)
    links = visible(device.links.filter(state__in=[*Link.ACTIVE_STATES, Link.State.FAILED]),
                    request.principal).select_related("site", "router")
    return _page(request, "device.html", {"device": device, "links": links, "section": "devices"})


@require_safe
@console_page()
def routers_page(request):
    # Each router's active links the principal may see (`visible`): a count says who holds what too.
    seen = visible(Link.objects.filter(router=OuterRef("pk"), state__in=Link.ACTIVE_STATES), request.principal)
    routers = Router.objects.select_related("site").annotate(active_links=Coalesce(Subquery(
        seen.order_by().values("router").annotate(count=Count("pk")).values("count")), 0))
    return _page(request, "routers.html", {"routers": routers.order_by("name"), "section": "routers"})


@require_safe
@console_page()
def link_page(request, pk: int):
    link = get_object_or_404(visible(Link.objects.select_related("site", "device", "router", "zone", "operation"),
                                     request.principal), pk=pk)
    hidden = redaction.for_request(request)
    link.initiators, link.pairs = hidden.redact(link.initiators), hidden.redact(link.pairs)
    report = last_reports().get(link.router.name)
    drifted = link.pk in topology.drifted_links({link.router.name: report}, [link]) if report else False
    return _page(request, "link.html", {"link": link, "drifted": drifted, "report": hidden.redact(report),
                                        "section": "topology"})

"""One scope rule for every page: what each URL shows of who holds what, and of the sites' hosts, is what
`access.permissions.visible` lets the principal see, whoever asks (issue 46, item 3).

Every URL pattern of the API and the console is named below, as a page that shows rows belonging to
sites (grants, links, hosts), checked against `visible` for each principal, or as one that shows none
of them and why; a new pattern fails `test_every_url_pattern_is_checked` until it is one or the other.
Through the real mTLS server, as root (admin), alice (operator: primary-site and remote-site), carol
(operator: primary-site) and bob (a viewer with no site).
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from access.models import Principal
from access.permissions import visible
from operations.models import Grant, Link, Operation
from registry.models import Device, Host, Initiator, Router, Site

PRINCIPALS = ("root", "alice", "carol", "bob")
# The patterns that show rows belonging to sites, each checked below.
SHOWING = {"grant-list", "grant-detail", "link-list", "link-detail", "host-list", "host-detail", "topology", "devices",
           "device", "site", "link", "routers"}
# The patterns that show none, and why.
NOT_SHOWING = {
    "health": "the service's own state", "health-live": "the service's own state", "schema": "the API's schema",
    "docs": "the API's schema", "redoc": "the API's schema", "api-root": "the list of endpoints",
    "metrics": "figures, for the scraper's certificate",
    "plan": "the registry's plan; its delta only for a scope covering its sites (checked below)",
    "connect": "a write the principal may make (require_scope)", "disconnect": "a write (require_scope)",
    "reconcile": "a write (require_scope; checked below)", "invoke": "a write (require_scope)",
    "site-list": "the inventory", "site-detail": "the inventory", "zone-list": "the inventory",
    "zone-detail": "the inventory", "device-list": "the inventory (holders not included)",
    "device-detail": "the inventory (holders not included)", "router-list": "the inventory",
    "router-detail": "the inventory", "operation-list": "the journal, read whole by every reader (not scoped yet)",
    "operation-detail": "the journal (not scoped yet)", "principal-list": "admins only",
    "principal-detail": "admins only", "audit-event-list": "admins only", "audit-event-detail": "admins only",
    "zoning-history-list": "a router's zoning before and after each change (WWNs outside the scope redacted)",
    "zoning-history-detail": "a router's zoning (WWNs outside the scope redacted)",
    "operations": "the journal (not scoped yet)", "operation": "the journal (not scoped yet)",
    "sites": "the inventory", "zones": "the inventory",
    "drift": "each router's reconcile report", "connect-page": "what the principal may act on (within_site_scope)",
}


def _patterns(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if str(pattern.pattern) != "admin/":  # the Django admin: admins only, every row
                yield from _patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.name


def test_every_url_pattern_is_checked():
    names = {"connect-page" if route == "connect/" else name for route, name in _patterns(get_resolver().url_patterns)}
    known = SHOWING | set(NOT_SHOWING)
    assert names == known, (names - known, known - names)


@pytest.fixture
def holds(cast):
    """Three holds: remote-site holds XRAID1 (primary-site's), far-site holds RMT-ARRAY (remote-site's), and
    near-site holds FAR-ARRAY (far-site's), each with its two links; and a host at far-site."""
    zone = cast["xraid1"].zone
    far, near = (Site.objects.create(name=name, display_name=name.upper(), msan_id=msan, management_ip=f"127.0.0.{ip}",
                                     data_ip=f"127.0.0.{ip + 10}", router_port=msan)
                 for name, msan, ip in (("far-site", 7, 17), ("near-site", 8, 18)))
    for site in (far, near):
        Router.objects.create(site=site, name=f"{site.name}-rtr", platform="mcdata_eclipse", transport="telnet",
                              host=site.management_ip, port=23, username="admin", secret_ref=f"file:{site.name}")
    remote = cast["remote"]
    rmt = Device.objects.create(device_id="rmt-array", description="RMT-ARRAY", wwn="50:00:00:00:00:00:0a:01",
                                zone=zone, owner_site=remote)
    fars = Device.objects.create(device_id="far-array", description="FAR-ARRAY", wwn="50:00:00:00:00:00:0a:02",
                                 zone=zone, owner_site=far)
    for site, device in ((remote, cast["xraid1"]), (far, rmt), (near, fars)):
        Grant.objects.create(site=site, device=device, exclusive=True)
        owner = device.owner_site
        for router_site, other in ((owner, site), (site, owner)):
            Link.objects.create(site=site, device=device, router=router_site.routers.first(),
                                port=router_site.router_port, zone=zone, remote_ip=other.data_ip, state="up")
    Initiator.objects.create(host=Host.objects.create(site=far, name="far-host"), wwn="10:00:00:00:c9:00:0a:03")
    return cast


def _expected(name: str):
    principal = Principal.objects.get(name=name)
    return (principal, {(g.site.name, g.device.description) for g in visible(Grant.objects.all(), principal)},
            set(visible(Link.objects.all(), principal).values_list("pk", flat=True)),
            set(visible(Host.objects.all(), principal).values_list("name", flat=True)))


def _all(call, name: str, path: str) -> list[dict]:
    answer = call(name, "GET", f"{path}?limit=1000")
    assert answer.status_code == 200, (name, path, answer.status_code)
    return answer.json()["results"]


def _shown_holds(html: str) -> set[tuple[str, str]]:
    return set(re.findall(r'data-hold="([^"|]+)\|([^"]+)"', html))


def _shown_links(html: str) -> set[int]:
    return {int(pk) for pk in re.findall(r'href="/links/(\d+)/"', html)}


@pytest.mark.parametrize("name", PRINCIPALS)
def test_every_page_shows_what_the_one_rule_lets_the_principal_see(call, holds, name):
    principal, grants, links, hosts = _expected(name)
    if name == "root":
        assert len(grants) == 3 and len(links) == 6 and "far-host" in hosts
    if name == "bob":
        assert not grants and not links and not hosts  # a viewer with no site sees no one's holds
    if name == "carol":  # primary-site: remote-site's hold of XRAID1, primary-site's device
        assert grants == {("remote-site", "XRAID1")}
    # The API: lists and details.
    assert {(g["site"], g["device"]) for g in _all(call, name, "/api/grants/")} == grants
    assert {link["id"] for link in _all(call, name, "/api/links/")} == links
    assert {host["name"] for host in _all(call, name, "/api/hosts/")} == hosts
    for grant in Grant.objects.select_related("site", "device"):
        seen = (grant.site.name, grant.device.description) in grants
        assert call(name, "GET", f"/api/grants/{grant.pk}/").status_code == (200 if seen else 404), (name, grant)
    for link in Link.objects.all():
        assert call(name, "GET", f"/api/links/{link.pk}/").status_code == (200 if link.pk in links else 404)
        assert call(name, "GET", f"/links/{link.pk}/").status_code == (200 if link.pk in links else 404)
    for host in Host.objects.all():
        assert call(name, "GET", f"/api/hosts/{host.pk}/").status_code == (200 if host.name in hosts else 404)
    # The console: the devices' holders, each device's and site's links, the topology.
    assert _shown_holds(call(name, "GET", "/devices/").text) == grants
    shown_holds, shown_links = set(), set()
    for device in Device.objects.all():
        page = call(name, "GET", f"/devices/{device.pk}/").text
        shown_holds |= _shown_holds(page)
        shown_links |= _shown_links(page)
    assert shown_holds == grants and shown_links == links
    sites_links: set[int] = set()
    for site in Site.objects.all():
        sites_links |= _shown_links(call(name, "GET", f"/sites/{site.name}/").text)
    assert sites_links == links
    topology = call(name, "GET", "/").text
    connections = set(re.findall(r'data-site="([^"]+)" data-owner="[^"]+" data-device="([^"]+)"', topology))
    assert _shown_links(topology) == links and connections == grants
    counts = dict(re.findall(r'data-router="([^"]+)">.*?data-active-links="(\d+)"', call(name, "GET", "/routers/").text,
                             re.S))
    assert {router: int(count) for router, count in counts.items() if int(count)} == dict(Counter(
        Link.objects.filter(pk__in=links).values_list("router__name", flat=True)))


def test_a_scoped_operator_reconciles_only_its_sites_routers(call, holds):
    """Issue 46, defect 6: carol (primary-site) asked a reconcile of every router and got one."""
    answer = call("carol", "POST", "/api/reconcile/", json={})
    assert answer.status_code == 202, answer.text
    primary = Site.objects.get(name="primary-site").pk
    assert Operation.objects.get(pk=answer.json()["id"]).request["sites"] == [primary]
    everything = call("root", "POST", "/api/reconcile/", json={})
    assert "sites" not in Operation.objects.get(pk=everything.json()["id"]).request
    Principal.objects.get(name="dave").sites.clear()  # an operator scoped to no site has no router to reconcile
    refused = call("dave", "POST", "/api/reconcile/", json={})
    assert refused.status_code == 403 and "scoped to no site" in refused.json()["detail"]


@pytest.mark.parametrize("name", PRINCIPALS)
def test_a_plan_s_delta_says_who_holds_what_only_to_principals_scoped_to_its_sites(call, holds, name):
    """The delta of a dry run names the holds the links serve ("already up for remote-site's hold of
    XRAID1"): shown when the principal's scope covers the plan's sites, else the plan comes without it."""
    plan = call(name, "GET", "/api/plan/", params={"site": "near-site", "device_description": "FAR-ARRAY"})
    assert plan.status_code == 200
    shown = any("delta" in step for step in plan.json()["steps"])
    assert shown == (name == "root"), (name, plan.json())
    assert ("hold of" in plan.text) == shown

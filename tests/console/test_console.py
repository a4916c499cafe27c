"""The console in Debian's chromium, against the real server over mutual TLS; operations really run
against router simulators where a test uses `cli_lab`. Every test writes screenshots of what it saw."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from operations.models import Link, Operation
from tests.support.sims import wire

# Installed before any script of a page runs (Playwright adds it over the devtools protocol, past the
# page's Content-Security-Policy): every phase the operation page shows, in order, however it gets there.
RECORD_PHASES = """
window.__phases = [];
const record = () => {
  const operation = document.getElementById("operation");
  if (operation && window.__phases[window.__phases.length - 1] !== operation.dataset.phase) {
    window.__phases.push(operation.dataset.phase);
  }
};
document.addEventListener("DOMContentLoaded", () => {
  record();
  new MutationObserver(record).observe(document.body, {childList: true, subtree: true, attributes: true});
});
"""
PIPELINE = ["queued", "connecting", "on_router", "verifying", "done"]
FORCED_CONNECT = """async () => {
  const response = await fetch("/api/connect/", {method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({site: "remote-site", device_description: "XRAID1"})});
  return [response.status, await response.json()];
}"""


@pytest.fixture
def slow_eclipse(cli_lab, sim_factory, cli_secrets):
    """The lab with primary-rtr played by an Eclipse at 0.3 of its real timing (a 3.6 s login instead of 12 s),
    so that an operation stays in its phases long enough for a page re-read twice a second to see them."""
    sim = sim_factory("mcdata_eclipse", telnet=("127.0.0.1", 0), scale=0.3)
    wire(cli_lab.demo["primary_rtr"], sim, cli_secrets)
    return cli_lab


def test_the_topology_shows_the_demo_sites_their_routers_and_no_connection_yet(browser_as, cast):
    bob = browser_as("bob")
    response = bob.open("/")
    assert response.status == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    for site in ("primary-site", "remote-site"):
        expect(bob.page.locator(f"svg.topology a.site[data-site='{site}']")).to_be_visible()
    expect(bob.page.locator("a.router[data-router='primary-rtr']")).to_contain_text("McData Eclipse")
    expect(bob.page.locator("a.router[data-router='remote-rtr']")).to_contain_text("Nishan IPS 3000")
    expect(bob.page.locator("svg.topology a.connection")).to_have_count(0)
    expect(bob.page.locator("#who")).to_contain_text("bob viewer")
    bob.screenshot("topology")
    bob.page.locator("a.site[data-site='remote-site']").click()
    expect(bob.page.locator("h1")).to_contain_text("Site remote-site")
    bob.screenshot("site")


@pytest.mark.slow
def test_an_operator_connects_xraid1_to_remote_site_from_the_form_and_watches_the_phases_until_done(
        browser_as, slow_eclipse):
    alice = browser_as("alice")
    alice.context.add_init_script(RECORD_PHASES)
    alice.open("/connect/")
    alice.page.select_option("#site", "remote-site")
    alice.page.select_option("#device", "XRAID1")
    alice.page.fill("#duration", "600")
    alice.page.click("#plan-button")
    expect(alice.page.locator("#plan-steps > li")).to_have_count(2)
    expect(alice.page.locator("#plan-steps")).to_contain_text("ifcp session add fc-port 8 zone 1 remote-gateway "
                                                              "127.0.0.22")
    expect(alice.page.locator("#plan-steps .delta-create")).to_have_count(2)  # nothing recorded yet
    alice.screenshot("connect-plan")
    alice.page.click("#submit-button")
    alice.page.wait_for_url("**/operations/*/")
    operation = alice.page.locator("#operation")
    expect(operation).to_have_attribute("data-state", "succeeded", timeout=30_000)
    alice.screenshot("operation-done")

    phases = alice.page.evaluate("window.__phases")
    assert phases[0] in ("queued", "connecting") and phases[-1] == "done", phases
    # Live: the login (3.6 s) and at least one later phase were seen on the way, each change going forward
    # (the next router step starts again at connecting or on_router).
    assert "connecting" in phases and {"on_router", "verifying"} & set(phases), phases
    assert all(PIPELINE.index(b) > PIPELINE.index(a) or b in ("connecting", "on_router")
               for a, b in zip(phases, phases[1:], strict=False)), phases
    expect(alice.page.locator("#phases li[aria-current='step']")).to_have_text("done")
    expect(alice.page.locator("#timing rect")).to_have_count(3)
    expect(alice.page.locator("#plan")).to_contain_text("ifcp create fcport=4 zone=1 remote=127.0.0.21")
    expect(alice.page.locator("#transcript")).to_have_count(0)  # transcripts are for admins

    op = Operation.objects.get(pk=int(operation.get_attribute("data-operation")))
    assert (op.kind, op.principal.name, op.request) == ("add", "alice", {"site": "remote-site",
                                                                         "device_description": "XRAID1",
                                                                         "duration": 600})
    assert Link.objects.filter(device__description="XRAID1", state="up").count() == 2

    alice.open("/")
    connection = alice.page.locator("svg.topology a.connection[data-site='remote-site'][data-device='XRAID1']")
    expect(connection).to_have_attribute("data-state", "up")
    expect(alice.page.locator("svg.topology text.lease")).to_have_text(
        re.compile(r"lease (9m|10m) \d+s"))
    alice.screenshot("topology-connected")


def test_a_viewer_sees_no_connect_form_and_a_forced_post_is_refused(browser_as, cast):
    bob = browser_as("bob")
    assert bob.open("/connect/").status == 200
    expect(bob.page.locator("#refusal")).to_have_text(
        "Principal bob has role viewer; connecting and disconnecting need role operator.")
    expect(bob.page.locator("#connect-form")).to_have_count(0)
    expect(bob.page.locator("[data-reconcile]")).to_have_count(0)
    bob.screenshot("connect-refused")
    status, body = bob.page.evaluate(FORCED_CONNECT)
    assert (status, body["detail"]) == (403, "Principal bob has role viewer; POST /api/connect/ needs role operator.")
    assert not Operation.objects.exists()
    bob.open("/drift/")
    expect(bob.page.locator("[data-reconcile]")).to_have_count(0)


@pytest.mark.parametrize("button", ["#plan-button", "#submit-button"])
def test_a_plan_error_names_the_field_and_nothing_is_submitted(browser_as, cast, button):
    carol = browser_as("carol")  # an operator scoped to primary-site and zone 1 only
    carol.open("/connect/")
    expect(carol.page.locator("#site option")).to_have_count(1)
    carol.page.select_option("#site", "primary-site")
    carol.page.select_option("#device", "XRAID1")  # owned by primary-site: nothing to connect to itself
    carol.page.click(button)
    expect(carol.page.locator("#form-error")).to_have_text(
        "device_description: XRAID1 belongs to primary-site itself; no SAN extension is needed.")
    expect(carol.page.locator("#plan-output")).to_be_hidden()
    carol.screenshot("connect-error")
    assert "/connect/" in carol.page.url
    assert not Operation.objects.exists()


@pytest.mark.slow
def test_an_admin_finds_drift_on_the_drift_page_and_repairs_it(browser_as, cli_lab):
    from operations import execute, submit

    execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    # Drift: the registry forgets the link remote-rtr still holds.
    Link.objects.filter(router__name="remote-rtr").update(state=Link.State.DOWN)
    root, alice = browser_as("root"), browser_as("alice")

    alice.open("/drift/")
    expect(alice.page.locator("[data-reconcile='repair']")).to_have_count(0)  # operators check, admins repair
    alice.page.click("[data-reconcile='check']")
    alice.page.wait_for_url("**/operations/*/")
    expect(alice.page.locator("#operation")).to_have_attribute("data-state", "succeeded", timeout=30_000)
    alice.open("/drift/")
    expect(alice.page.locator("tr[data-router='remote-rtr']")).to_have_attribute("data-differences", "1")
    expect(alice.page.locator("tr[data-router='primary-rtr']")).to_have_attribute("data-differences", "0")
    alice.screenshot("drift-found")
    alice.open("/")
    expect(alice.page.locator("a.router[data-router='remote-rtr'] rect.drift")).to_have_count(1)

    root.page.on("dialog", lambda dialog: dialog.accept())
    root.open("/drift/")
    root.page.click("[data-reconcile='repair']")
    root.page.wait_for_url("**/operations/*/")
    expect(root.page.locator("#operation")).to_have_attribute("data-state", "succeeded", timeout=30_000)
    expect(root.page.locator("#transcript")).to_contain_text("remote-rtr")  # admins see the session
    root.screenshot("repair-done")
    root.open("/drift/")
    expect(root.page.locator("tr[data-router='remote-rtr']")).to_have_attribute("data-differences", "0")
    root.screenshot("drift-repaired")


@pytest.mark.slow
def test_every_page_renders_for_an_admin_with_nothing_from_another_host(browser_as, cli_lab):
    from operations import execute, submit

    execute(submit("add", {"site": "primary-site", "device_description": "XRAID2", "duration": 3600}).pk)
    link = Link.objects.filter(state="up").first()
    op = Operation.objects.latest("pk")
    root = browser_as("root")
    errors: list[str] = []
    root.page.on("pageerror", lambda error: errors.append(str(error)))
    root.page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    pages = {"topology": "/", "operations": "/operations/", "operation": f"/operations/{op.pk}/",
             "connect": "/connect/", "drift": "/drift/", "sites": "/sites/", "site": "/sites/primary-site/",
             "zones": "/zones/", "devices": "/devices/", "device": f"/devices/{link.device_id}/",
             "routers": "/routers/", "link": f"/links/{link.pk}/"}
    for label, path in pages.items():
        response = root.open(path)
        assert response.status == 200, (path, response.status)
        expect(root.page.locator("h1")).to_be_visible()
        root.screenshot(label)
    assert errors == []
    root.open("/devices/")
    expect(root.page.locator("tr[data-device='XRAID2'] .holders")).to_contain_text("primary-site (exclusive), lease")
    root.open(f"/operations/{op.pk}/")
    expect(root.page.locator("#transcript")).to_contain_text("primary-rtr")

"""The browser harness itself, on pages that exist without the console: the admin, the API docs, and the
JSON calls a page makes, through Playwright's client-certificate proxy to the real server."""

from __future__ import annotations

import json
import shutil
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import expect

from access import pki
from access.models import AuditEvent

RECONCILE = "async (init) => { const r = await fetch('/api/reconcile/', init); return [r.status, await r.json()]; }"
JSON_POST = {"method": "POST", "headers": {"Content-Type": "application/json"},
             "body": '{"repair": false, "policy": "registry"}'}


def test_an_admin_sees_the_admin_index_signed_in_by_certificate(browser_as, cast):
    root = browser_as("root")
    assert root.open("/admin/").status == 200
    expect(root.page.locator("#site-name")).to_contain_text("administration")
    expect(root.page.locator("#user-tools")).to_contain_text("principal:root")
    assert root.screenshot("admin-index").stat().st_size > 0


def test_an_operator_is_refused_the_admin_saying_why(browser_as, cast):
    alice = browser_as("alice")
    assert alice.open("/admin/").status == 403
    expect(alice.page.locator("body")).to_contain_text("Principal alice has role operator")
    expect(alice.page.locator("body")).to_contain_text("admins only")
    alice.screenshot("admin-refused")


def test_a_viewer_reads_the_api_docs_and_every_asset_comes_from_the_server(browser_as, cast):
    bob = browser_as("bob")
    loaded: list[str] = []
    bob.page.on("request", lambda request: loaded.append(request.url))
    assert bob.open("/api/docs/").status == 200
    expect(bob.page.locator(".swagger-ui .info .title")).to_contain_text("flexzone API")
    expect(bob.page.locator(".swagger-ui")).to_contain_text("/api/reconcile/")
    bob.screenshot("api-docs")
    assert any(url.endswith(".js") for url in loaded) and any("/api/schema/" in url for url in loaded)
    assert all(url.startswith(bob.origin + "/") for url in loaded if not url.startswith("data:")), loaded
    assert bob.elsewhere == []


def test_a_pages_json_post_is_same_origin_so_a_viewer_gets_the_role_message_and_an_operator_is_accepted(
        browser_as, cast):
    bob, alice = browser_as("bob"), browser_as("alice")
    for visitor in (bob, alice):
        visitor.open("/api/health/")  # any page of the service will do
    status, body = bob.page.evaluate(RECONCILE, JSON_POST)
    assert (status, body["detail"]) == (403, "Principal bob has role viewer; POST /api/reconcile/ needs role operator.")
    status, body = alice.page.evaluate(RECONCILE, JSON_POST)
    assert status == 202, body  # queued: the same-origin check let the page's write through


def test_a_write_from_another_sites_page_reaches_the_server_with_its_origin_and_is_refused(browser_as, cast):
    alice = browser_as("alice")
    # A page "at https://elsewhere.example", made up inside the browser: nothing leaves for that host.
    alice.page.route("https://elsewhere.example/", lambda route: route.fulfill(content_type="text/html",
                                                                              body="<h1>not flexzone</h1>"))
    alice.page.goto("https://elsewhere.example/")
    # The one write such a page can make without a CORS preflight (which this service never grants).
    no_cors = {**JSON_POST, "mode": "no-cors", "credentials": "include", "headers": {"Content-Type": "text/plain"}}
    with alice.page.expect_response(f"{alice.origin}/api/reconcile/") as answered:
        alice.page.evaluate("(args) => fetch(args[0], args[1]).catch(() => null)",
                            [f"{alice.origin}/api/reconcile/", no_cors])
    assert answered.value.status == 403  # opaque to the page; Playwright sees the server's answer
    refusal = AuditEvent.objects.filter(path="/api/reconcile/").latest("pk")
    assert (refusal.principal_name, refusal.outcome) == ("alice", "denied")
    assert refusal.detail.startswith("Cross-site request refused: this POST came from a page at "
                                     "https://elsewhere.example"), refusal.detail
    assert alice.elsewhere == ["https://elsewhere.example/"]
    alice.elsewhere.clear()  # on purpose: fulfilled inside the browser, never sent


@dataclass
class LoopbackServer:
    url: str


@pytest.fixture
def https_on_loopback(request, api_pki, tmp_path) -> Iterator[LoopbackServer]:
    """An HTTPS server on 127.0.0.1 that answers with the request headers it received, as JSON. Its
    certificate is the kind the parameter names: the flexzone CA's for 127.0.0.1 ("trusted"), the
    flexzone CA's for another name, or one from another CA with the flexzone CA's exact name."""
    directory = tmp_path / "pki"
    if request.param == "another CA of the same name":
        pki.init_ca(directory, "flexzone API CA").issue(pki.SERVER, server=True)
    else:
        shutil.copytree(api_pki.dir, directory)
        hosts = ("127.0.0.1",) if request.param == "trusted" else ("elsewhere.example",)
        pki.CA.load(directory).issue(pki.SERVER, server=True, hosts=hosts)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "server.pem", directory / "server.key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HeadersEcho)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="https-on-loopback", daemon=True)
    thread.start()
    try:
        yield LoopbackServer(f"https://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _HeadersEcho(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(dict(self.headers.items())).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.do_GET()

    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize("https_on_loopback", ["trusted"], indirect=True)
def test_origin_and_sec_fetch_site_pass_through_the_certificate_proxy_as_the_browser_wrote_them(
        browser_as, https_on_loopback):
    # Playwright reports the headers the page asked for, not the ones chromium's network stack adds
    # (Sec-Fetch-*), so this asks a server what arrived.
    alice = browser_as("alice", https_on_loopback)
    alice.open("/")
    received = alice.page.evaluate("async (init) => (await fetch('/echo', init)).json()", JSON_POST)
    assert (received["Origin"], received["Sec-Fetch-Site"]) == (alice.origin, "same-origin"), received
    assert received["Sec-Fetch-Mode"] == "cors" and received["Content-Type"] == "application/json"


@pytest.mark.parametrize(("https_on_loopback", "reason"), [
    ("another CA of the same name", "unable to verify the first certificate"),
    ("the flexzone CA, another host name", "Hostname/IP does not match certificate's altnames"),
], indirect=["https_on_loopback"])
def test_the_certificate_proxy_refuses_a_server_the_flexzone_ca_did_not_vouch_for(browser_as, https_on_loopback,
                                                                                  reason):
    alice = browser_as("alice", https_on_loopback)
    response = alice.open("/")
    assert response.status == 503  # Playwright's own page: nothing was asked of the server
    expect(alice.page.locator("body")).to_contain_text(f"Playwright client-certificate error: {reason}")
    assert "user-agent" not in alice.page.content().lower()  # no echo of the request
    alice.screenshot("refused")


def test_screenshots_land_in_one_directory_per_test(browser_as, cast, browser_shots):
    bob = browser_as("bob")
    bob.open("/api/health/")
    path = bob.screenshot("health: json")
    assert path == browser_shots / "bob-health-json.png" and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert browser_shots.parts[-2:] == (Path(__file__).stem, "test_screenshots_land_in_one_directory_per_test")


def test_a_page_asking_for_another_host_is_blocked_in_the_browser_and_the_request_recorded(browser_as):
    bob = browser_as("bob")
    failures: list[str | None] = []
    bob.page.on("requestfailed", lambda request: failures.append(request.failure))
    elsewhere = "https://cdn.jsdelivr.net/npm/swagger-ui-dist/swagger-ui-bundle.js"  # a CDN, as the API docs once had
    bob.page.set_content(f'<script src="{elsewhere}"></script>')
    assert bob.elsewhere == [elsewhere]
    assert len(failures) == 1 and failures[0].startswith("net::ERR_BLOCKED_BY_CLIENT"), failures
    bob.elsewhere.clear()  # on purpose


def test_a_test_that_uses_the_lab_browses_the_labs_server(browser_as, cli_lab):
    alice = browser_as("alice")
    assert alice.origin == cli_lab.server.url
    assert alice.open("/api/routers/").status == 200
    expect(alice.page.locator("body")).to_contain_text("primary-rtr")

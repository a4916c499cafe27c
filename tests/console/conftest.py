"""Browser tests: Debian's chromium driven by Playwright for Python against the real server over mutual TLS.

    def test_a_viewer_reads_the_api_docs(browser_as, cast):
        bob = browser_as("bob")                      # a fresh context presenting bob's certificate
        assert bob.open("/api/docs/").status == 200
        expect(bob.page.locator(".swagger-ui")).to_contain_text("/api/sites/")
        bob.screenshot("api-docs")                   # .../browser-shots/<module>/<test>/bob-api-docs.png

`browser_as(name)` talks to `api_server` (operations are queued, never run), or to the lab's server when
the test uses `cli_lab` (operations run against router simulators); `browser_as(name, server)` picks one.
The principals are registered by `cast` (alice operator, bob viewer, root admin), which `cli_lab` includes.

How the certificate gets there. Chromium never talks TLS to the server itself: Playwright's driver (node)
gives each context with `client_certificates` a SOCKS proxy on 127.0.0.1, and for the origin named there
it ends the browser's TLS with a throw-away self-signed certificate (so Chromium is always told to ignore
certificate errors in such a context) and opens its own TLS connection to the server, presenting the
principal's certificate and key. What is verified is that second connection, by node, because we leave
`ignore_https_errors` off and start the driver with NODE_EXTRA_CA_CERTS=the session's flexzone CA: the
server's chain (to that CA, or to one of node's public roots), its validity dates and its name (the IP
SAN 127.0.0.1). Not verified: revocation of the server's certificate (no CRL on that side), and anything
Chromium would check (the padlock means nothing here). A failed check is Playwright's own 503 page,
"Playwright client-certificate error: ...", never the server's answer. HTTP passes through the proxy as
the browser wrote it (Origin, Sec-Fetch-*, cookies). One difference from a browser with the certificate
installed: the proxy presents it on every connection to that origin, also for requests made without
credentials (fetch's `credentials: "omit"`), which the Fetch standard sends without a client certificate.

The network rule (loopback only) is kept three ways: chromium starts with its background services off
and resolves no host name itself; each context aborts any request or WebSocket for another origin
before it leaves the browser, and records it (the test fails at teardown unless it cleared
`visitor.elsewhere` on purpose); and Playwright's proxy, which would otherwise connect wherever chromium
asks, is given an upstream that reaches 127.0.0.1 only.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Response, sync_playwright

# Debian's binary itself: /usr/bin/chromium is a shell launcher that sources /etc/chromium.d (Google API
# keys, --enable-remote-extensions, an empty --load-extension), none of which a test wants.
CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")

# Chromium reaches for Google's hosts at start (variations, component updates, sync, safe browsing). Playwright
# passes most of these switches already; they are repeated so the loopback-only rule does not rest on its
# defaults. Even with all of them chromium 156 still looks up accounts.google.com and update.googleapis.com,
# so no name resolves inside chromium at all: a context's pages reach the server through Playwright's proxy
# at 127.0.0.1, by address. What remains is its IPv6 reachability probe: a UDP socket connect()ed to
# 2001:4860:4860::8888 to see whether a route exists, through which nothing is sent.
CLOSED_NETWORK_FLAGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--no-first-run",
    "--no-pings",
    "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
)

SHOTS_TAKEN: list[Path] = []


def chromium_candidates() -> tuple[str, ...]:
    """FLEXZONE_CHROMIUM if set, else Debian's chromium."""
    return (os.environ["FLEXZONE_CHROMIUM"],) if os.environ.get("FLEXZONE_CHROMIUM") else CHROMIUM_PATHS


@pytest.fixture(scope="package")
def chromium(api_pki) -> Iterator[Browser]:
    """One headless chromium for the package's tests, closed after the last of them."""
    executable = next((path for path in chromium_candidates() if shutil.which(path)), None)
    if executable is None:
        pytest.skip(f"chromium is not installed (no {' or '.join(chromium_candidates())}): make test installs it "
                    "as root (apt-get install chromium); FLEXZONE_CHROMIUM=PATH names another")
    with pytest.MonkeyPatch.context() as patch:
        # node reads this once, when the driver starts; it is the CA its client-certificate proxy trusts.
        patch.setenv("NODE_EXTRA_CA_CERTS", api_pki.ca_file)
        playwright = sync_playwright().start()
    # Playwright's sync API leaves its event loop marked running in this thread, so Django would take every
    # ORM call of the tests (the cast, the flush after each test) for one made from async code and refuse it.
    allow_orm = pytest.MonkeyPatch()
    allow_orm.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    try:
        browser = playwright.chromium.launch(executable_path=executable, args=list(CLOSED_NETWORK_FLAGS))
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()
        allow_orm.undo()


@pytest.fixture(scope="package")
def dead_end() -> Iterator[str]:
    """A proxy address that refuses every connection (a port bound on loopback, never listening)."""
    with socket.socket() as refuser:
        refuser.bind(("127.0.0.1", 0))
        yield f"socks5://127.0.0.1:{refuser.getsockname()[1]}"


@dataclass
class Visitor:
    """One principal in the browser: a fresh context that presents their certificate, and a page in it."""

    name: str
    origin: str
    context: BrowserContext
    page: Page
    shots: Path
    elsewhere: list[str] = field(default_factory=list)  # requests for other origins, blocked

    def open(self, path: str) -> Response:
        """Load `path` of the server as if typed in the address bar; the main document's response."""
        return self.page.goto(self.origin + path)

    def screenshot(self, label: str) -> Path:
        """Write the whole page to <shots>/<name>-<label>.png and return (and print) the path."""
        path = self.shots / f"{self.name}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', label)}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=path, full_page=True)
        SHOTS_TAKEN.append(path)
        print(f"screenshot: {path}")
        return path


@pytest.fixture
def browser_shots(request, tmp_path_factory) -> Path:
    """This test's screenshot directory (made by the first screenshot): <root>/<module>/<test>, where root is
    FLEXZONE_BROWSER_SHOTS or browser-shots/ under pytest's base temporary directory (pytest keeps the last
    three runs' there; the run ends by printing the directory)."""
    root = Path(os.environ.get("FLEXZONE_BROWSER_SHOTS") or tmp_path_factory.getbasetemp() / "browser-shots")
    module = request.node.module.__name__.rsplit(".", 1)[-1]
    return root / module / re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")


def _the_tests_server(request) -> object:
    if "cli_lab" in request.fixturenames:
        return request.getfixturevalue("cli_lab").server
    return request.getfixturevalue("api_server")


def _other_origins(origin: str) -> re.Pattern:
    # Sent to the driver and matched there (a JavaScript regular expression): any http(s) or ws(s) URL
    # that does not start with our origin and a slash (so https://127.0.0.1:8443 is not :84430).
    return re.compile(rf"^(?!{re.escape(origin)}/)(https?|wss?)://")


@pytest.fixture
def browser_as(chromium, dead_end, api_pki, browser_shots, request) -> Iterator[Callable[..., Visitor]]:
    """`browser_as("alice")` opens a new context presenting alice's certificate to the test's server;
    `browser_as("alice", server)` to another (anything with a `url`, https://127.0.0.1:PORT)."""
    visitors: list[Visitor] = []

    def open_as(name: str, server=None) -> Visitor:
        origin = (server or _the_tests_server(request)).url
        cert, key = api_pki.pair(name)
        context = chromium.new_context(
            base_url=origin,
            client_certificates=[{"origin": origin, "certPath": cert, "keyPath": key}],
            # Playwright's certificate proxy connects to any host chromium asks for (resolving its name first),
            # also for a connection chromium opens ahead of a request the route below aborts; through this
            # upstream it reaches only 127.0.0.1.
            proxy={"server": dead_end, "bypass": "127.0.0.1"},
            viewport={"width": 1280, "height": 800}, locale="en-US", timezone_id="UTC",
        )
        context.set_default_timeout(10_000)
        visitor = Visitor(name, origin, context, context.new_page(), browser_shots)
        elsewhere = _other_origins(origin)
        context.on("request", lambda req: visitor.elsewhere.append(req.url) if elsewhere.match(req.url) else None)
        context.route(elsewhere, lambda route: route.abort("blockedbyclient"))
        context.route_web_socket(elsewhere, lambda ws: (visitor.elsewhere.append(ws.url), ws.close()))
        visitors.append(visitor)
        return visitor

    yield open_as
    strays = {visitor.name: visitor.elsewhere for visitor in visitors if visitor.elsewhere}
    for visitor in visitors:
        visitor.context.close()
    if strays:
        pytest.fail(f"pages asked for other hosts than the server (blocked): {strays}", pytrace=False)


def pytest_terminal_summary(terminalreporter) -> None:
    if SHOTS_TAKEN:
        directories = sorted({str(path.parent.parent.parent) for path in SHOTS_TAKEN})
        terminalreporter.write_line(f"browser screenshots: {len(SHOTS_TAKEN)} under {', '.join(directories)}")

"""Who sees the console, over real mutual TLS: the API's principals and roles, no second login, and every
refusal a page that says why (the browser tests in tests/console drive the pages themselves)."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from django.utils import timezone

from access.models import AuditEvent, Principal
from console import views


def page(api_server, name: str, path: str = "/", method: str = "GET"):
    return api_server.session(name).request(method, f"{api_server.url}{path}", timeout=10)


def test_a_viewer_reads_the_console_under_a_policy_of_this_origin_only(api_server, cast):
    response = page(api_server, "bob")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html")
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert 'data-site="primary-site"' in response.text and 'data-site="remote-site"' in response.text
    assert "https://" not in response.text.split("<main>")[0]  # the head names nothing on another host


@pytest.mark.parametrize(("name", "status", "why"), [
    ("eve", 401, "is not registered to any principal."),
    ("prom", 403, "Principal prom has role monitor; this page needs role viewer."),
])
def test_a_certificate_without_a_console_role_gets_a_page_saying_why_and_is_audited(api_server, cast, api_pki,
                                                                                     name, status, why):
    if name == "prom":
        from access.principals import register

        register(api_pki.issued("prom"), "prom", "monitor")
    response = page(api_server, name, "/operations/")
    assert response.status_code == status
    assert why in response.text
    assert "Content-Security-Policy" in response.headers
    event = AuditEvent.objects.get(path="/operations/")
    assert (event.outcome, event.status_code, event.action) == ("denied", status,
                                                                 "console.auth" if status == 401 else "console.view")
    assert why in event.detail


def test_a_revoked_principal_is_refused_on_its_next_page(api_server, cast):
    session = api_server.session("bob")
    assert session.get(f"{api_server.url}/devices/", timeout=10).status_code == 200
    Principal.objects.filter(name="bob").update(revoked_at=timezone.now())
    refused = session.get(f"{api_server.url}/devices/", timeout=10)  # the same keep-alive connection
    assert refused.status_code == 401 and "Principal bob has been revoked." in refused.text


def test_console_pages_take_no_writes_and_unknown_objects_are_404(api_server, cast):
    posted = page(api_server, "alice", "/connect/", method="POST")  # Django's CSRF check stops it before the view
    assert posted.status_code == 403 and "CSRF verification failed" in posted.text
    for view in (views.connect_page, views.topology_page, views.drift_page, views.operations_page):
        assert view(RequestFactory().post("/")).status_code == 405  # and the view itself takes GET and HEAD only
    assert page(api_server, "alice", "/operations/999999/").status_code == 404
    assert page(api_server, "alice", "/sites/no-such-site/").status_code == 404


def test_an_operators_form_offers_only_the_sites_in_its_scope_and_other_sites_hosts_stay_hidden(api_server, cast):
    carol = page(api_server, "carol", "/connect/").text  # scoped to primary-site and zone 1
    assert '<option value="primary-site"' in carol and '<option value="remote-site"' not in carol
    assert 'value="XRAID1"' in carol and 'value="XRAID2"' not in carol  # XRAID2 is in zone 2
    remote = page(api_server, "carol", "/sites/remote-site/").text
    assert "shown to principals scoped to it" in remote and "management-server" not in remote
    assert "management-server" in page(api_server, "root", "/sites/remote-site/").text

"""The Django admin on the API's own TLS server, signed in by an admin principal's client certificate."""

from __future__ import annotations

import re

from registry.models import Zone


def test_an_admin_principal_is_signed_in_by_certificate(api_server, cast):
    root = api_server.session("root")
    page = root.get(f"{api_server.url}/admin/", timeout=20)
    assert page.status_code == 200 and "Site administration" in page.text
    assert "principal:root" in page.text  # who the admin says is signed in
    login = root.get(f"{api_server.url}/admin/login/", timeout=20, allow_redirects=False)
    assert login.status_code == 302  # no password form for someone already known by certificate


def test_an_admin_changes_the_registry_through_the_admin_over_tls(api_server, cast):
    root = api_server.session("root")
    form = root.get(f"{api_server.url}/admin/registry/zone/add/", timeout=20)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    saved = root.post(f"{api_server.url}/admin/registry/zone/add/", timeout=20, allow_redirects=False,
                      data={"csrfmiddlewaretoken": token, "zone_id": "77", "description": "added in the admin"},
                      headers={"Referer": f"{api_server.url}/admin/registry/zone/add/"})
    assert saved.status_code == 302, saved.text[:500]
    assert Zone.objects.get(zone_id=77).description == "added in the admin"
    assert all(cookie.secure for cookie in root.cookies)  # never sent over plain HTTP


def test_other_principals_are_refused_saying_why(api_server, cast):
    for name in ("alice", "bob"):
        refused = api_server.session(name).get(f"{api_server.url}/admin/", timeout=20)
        assert refused.status_code == 403
        assert f"Principal {name} has role" in refused.text and "admins only" in refused.text
    password_login = api_server.session("bob").post(f"{api_server.url}/admin/login/", timeout=20,
                                                    data={"username": "admin", "password": "anything"})
    assert password_login.status_code == 403  # no way around the certificate

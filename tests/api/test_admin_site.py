"""The Django admin on the API's own TLS server, signed in by an admin principal's client certificate."""

from __future__ import annotations

import re

from django.db import connection

from access.models import AuditEvent
from operations.models import Grant, Link, Operation
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


def _up_link(cast) -> Link:
    """What a connect of remote-site to XRAID1 records on primary-rtr (the registry's side only)."""
    link = Link.objects.create(site=cast["remote"], device=cast["xraid1"], router=cast["primary_rtr"], port=8,
                               zone=cast["zones"][1], remote_ip="127.0.0.22", state=Link.State.UP)
    Grant.objects.create(device=cast["xraid1"], site=cast["remote"], exclusive=True)
    return link


def _action(session, url: str, action: str, ids: list[int]):
    page = session.get(url, timeout=20)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return session.post(url, timeout=20, allow_redirects=False, headers={"Referer": url},
                        data={"csrfmiddlewaretoken": token, "action": action, "_selected_action": ids})


def test_links_locks_and_operations_are_shown_but_never_edited_in_the_admin(api_server, cast):
    link = _up_link(cast)
    lock = Grant.objects.get()
    root = api_server.session("root")
    for model, pk in (("link", link.pk), ("grant", lock.pk)):
        page = root.get(f"{api_server.url}/admin/operations/{model}/{pk}/change/", timeout=20)
        assert page.status_code == 200 and 'name="_save"' not in page.text  # a view, not a form
        assert root.get(f"{api_server.url}/admin/operations/{model}/add/", timeout=20).status_code == 403
        assert root.get(f"{api_server.url}/admin/operations/{model}/{pk}/delete/", timeout=20).status_code == 403
    device = root.get(f"{api_server.url}/admin/registry/device/{cast['xraid1'].pk}/change/", timeout=20).text
    assert "grant_set-0-site" not in device and "grants-0-site" not in device  # holders shown, not editable
    assert 'id="grants-group"' in device  # who holds it, on the device's page (the engine's inline)
    assert root.get(f"{api_server.url}/admin/operations/operation/add/", timeout=20).status_code == 403


def test_an_admin_disconnects_through_the_engine_attributed_and_audited(api_server, cast):
    link = _up_link(cast)
    root = api_server.session("root")
    done = _action(root, f"{api_server.url}/admin/operations/link/", "disconnect", [link.pk])
    assert done.status_code == 302
    op = Operation.objects.get()
    assert (op.kind, op.state, op.principal.name, op.request) == (
        "remove", "queued", "root", {"site": "remote-site", "device_description": "XRAID1"})
    assert Link.objects.get(pk=link.pk).state == "up"  # the engine takes it down, not the admin
    event = AuditEvent.objects.get(action="admin.disconnect")
    assert (event.principal_name, event.outcome, event.target, event.operation_id) == (
        "root", "allowed", f"operation:{op.pk}", op.pk)
    lock = Grant.objects.get()
    _action(root, f"{api_server.url}/admin/operations/grant/", "disconnect", [lock.pk])
    assert Operation.objects.filter(kind="remove").count() == 2


def test_an_admin_checks_and_repairs_routers_by_reconcile_operations(api_server, cast):
    root = api_server.session("root")
    router = cast["remote_rtr"]
    _action(root, f"{api_server.url}/admin/registry/router/", "check_routers", [router.pk])
    _action(root, f"{api_server.url}/admin/registry/router/", "repair_routers", [router.pk])
    requests = [op.request for op in Operation.objects.order_by("pk")]
    assert requests == [{"router": "remote-rtr", "repair": False, "policy": "registry"},
                        {"router": "remote-rtr", "repair": True, "policy": "registry"}]
    assert list(AuditEvent.objects.filter(action__startswith="admin.").values_list("action", flat=True)
                .order_by("pk")) == ["admin.reconcile", "admin.repair"]


def test_the_queues_jobs_are_shown_but_never_retried_cancelled_or_aborted_in_the_admin(api_server, cast):
    # procrastinate's own admin offered retry/cancel/abort: a job cancelled there left its operation queued
    # for ever with its locks held, unaudited.
    from procrastinate.contrib.django.models import ProcrastinateJob

    from operations.tasks import defer_operation

    job_id = defer_operation(operation_id=999_999)
    try:
        root = api_server.session("root")
        url = f"{api_server.url}/admin/procrastinate/procrastinatejob/"
        page = root.get(url, timeout=20)
        assert page.status_code == 200 and f">{job_id}<" in page.text
        assert 'name="action"' not in page.text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        for action in ("cancel", "abort", "retry"):
            root.post(url, timeout=20, allow_redirects=False, headers={"Referer": url},
                      data={"csrfmiddlewaretoken": token, "action": action, "_selected_action": [job_id]})
        assert ProcrastinateJob.objects.get(pk=job_id).status == "todo"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM procrastinate_jobs WHERE id = %s", [job_id])

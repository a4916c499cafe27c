"""The principal behind a certificate is read afresh for every request: a role change, a scope change or
a revocation made by another process, even by an UPDATE the ORM sends no signal for, counts from the
next request on a keep-alive connection that was opened before it."""

from __future__ import annotations

from django.utils import timezone

from access.models import Principal
from registry.models import Site
from tests.support.mtls import connection_for as keep_alive
from tests.support.mtls import get


def test_a_role_change_and_a_revocation_count_from_the_next_request_on_the_same_connection(api_server, cast):
    bob = keep_alive(api_server, "bob")
    assert get(bob, "/api/principals/")[0] == 403  # a viewer
    socket = bob.sock

    Principal.objects.filter(name="bob").update(role="admin")
    assert get(bob, "/api/principals/")[0] == 200
    Principal.objects.filter(name="bob").update(role="viewer")
    assert get(bob, "/api/principals/")[0] == 403
    Principal.objects.filter(name="bob").update(revoked_at=timezone.now())
    status, body = get(bob, "/api/sites/")
    assert (status, body["detail"]) == (401, "Principal bob has been revoked.")
    assert bob.sock is socket, "every request must have used the connection opened first"


def test_a_scope_change_counts_from_the_next_request_on_the_same_connection(api_server, cast):
    carol = keep_alive(api_server, "carol")

    def hosts() -> list[str]:
        return [host["name"] for host in get(carol, "/api/hosts/")[1]["results"]]

    assert hosts() == ["segment-server"]  # primary-site only

    Principal.objects.get(name="carol").sites.add(Site.objects.get(name="remote-site"))
    assert sorted(hosts()) == ["management-server", "segment-server"]
    Principal.objects.get(name="carol").sites.clear()
    assert hosts() == []

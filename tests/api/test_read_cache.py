"""The registry's read cache against the real server: a kept body is the body Django would give, and
any change to what it shows, or to who may see it, is seen on the very next request, however it was
made (the API, the ORM behind the API's back, a transaction that commits late)."""

from __future__ import annotations

import io
import re
import socket
import ssl

import psycopg
import pytest
from cryptography.hazmat.primitives import serialization
from django.core.wsgi import get_wsgi_application
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from access.models import Principal
from registry.models import Site
from registry.readiness import database_url
from serving import read_cache
from tests.support.mtls import connection_for, get

# Headers gunicorn writes for each answer itself; everything else must be the same whoever answered.
PER_ANSWER = {"date", "server", "connection", "keep-alive"}


def lookups(api_server) -> dict[str, float]:
    text = api_server.session("root").get(f"{api_server.url}/metrics", timeout=10).text
    return {sample.labels["result"]: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "flexzone_read_cache_lookups_total"}


def test_a_kept_body_is_the_body_django_gives_with_the_same_headers(api_server, cast):
    session = api_server.session("bob")
    before = lookups(api_server)
    first = session.get(f"{api_server.url}/api/sites/", timeout=10)
    second = session.get(f"{api_server.url}/api/sites/", timeout=10)
    after = lookups(api_server)
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.content == first.content
    assert {k: v for k, v in second.headers.items() if k.lower() not in PER_ANSWER} == \
        {k: v for k, v in first.headers.items() if k.lower() not in PER_ANSWER}
    assert after.get("miss", 0) - before.get("miss", 0) == 1 and after.get("hit", 0) - before.get("hit", 0) == 1


def test_one_principal_never_gets_a_body_made_for_another(api_server, cast):
    everyone = sorted(host["name"] for host in get(connection_for(api_server, "root"), "/api/hosts/")[1]["results"])
    carols = sorted(host["name"] for host in get(connection_for(api_server, "carol"), "/api/hosts/")[1]["results"])
    assert everyone == ["management-server", "segment-server"] and carols == ["segment-server"]


def test_what_else_shapes_an_answer_is_part_of_its_key(api_server, cast):
    session = api_server.session("bob")
    every = session.get(f"{api_server.url}/api/sites/", timeout=10).json()
    one = session.get(f"{api_server.url}/api/sites/?name=primary-site", timeout=10).json()
    assert (every["count"], one["count"]) == (2, 1)
    page = session.get(f"{api_server.url}/api/sites/?limit=1", timeout=10).json()
    assert page["next"].startswith(f"{api_server.url}/api/sites/?")
    # gunicorn takes SCRIPT_NAME from a loopback peer's header: an answer made under /x is not the plain one.
    prefixed = session.get(f"{api_server.url}/x/api/sites/?limit=1", headers={"SCRIPT_NAME": "/x"}, timeout=10)
    assert prefixed.json()["next"].startswith(f"{api_server.url}/x/api/sites/?")
    assert session.get(f"{api_server.url}/api/sites/?limit=1", timeout=10).json() == page
    html = session.get(f"{api_server.url}/api/sites/", headers={"Accept": "text/html"}, timeout=10)
    assert html.headers["Content-Type"].startswith("text/html")


def test_refusals_and_errors_are_never_kept(api_server, cast):
    session = api_server.session("bob")
    before = lookups(api_server)
    for _ in range(2):
        assert session.get(f"{api_server.url}/api/sites/987654/", timeout=10).status_code == 404
        assert session.get(f"{api_server.url}/api/zones/?zone_id=abc", timeout=10).status_code == 400
        assert api_server.session("eve").get(f"{api_server.url}/api/sites/", timeout=10).status_code == 401
    assert lookups(api_server).get("hit", 0) == before.get("hit", 0)


def test_a_change_made_behind_the_apis_back_is_seen_on_the_next_request(api_server, cast):
    bob = connection_for(api_server, "bob")
    assert "GSFC-DICEL1" in str(get(bob, "/api/sites/")[1])
    assert "GSFC-DICEL1" in str(get(bob, "/api/sites/")[1])  # kept
    Site.objects.filter(name="primary-site").update(display_name="GSFC-RENAMED")  # no signal, no API
    assert "GSFC-RENAMED" in str(get(bob, "/api/sites/")[1])
    admin = api_server.session("root")
    site = Site.objects.get(name="remote-site")
    assert admin.patch(f"{api_server.url}/api/sites/{site.pk}/", json={"description": "via the API"},
                       timeout=10).status_code == 200
    assert get(bob, f"/api/sites/{site.pk}/")[1]["description"] == "via the API"


def test_a_change_is_not_seen_before_its_transaction_commits_and_is_seen_right_after(api_server, cast):
    bob = connection_for(api_server, "bob")
    assert get(bob, "/api/zones/")[0] == 200
    with psycopg.connect(database_url()) as writer:
        writer.execute("UPDATE registry_zone SET description = 'late' WHERE zone_id = 1")
        zones = get(bob, "/api/zones/")[1]["results"]
        assert [zone["description"] for zone in zones if zone["zone_id"] == 1] != ["late"]
        writer.commit()
    zones = get(bob, "/api/zones/")[1]["results"]
    assert [zone["description"] for zone in zones if zone["zone_id"] == 1] == ["late"]


def test_a_role_taken_away_or_a_revocation_counts_on_the_next_request_even_for_a_kept_body(api_server, cast):
    bob = connection_for(api_server, "bob")
    for _ in range(2):
        assert get(bob, "/api/devices/")[0] == 200
    Principal.objects.filter(name="bob").update(role="monitor")
    status, body = get(bob, "/api/devices/")
    assert (status, body["detail"]) == (403, "Principal bob has role monitor; GET /api/devices/ needs role viewer.")
    Principal.objects.filter(name="bob").update(role="viewer", revoked_at=timezone.now())
    assert get(bob, "/api/devices/") == (401, {"detail": "Principal bob has been revoked.",
                                               "code": "authentication_failed"})


@pytest.mark.parametrize("change", ["scope", "all_sites"])
def test_a_scope_that_grows_shows_the_other_sites_hosts_on_the_next_request(api_server, cast, change):
    carol = connection_for(api_server, "carol")  # primary-site only
    names = lambda: sorted(host["name"] for host in get(carol, "/api/hosts/")[1]["results"])  # noqa: E731
    assert names() == names() == ["segment-server"]
    principal = Principal.objects.get(name="carol")
    if change == "scope":
        principal.sites.add(Site.objects.get(name="remote-site"))
    else:
        Principal.objects.filter(pk=principal.pk).update(all_sites=True)
    assert names() == ["management-server", "segment-server"]


def test_a_process_keeps_at_most_its_budget_dropping_the_least_recently_used_first(monkeypatch):
    from serving import read_cache

    monkeypatch.setattr(read_cache, "BUDGET", 250)
    kept = read_cache._Bodies()
    for name in ("a", "b", "c"):
        kept.put((name,), (b"x" * 100, []))
        if name == "b":
            kept.get(("a",))  # a was read after b was kept: b is now the least recently used
    assert kept.get(("b",)) is None and kept.get(("a",)) and kept.get(("c",))
    kept.put(("a",), (b"y" * 10, []))  # replacing a body counts its new size only
    kept.put(("d",), (b"z" * 100, []))
    assert [key for key in (("a",), ("c",), ("d",)) if kept.get(key)] == [("a",), ("c",), ("d",)]


# --- in process: the cache around Django's own WSGI application, with a client certificate as gunicorn
# gives it (an ssl.SSLSocket in the environ) --------------------------------------------------------


class PeerSocket(ssl.SSLSocket):
    """Stands in for gunicorn's TLS socket only as far as asking it for the peer's certificate."""

    der: bytes = b""

    def getpeercert(self, binary_form=False):
        return self.der


def environ_for(cert, path: str, query: str = "") -> dict:
    peer = PeerSocket.__new__(PeerSocket, socket.AF_INET, socket.SOCK_STREAM)
    peer.der = cert.public_bytes(serialization.Encoding.DER)
    return {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query, "SCRIPT_NAME": "",
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "443", "HTTP_HOST": "127.0.0.1", "wsgi.url_scheme": "https",
            "wsgi.input": io.BytesIO(), "wsgi.errors": io.StringIO(), "gunicorn.socket": peer}


def call(app, environ: dict) -> tuple[str, bytes]:
    answer = {}
    body = b"".join(app(environ, lambda status, headers, exc_info=None: answer.update(status=status)))
    return answer["status"], body


@pytest.fixture
def in_process(cast, api_pki, settings):
    settings.FLEXZONE_TLS_CA = api_pki.dir / "ca.pem"
    settings.FLEXZONE_TLS_CRL = api_pki.dir / "crl.pem"
    read_cache.bodies.clear()
    return get_wsgi_application()


def test_a_change_committed_after_django_read_the_data_is_seen_on_the_next_request(in_process, api_pki):
    """The body is kept under the generation read before Django read the data: kept under one read after
    it, this body (made before the change) would be served for the changed registry."""

    class ChangeOnceAfterDjangoRead:
        armed = True

        def __call__(self, environ, start_response):
            answer = in_process(environ, start_response)
            if self.armed:
                self.armed = False
                with psycopg.connect(database_url(), autocommit=True) as writer:
                    writer.execute("UPDATE registry_site SET display_name = 'CHANGED' WHERE name = 'primary-site'")
            return answer

    app = read_cache.RegistryReadCache(ChangeOnceAfterDjangoRead())
    bob = api_pki.certs["bob"]
    assert b"GSFC-DICEL1" in call(app, environ_for(bob, "/api/sites/"))[1]
    assert b"CHANGED" in call(app, environ_for(bob, "/api/sites/"))[1]


CACHED_PATHS = ["/api/sites/", "/api/sites/{site}/", "/api/zones/", "/api/zones/{zone}/", "/api/routers/",
                "/api/routers/{router}/", "/api/devices/", "/api/devices/{device}/", "/api/hosts/",
                "/api/hosts/{host}/"]


def test_every_table_a_cached_answer_reads_raises_the_generation_when_written(in_process, api_pki):
    """Asked of the queries Django really makes for each cached path, so a table a serializer starts to
    read one day cannot be forgotten by the triggers."""
    from registry.models import Device, Host, Router, Zone

    ids = {"site": Site.objects.first().pk, "zone": Zone.objects.first().pk, "router": Router.objects.first().pk,
           "device": Device.objects.first().pk, "host": Host.objects.first().pk}
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid "
                       "WHERE t.tgname = 'flexzone_registry_changed'")
        watched = {name for (name,) in cursor.fetchall()}
    for path in CACHED_PATHS:
        assert read_cache.CACHED.match(path.format(**ids))
        with CaptureQueriesContext(connection) as queries:
            status, _body = call(in_process, environ_for(api_pki.certs["root"], path.format(**ids)))
        assert status.startswith("200 ")
        read = {name for query in queries.captured_queries
                for name in re.findall(r'(?:FROM|JOIN)\s+"?(\w+)"?', query["sql"])}
        assert read and read <= watched, (path, read - watched)


def test_a_generation_that_goes_down_empties_the_cache():
    read_cache.bodies.put(("kept",), (b"{}", []))
    seen = read_cache._Generations()
    seen.saw("epoch", 7)
    seen.saw("epoch", 9)
    assert read_cache.bodies.get(("kept",))
    seen.saw("other epoch", 1)  # tables made again: a number of theirs says nothing of these
    assert read_cache.bodies.get(("kept",))
    seen.saw("epoch", 8)  # the database went back to an earlier point
    assert read_cache.bodies.get(("kept",)) is None


def test_recording_a_change_adds_no_deadlock_between_writers(cast):
    """A transaction that changed the registry and then adds a host at a site, against one that deletes
    that site: the foreign key decides which of them fails, as without the generation; neither is taken
    for a deadlock (a single counter row locked at commit, before the deferred foreign-key checks, made
    this a deadlock)."""
    import threading

    site = Site.objects.create(name="doomed-site", display_name="DOOMED", msan_id=77, management_ip="127.0.0.77",
                               data_ip="127.0.0.78", router_port=1)
    url = database_url()
    with psycopg.connect(url) as adder, psycopg.connect(url) as deleter:
        adder.execute("UPDATE registry_zone SET description = description WHERE zone_id = 1")
        adder.execute("INSERT INTO registry_host (site_id, name, description, created_at, updated_at) "
                      "VALUES (%s, 'late-host', '', now(), now())", [site.pk])
        deleter.execute("DELETE FROM registry_site WHERE id = %s", [site.pk])
        errors: list[Exception] = []

        def commit(conn):
            try:
                conn.commit()
            except psycopg.Error as exc:
                errors.append(exc)
                conn.rollback()

        # The adder commits first: its foreign-key check waits for the deleter's lock on the site row.
        other = threading.Thread(target=commit, args=(adder,))
        other.start()
        other.join(timeout=1)
        commit(deleter)
        other.join(timeout=30)
    assert not any(isinstance(error, psycopg.errors.DeadlockDetected) for error in errors), errors
    assert len(errors) == 1 and isinstance(errors[0], psycopg.errors.ForeignKeyViolation), errors


def test_a_session_that_forgot_the_prepared_statement_is_answered_and_prepares_it_again(in_process, api_pki):
    app = read_cache.RegistryReadCache(in_process)
    bob = api_pki.certs["bob"]
    before = call(app, environ_for(bob, "/api/zones/"))
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # what a pooler's session reset does
    for _ in range(2):
        assert call(app, environ_for(bob, "/api/zones/")) == before
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = 'flexzone_registry_reader'")
        assert cursor.fetchone()[0] == 1

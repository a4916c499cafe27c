"""The link and operation lists' one-statement path (api/fast_lists.py) against DRF, through two real
servers on the same database: the session's, with the path on, and one with FLEXZONE_API_FAST_LISTS=0
where Django and DRF answer everything. Every request goes to both; the answers must be the same bytes
with the same headers (but those gunicorn writes per answer), and the path must really have answered
what it could settle (its counter in /metrics) and nothing it must not (refusals). A page it kept is
served again only while nothing it shows has changed, however the change was written."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from urllib.parse import urlencode

import pytest
import requests
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from access.models import Principal, Role
from access.principals import register
from operations.models import Link, LinkState, Operation, OperationKind, OperationState
from registry.models import Device, Initiator, Router, Site
from tests.support.servers import APIServer, running_server

# Headers gunicorn writes for each answer itself; everything else must be the same whoever answered.
PER_ANSWER = {"date", "server", "connection", "keep-alive"}
HOST = {"Host": "localhost"}  # both servers build their page links from it, so they name the same URLs
SEGMENT_WWN = "21:00:00:e0:8b:10:5e:01"  # the demo's segment-server at primary-site
STRANGER_WWN = "21:00:00:e0:8b:99:99:99"  # no host's: hidden from every site-scoped principal
LISTS = ("/api/links/", "/api/operations/")
READERS = ("root", "alice", "bob", "carol")  # admin, operator of both sites, viewer of none, operator of one


@pytest.fixture(scope="module")
def django_server(django_db_setup, django_db_blocker, api_pki, tmp_path_factory) -> Iterator[APIServer]:
    """The session server's twin with the fast path off."""
    log = tmp_path_factory.mktemp("django-server") / "gunicorn.log"
    env = {"FLEXZONE_PKI_DIR": str(api_pki.dir), "FLEXZONE_OPS_QUEUE": "manual", "FLEXZONE_API_WORKERS": "1",
           "FLEXZONE_API_KEEPALIVE": "30", "FLEXZONE_API_MAX_WAIT": "5", "FLEXZONE_API_FAST_LISTS": "0"}
    with running_server(log, **env) as (process, url):
        yield APIServer(process, url, log, api_pki)


@pytest.fixture
def both(api_server, django_server) -> Callable[[str, str], tuple[requests.Response, requests.Response]]:
    """both(principal, path): (the fast server's answer, Django's), each on the principal's keep-alive session."""
    sessions: dict[tuple[str, str], requests.Session] = {}

    def both(name: str, path: str) -> tuple[requests.Response, requests.Response]:
        answers = []
        for server in (api_server, django_server):
            session = sessions.setdefault((server.url, name), server.session(name))
            answers.append(session.get(f"{server.url}{path}", headers=HOST, timeout=20))
        return answers[0], answers[1]

    return both


def assert_same(fast: requests.Response, django: requests.Response) -> None:
    assert fast.status_code == django.status_code, (fast.text[:500], django.text[:500])
    assert fast.content == django.content
    assert {k: v for k, v in fast.headers.items() if k.lower() not in PER_ANSWER} == \
        {k: v for k, v in django.headers.items() if k.lower() not in PER_ANSWER}


def answered(api_server) -> dict[str, float]:
    text = api_server.session("root").get(f"{api_server.url}/metrics", timeout=10).text
    return {sample.labels["by"]: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "flexzone_fast_lists_total"}


def fast_answers(api_server) -> float:
    """Answers from the fast path, built or kept."""
    counted = answered(api_server)
    return counted.get("fast", 0.0) + counted.get("kept", 0.0)


@pytest.fixture
def traffic(cast) -> dict:
    """Links and operations in every state, with initiator WWNs of both sites and of no host, dates with
    and without microseconds, floats, unicode and empty values."""
    sites = {site.name: site for site in Site.objects.all()}
    routers = {router.name: router for router in Router.objects.all()}
    devices = {device.description: device for device in Device.objects.all()}
    remote = sorted(Initiator.objects.filter(host__site__name="remote-site").values_list("wwn", flat=True))
    base = dt.datetime(2026, 11, 27, 5, 0, tzinfo=dt.UTC)
    links = []
    for index, state in enumerate(LinkState.values * 2):
        site, router, device = (("remote-site", "primary-rtr", "XRAID1"), ("primary-site", "remote-rtr", "XRAID2"),
                                ("remote-site", "primary-rtr", "XRAID3"))[index % 3]
        initiators = [remote, [SEGMENT_WWN], [STRANGER_WWN, *remote[:1]]][index % 3]
        link = Link.objects.create(
            site=sites[site], device=devices[device], router=routers[router], port=20 + index,
            zone=devices[device].zone, remote_ip=sites[site].data_ip, state=state, initiators=initiators,
            pairs=[[wwn, devices[device].wwn] for wwn in initiators],
            lease_expires_at=base + dt.timedelta(days=1, microseconds=index * 1000) if index % 2 else None,
            up_at=base if state == LinkState.UP else None, down_at=base + dt.timedelta(seconds=index) if index % 4
            else None)
        links.append(link.pk)
        # Distinct creation times (the lists' order), one of them without microseconds.
        Link.objects.filter(pk=link.pk).update(created_at=base + dt.timedelta(minutes=index, microseconds=index * 7))
    alice = Principal.objects.get(name="alice")
    for index, (kind, state) in enumerate(zip(OperationKind.values * 3, OperationState.values * 4, strict=False)):
        wwn = [remote[0], SEGMENT_WWN, STRANGER_WWN][index % 3]
        operation = Operation.objects.create(
            kind=kind, state=state, principal=alice if index % 4 else None, attempts=index % 3,
            request={"site": "remote-site", "device_description": "XRAID1", "hosts": ["h1"], "n": index},
            plan={"steps": [{"wwn": devices["XRAID1"].wwn, "initiators": [wwn], "commands": [
                f"zone add fz_{wwn.replace(':', '')} member {wwn}"]}]} if index % 2 else {},
            result={"pairs": [[wwn, devices["XRAID1"].wwn]], "ratio": 0.1 * index, "note": "caf\u00e9 \u2028 ok"},
            error=f"refused member {wwn.upper()}" if state == OperationState.FAILED else "",
            transcript=f"login ok\nzone add {wwn}\n" if index % 2 else "",
            registry_ms=1.5 * index, invocation_ms=1e-7 * index, router_ms=40.0, total_ms=12345.678 + index,
            started_at=base + dt.timedelta(seconds=index) if index % 3 else None,
            finished_at=base + dt.timedelta(seconds=index, microseconds=999999) if index % 2 else None)
        Operation.objects.filter(pk=operation.pk).update(
            created_at=base + dt.timedelta(minutes=index, microseconds=0 if index == 3 else index * 11))
    return {"links": links}


def warm(both) -> None:
    """Each list once through Django first: the fast path answers with the headers Django gave it."""
    for path in LISTS:
        both("root", path)


def test_every_principal_reads_the_lists_from_the_fast_path_as_drf_gives_them(api_server, both, traffic):
    warm(both)
    before = fast_answers(api_server)
    paths = ["/api/links/", "/api/links/?state=up", "/api/links/?site=remote-site&limit=2&offset=2",
             "/api/links/?router=primary-rtr&device=XRAID1", "/api/links/?limit=5&offset=20",
             "/api/links/?limit=4", "/api/links/?offset=3", "/api/links/?state=down&site=primary-site",
             "/api/operations/", "/api/operations/?state=succeeded", "/api/operations/?kind=add&limit=1",
             "/api/operations/?limit=3&offset=6", "/api/operations/?offset=100", "/api/links/?limit=2000"]
    for name in READERS:
        for path in paths:
            fast, django = both(name, path)
            assert fast.status_code == 200
            assert_same(fast, django)
    assert fast_answers(api_server) - before == len(READERS) * len(paths)


def test_a_site_scoped_principal_sees_only_its_own_sites_initiators_from_the_fast_path(api_server, both, traffic):
    warm(both)
    fast, django = both("carol", "/api/links/?limit=100")
    assert_same(fast, django)
    assert STRANGER_WWN not in fast.text and SEGMENT_WWN in fast.text
    admin, _ = both("root", "/api/operations/")
    assert STRANGER_WWN in admin.text and "transcript" in admin.text
    assert "transcript" not in both("alice", "/api/operations/")[0].text


QUERIES = {
    "/api/links/": {"state": [*LinkState.values, "UP", "", "bogus", "up\n"],
                    "site": ["primary-site", "remote-site", "nowhere", "bad name", "GSFC-DICEL1"],
                    "router": ["primary-rtr", "remote-rtr", "x"], "device": ["XRAID1", "XRAID3", "xraid1", "nope"]},
    "/api/operations/": {"state": [*OperationState.values, "done", ""], "kind": [*OperationKind.values, "Add"]},
}
LIMITS = [None, "1", "2", "3", "5", "1000", "2000", "0", "-1", "x", "01", "\uff15"]
OFFSETS = [None, "0", "1", "2", "4", "7", "100", "-1", "y", "1e3"]
EXTRAS = [[], [("format", "json")], [("ordering", "id")], [("state", "up"), ("state", "down")], [("limit", "2")]]


@st.composite
def requests_(draw: st.DrawFn) -> tuple[str, str]:
    path = draw(st.sampled_from(LISTS))
    filters = draw(st.dictionaries(st.sampled_from(sorted(QUERIES[path])), st.just(""), max_size=3))
    pairs = [(param, draw(st.sampled_from(QUERIES[path][param]))) for param in filters]
    for param, choices in (("limit", LIMITS), ("offset", OFFSETS)):
        value = draw(st.sampled_from(choices))
        if value is not None:
            pairs.append((param, value))
    pairs += draw(st.sampled_from(EXTRAS))
    pairs = draw(st.permutations(pairs))
    return draw(st.sampled_from(READERS)), f"{path}?{urlencode(pairs)}" if pairs else path


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(asked=requests_())
def test_any_list_request_gets_drfs_answer_byte_for_byte(api_server, both, traffic, asked):
    warm(both)
    name, path = asked
    assert_same(*both(name, path))


def test_refusals_are_djangos_own(api_server, both, traffic, api_pki):
    warm(both)
    register(api_pki.certs["bob"], "bob", "monitor")  # may read /metrics only
    Principal.objects.filter(name="carol").update(revoked_at=dt.datetime.now(dt.UTC))
    before = fast_answers(api_server)
    for name, status in (("bob", 403), ("carol", 401), ("eve", 401)):  # eve: a certificate nobody registered
        for path in LISTS:
            fast, django = both(name, path)
            assert fast.status_code == status, fast.text
            assert_same(fast, django)
    assert fast_answers(api_server) == before


def test_a_certificate_revoked_on_an_open_connection_is_refused_by_django(api_server, both, traffic, api_pki):
    warm(both)
    name = f"frank-{dt.datetime.now(dt.UTC):%H%M%S%f}"
    register(api_pki.ca.issue(name), name, "admin", all_sites=True, all_zones=True)
    for path in LISTS:  # the keep-alive connections open now, before the revocation
        assert_same(*both(name, path))
    api_pki.ca.revoke(name)  # the CRL only: the principal's row is left as it was
    before = fast_answers(api_server)
    for path in LISTS:
        fast, django = both(name, path)
        assert (fast.status_code, fast.json()["detail"]) == (401, "Your client certificate has been revoked.")
        assert_same(fast, django)
    assert fast_answers(api_server) == before


def kept_then_fresh(api_server, both, name: str, path: str, change: Callable[[], None]) -> None:
    """`path` is served from a kept page until `change` commits, then built again: always Django's answer."""
    assert_same(*both(name, path))
    kept = answered(api_server).get("kept", 0.0)
    before, django = both(name, path)
    assert_same(before, django)
    assert answered(api_server).get("kept", 0.0) == kept + 1
    change()
    counted = answered(api_server)
    after, django = both(name, path)
    assert after.content != before.content
    assert_same(after, django)
    assert answered(api_server).get("kept", 0.0) == counted.get("kept", 0.0)
    assert answered(api_server).get("fast", 0.0) == counted.get("fast", 0.0) + 1


def test_a_kept_page_is_not_served_after_its_rows_change(api_server, both, traffic):
    warm(both)
    link = Link.objects.filter(state=LinkState.UP).order_by("-created_at").first()
    assert link is not None
    kept_then_fresh(api_server, both, "alice", "/api/links/?state=up",
                    lambda: Link.objects.filter(pk=link.pk).update(state=LinkState.DOWN))
    operation = Operation.objects.order_by("-created_at").first()
    assert operation is not None

    def by_hand() -> None:  # not through the ORM: the trigger sees every writer
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {Operation._meta.db_table} SET attempts = attempts + 1 WHERE id = %s",
                           [operation.pk])

    kept_then_fresh(api_server, both, "alice", "/api/operations/?limit=3", by_hand)


def test_a_kept_page_is_not_served_after_a_name_role_or_scope_changes(api_server, both, traffic):
    warm(both)
    kept_then_fresh(api_server, both, "carol", "/api/links/?limit=100",
                    lambda: Router.objects.filter(name="primary-rtr").update(name="primary-rtr-2"))
    kept_then_fresh(api_server, both, "alice", "/api/operations/",
                    lambda: Principal.objects.filter(name="alice").update(role=Role.ADMIN))
    carol = Principal.objects.get(name="carol")
    kept_then_fresh(api_server, both, "carol", "/api/links/?limit=100",
                    lambda: carol.sites.add(*Site.objects.exclude(pk__in=carol.sites.all())))


def test_a_principal_revoked_after_its_page_was_kept_is_refused_by_django(api_server, both, traffic):
    warm(both)
    for _ in range(2):
        assert_same(*both("alice", "/api/links/?state=up"))
    counted = answered(api_server)
    Principal.objects.filter(name="alice").update(revoked_at=dt.datetime.now(dt.UTC))
    fast, django = both("alice", "/api/links/?state=up")
    assert fast.status_code == 401
    assert_same(fast, django)
    assert fast_answers(api_server) == counted.get("fast", 0.0) + counted.get("kept", 0.0)

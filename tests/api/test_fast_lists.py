"""The link and operation lists' one-statement path (api/fast_lists.py) against DRF, through two real
servers on the same database: the session's, with the path on, and one with FLEXZONE_API_FAST_LISTS=0
where Django and DRF answer everything. Every request goes to both; the answers must be the same bytes
with the same headers (but those gunicorn writes per answer), and the path must really have answered
what it could settle (its counter in /metrics) and nothing it must not (refusals). A page it kept is
served again only while nothing it shows has changed, however the change was written."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from urllib.parse import urlencode

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access.models import Principal, Role
from access.principals import register
from operations.models import Link, LinkState, Operation, OperationKind, OperationState
from registry.models import Router, Site
from tests.support.fast_lists import (
    LISTS,
    READERS,
    SEGMENT_WWN,
    STRANGER_WWN,
    answered,
    assert_same,
    fast_answers,
    warm,
)


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


# `make test` asks a fixed set of requests, the same every run; FLEXZONE_FAST_LISTS_EXAMPLES=500 searches
# further with fresh random requests each run (hypothesis prints any failing one).
EXAMPLES = int(os.environ.get("FLEXZONE_FAST_LISTS_EXAMPLES", "40"))


@pytest.mark.slow
@settings(max_examples=EXAMPLES, derandomize="FLEXZONE_FAST_LISTS_EXAMPLES" not in os.environ, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
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

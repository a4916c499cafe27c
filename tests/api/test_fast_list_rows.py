"""Pages of the lists' one-statement path (api/fast_lists.py) built over a page it kept: the items of rows
that did not change are the kept page's bytes, the others are written afresh, and the answer is still
DRF's byte for byte, against a twin server where Django answers everything (tests/api/test_fast_lists.py).
A seeded random walk of writes (through the ORM and by hand, to links, operations, names and scopes) and
reads by every principal searches for a page that differs from Django's."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from access.models import Principal
from operations.models import Link, LinkState, Operation
from registry.models import Router, Site
from tests.support.fast_lists import READERS, answered, assert_same, warm

PAGES = ("/api/links/?state=up", "/api/links/?limit=4", "/api/links/?limit=3&offset=2", "/api/links/",
         "/api/operations/?limit=4", "/api/operations/?state=succeeded", "/api/operations/")


def items(api_server) -> dict[str, float]:
    """flexzone_fast_lists_rows_total by how: the items written afresh and those reused from a kept page."""
    text = api_server.session("root").get(f"{api_server.url}/metrics", timeout=10).text
    return {sample.labels["how"]: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "flexzone_fast_lists_rows_total"}


def by_hand(sql: str, params: list[Any]) -> None:
    """A write not through the ORM: the generations' triggers see every writer, and so must the marks."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_a_page_rebuilt_after_one_of_its_rows_changed_writes_that_item_alone(api_server, both, traffic):
    warm(both)
    path = "/api/links/?limit=5"
    assert_same(*both("alice", path))
    first = Link.objects.order_by("-created_at").values_list("pk", flat=True)[2]
    before, counted = items(api_server), answered(api_server)
    # The row's values stay as they were; a new version of it all the same (what the marks must see).
    by_hand(f"UPDATE {Link._meta.db_table} SET updated_at = updated_at WHERE id = %s", [first])
    assert_same(*both("alice", path))
    after = items(api_server)
    assert (after.get("built", 0) - before.get("built", 0), after.get("reused", 0) - before.get("reused", 0)) == (1, 4)
    assert answered(api_server).get("fast", 0) == counted.get("fast", 0) + 1

    for change in (lambda: Link.objects.filter(pk=first).update(state=LinkState.FAILED),  # its values
                   lambda: Link.objects.filter(pk=first).delete()):  # off the page: the next one comes in
        before = items(api_server)
        change()
        fast, django = both("alice", path)
        assert_same(fast, django)
        after = items(api_server)
        assert (after.get("built", 0) - before.get("built", 0),
                after.get("reused", 0) - before.get("reused", 0)) == (1, 4)
    assert f'"id":{first},' not in fast.text


def test_a_change_elsewhere_reuses_every_item_and_a_renamed_router_rebuilds_them_all(api_server, both, traffic):
    warm(both)
    path = "/api/links/?limit=3"
    assert_same(*both("carol", path))  # a site-scoped principal: its items are redacted before they are kept
    before = items(api_server)
    oldest = Link.objects.order_by("created_at").values_list("pk", flat=True)[0]  # not on the page of 3
    by_hand(f"UPDATE {Link._meta.db_table} SET port = port WHERE id = %s", [oldest])
    assert_same(*both("carol", path))
    after = items(api_server)
    assert (after.get("built", 0) - before.get("built", 0), after.get("reused", 0) - before.get("reused", 0)) == (0, 3)

    before = items(api_server)
    Router.objects.filter(name="primary-rtr").update(name="primary-rtr-renamed")
    fast, django = both("carol", path)
    assert_same(fast, django)
    after = items(api_server)
    assert after.get("reused", 0) == before.get("reused", 0)  # the names shown changed: nothing is reused


def test_each_list_keeps_its_pages_through_the_other_lists_writes(api_server, both, traffic):
    """A running operation writes the journal (its phases, its heartbeats) many times: the links' kept
    pages stay kept through that, and the operations' through writes to links; a write to a list's own
    table makes its pages stale."""
    warm(both)
    links, operations = "/api/links/?limit=3", "/api/operations/?limit=3"
    for path in (links, operations):
        assert_same(*both("alice", path))
    table = {links: Operation._meta.db_table, operations: Link._meta.db_table}  # the other list's
    own = {links: Link._meta.db_table, operations: Operation._meta.db_table}
    for path in (links, operations):
        assert_same(*both("alice", path))  # kept, now that it was built after the other one's first read
        counted = answered(api_server)
        by_hand(f"UPDATE {table[path]} SET id = id WHERE id = (SELECT min(id) FROM {table[path]})", [])
        assert_same(*both("alice", path))
        now = answered(api_server)
        assert (now.get("kept", 0) - counted.get("kept", 0), now.get("fast", 0) - counted.get("fast", 0)) == (1, 0)

        by_hand(f"UPDATE {own[path]} SET id = id WHERE id = (SELECT min(id) FROM {own[path]})", [])
        assert_same(*both("alice", path))
        again = answered(api_server)
        assert (again.get("kept", 0) - now.get("kept", 0), again.get("fast", 0) - now.get("fast", 0)) == (0, 1)


WRITES = ("link state", "link initiators", "link touched", "link deleted", "operation", "router renamed",
          "site renamed", "principal renamed", "scope")


def write(kind: str, pick: int, turn: int) -> None:
    """One committed write of `kind` to the `pick`-th row of its table (modulo its size)."""
    links = list(Link.objects.order_by("pk").values_list("pk", flat=True))
    link = links[pick % len(links)] if links else None
    if kind == "link state" and link is not None:
        Link.objects.filter(pk=link).update(state=LinkState.values[pick % len(LinkState.values)])
    elif kind == "link initiators" and link is not None:
        wwn = f"21:00:00:e0:8b:77:{turn % 256:02x}:{pick % 256:02x}"
        by_hand(f"UPDATE {Link._meta.db_table} SET initiators = %s::jsonb WHERE id = %s", [f'["{wwn}"]', link])
    elif kind == "link touched" and link is not None:
        by_hand(f"UPDATE {Link._meta.db_table} SET updated_at = updated_at WHERE id = %s", [link])
    elif kind == "link deleted" and len(links) > 3:
        Link.objects.filter(pk=link).delete()
    elif kind == "operation":
        operations = list(Operation.objects.order_by("pk").values_list("pk", flat=True))
        Operation.objects.filter(pk=operations[pick % len(operations)]).update(attempts=turn)
    elif kind == "router renamed":
        router = Router.objects.order_by("pk")[pick % Router.objects.count()]
        Router.objects.filter(pk=router.pk).update(name=f"{router.name.split('~')[0]}~{turn}")
    elif kind == "site renamed":
        site = Site.objects.order_by("pk")[pick % Site.objects.count()]
        by_hand(f"UPDATE {Site._meta.db_table} SET name = %s WHERE id = %s", [f"{site.name.split('~')[0]}~{turn}",
                                                                              site.pk])
    elif kind == "principal renamed":  # the name an operation shows; certificates find their principal by hash
        by_hand(f"UPDATE {Principal._meta.db_table} SET name = split_part(name, '~', 1) || '~' || %s "
                "WHERE name LIKE 'alice%%'", [turn])
    elif kind == "scope":
        carol, site = Principal.objects.get(name="carol"), Site.objects.order_by("pk")[pick % Site.objects.count()]
        if carol.sites.filter(pk=site.pk).exists():
            carol.sites.remove(site)
        else:
            carol.sites.add(site)


STEPS = st.lists(st.one_of(
    st.tuples(st.just("read"), st.sampled_from(READERS), st.sampled_from(PAGES)),
    st.tuples(st.just("write"), st.sampled_from(WRITES), st.integers(0, 50))), min_size=4, max_size=14)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_every_page_after_any_walk_of_writes_is_drfs(api_server, both, traffic, steps):
    warm(both)
    for turn, (step, what, which) in enumerate(steps):
        if step == "write":
            write(what, which, turn)
        else:
            assert_same(*both(what, which))
    for name in READERS:  # every page read once more at the end: kept, reused or built, all DRF's
        for path in PAGES:
            assert_same(*both(name, path))


def test_a_principal_revoked_while_its_page_is_being_rebuilt_is_refused_by_django(api_server, both, traffic):
    warm(both)
    path = "/api/links/?limit=4"
    assert_same(*both("alice", path))
    Link.objects.filter(pk=Link.objects.order_by("-created_at").values("pk")[:1]).update(port=99)
    assert_same(*both("alice", path))  # found stale and rebuilt: the next goes straight to the page's statement
    counted = answered(api_server)
    Principal.objects.filter(name__startswith="alice").update(revoked_at=dt.datetime.now(dt.UTC))
    fast, django = both("alice", path)
    assert fast.status_code == 401
    assert_same(fast, django)
    assert answered(api_server).get("django", 0) == counted.get("django", 0) + 1

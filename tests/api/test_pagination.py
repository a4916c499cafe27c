"""Pagination reads the page first and counts only when the page cannot tell: the figures a client sees
(count, next, previous, results) are those of a COUNT(*) every time."""

from __future__ import annotations

import pytest
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from api.pagination import Pagination
from registry.models import Site

FACTORY = APIRequestFactory()


def page(queryset, query: str) -> dict:
    paginator = Pagination()
    rows = paginator.paginate_queryset(queryset, Request(FACTORY.get(f"/api/sites/?{query}")))
    body = paginator.get_paginated_response([site.name for site in rows]).data
    return dict(body)


@pytest.mark.parametrize(
    ("query", "queries", "count", "results", "has_next", "has_previous"),
    [
        ("", 1, 2, ["primary-site", "remote-site"], False, False),  # one short page: no COUNT
        ("limit=1", 2, 2, ["primary-site"], True, False),  # a full page may have more after it
        ("limit=1&offset=1", 2, 2, ["remote-site"], False, True),  # full again: counted
        ("limit=5&offset=1", 1, 2, ["remote-site"], False, True),  # the short last page tells the count
        ("limit=5&offset=2", 2, 2, [], False, True),  # empty past the end: counted, not guessed as 2
        ("limit=5&offset=9", 2, 2, [], False, True),
    ],
)
def test_a_page_reports_the_counted_total_and_counts_only_when_it_must(
    demo, django_assert_num_queries, query, queries, count, results, has_next, has_previous
):
    with django_assert_num_queries(queries):
        body = page(Site.objects.order_by("name"), query)
    assert body["count"] == count
    assert body["results"] == results
    assert (body["next"] is not None, body["previous"] is not None) == (has_next, has_previous)


def test_an_empty_list_is_one_query_with_count_zero(db, django_assert_num_queries):
    with django_assert_num_queries(1):
        body = page(Site.objects.order_by("name"), "")
    assert body == {"count": 0, "next": None, "previous": None, "results": []}

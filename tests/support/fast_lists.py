"""What the lists' fast-path tests share (tests/api/test_fast_lists.py, test_fast_list_rows.py): the
principals that read, the WWNs they may or may not see, and how the fast server's answers are held to
Django's (the twin servers are in tests/support/fixtures/fast_lists.py)."""

from __future__ import annotations

import requests
from prometheus_client.parser import text_string_to_metric_families

PER_ANSWER = {"date", "server", "connection", "keep-alive"}
HOST = {"Host": "localhost"}  # both servers build their page links from it, so they name the same URLs
SEGMENT_WWN = "21:00:00:e0:8b:10:5e:01"  # the demo's segment-server at primary-site
STRANGER_WWN = "21:00:00:e0:8b:99:99:99"  # no host's: hidden from every site-scoped principal
LISTS = ("/api/links/", "/api/operations/")
READERS = ("root", "alice", "bob", "carol")  # admin, operator of both sites, viewer of none, operator of one


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


def warm(both) -> None:
    """Each list once through Django first: the fast path answers with the headers Django gave it."""
    for path in LISTS:
        both("root", path)

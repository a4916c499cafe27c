"""Writes from a foreign page are refused: JSON bodies only, and no write whose browser says it came
from another origin. The CLI, curl and automation (no Origin, no Sec-Fetch-Site) work unchanged."""

from __future__ import annotations

import pytest

from access.models import AuditEvent
from operations.models import Operation

CONNECT = {"site": "remote-site", "device_description": "XRAID1"}


@pytest.fixture
def alice(api_server, cast):
    return api_server.session("alice")


def test_a_form_post_is_refused_415_and_nothing_is_journaled(api_server, alice):
    response = alice.post(f"{api_server.url}/api/connect/", data=CONNECT, timeout=20)  # what an HTML form sends
    assert response.status_code == 415, response.text
    assert "application/x-www-form-urlencoded" in response.json()["detail"]
    assert not Operation.objects.exists()


@pytest.mark.parametrize("headers", [
    {"Origin": "https://evil.example"},
    {"Origin": "null"},  # a sandboxed frame or a page opened from a file
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},  # another service on a sibling host is still not this one
])
def test_a_write_a_browser_sent_for_another_origin_is_refused_403_saying_why(api_server, alice, headers):
    response = alice.post(f"{api_server.url}/api/connect/", json=CONNECT, headers=headers, timeout=20)
    assert response.status_code == 403, response.text
    assert response.json()["detail"].startswith("Cross-site request refused")
    assert not Operation.objects.exists()
    refusal = AuditEvent.objects.filter(action="connect").latest("pk")
    assert (refusal.outcome, refusal.status_code) == ("denied", 403)


@pytest.mark.parametrize("headers", [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}, "own"])
def test_a_write_from_a_program_or_this_services_own_pages_is_accepted(api_server, alice, headers):
    if headers == "own":
        headers = {"Origin": api_server.url, "Sec-Fetch-Site": "same-origin"}
    response = alice.post(f"{api_server.url}/api/connect/", json=CONNECT, headers=headers, timeout=20)
    assert response.status_code in (200, 202), response.text
    assert Operation.objects.filter(kind="add").count() == 1


def test_reads_from_anywhere_still_answer(api_server, alice):
    response = alice.get(f"{api_server.url}/api/sites/", headers={"Origin": "https://evil.example"}, timeout=20)
    assert response.status_code == 200

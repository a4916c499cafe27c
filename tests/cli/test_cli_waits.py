"""The CLI's one-line outcome says which operation a request joined or ran after (as the API reports)."""

from __future__ import annotations

from cli.flexzone import describe_link_operation

PLAN = {"site": "remote-site", "zone": 1, "devices": ["XRAID1"], "steps": [{"router": "primary-rtr"}]}


def operation(**result) -> dict:
    return {"kind": "add", "state": "succeeded", "plan": PLAN, "request": {}, "result": {"links": [3], **result}}


def test_an_operation_that_joined_another_names_it():
    text = describe_link_operation(operation(joined=[14]))
    assert text == ("connected remote-site to XRAID1 (zone 1) via primary-rtr; joined operation 14 "
                    "(the same request, already under way)")


def test_an_operation_ordered_behind_an_earlier_one_names_it():
    text = describe_link_operation(operation(after=[12, 13]))
    assert text.endswith("; ran after operation 12, 13 (submitted earlier for the same site and zone)")


def test_an_operation_that_waited_for_nothing_says_nothing_about_it():
    assert "operation" not in describe_link_operation(operation())

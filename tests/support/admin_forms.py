"""The Django admin driven in this process, as a browser would: its change form read, what the browser
would send posted back with one field changed, or its delete page confirmed.

The admin lets in a request by its client certificate (access/admin_access.py, tested with real TLS on
its own); here an admin principal stands in for it, so that the admin's views, forms, inlines and
refusals run in the test's own transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from typing import Any
from unittest import mock

from django.test import Client

from access.models import Principal


class _ChangeForm(HTMLParser):
    """The fields a browser sends of an admin page's main form (the one whose id ends in `_form`)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self._inside = False
        self._select: str | None = None
        self._multiple = False
        self._options: list[tuple[str, bool]] = []
        self._textarea: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._inside = attr.get("id", "").endswith("_form")
        elif not self._inside or not attr.get("name") and tag != "option":
            return
        elif tag == "input":
            kind = attr.get("type", "text")
            if kind in ("submit", "button", "file", "image", "reset"):
                return
            if kind in ("checkbox", "radio") and "checked" not in attr:
                return
            self.fields.append((attr["name"], attr.get("value", "on" if kind == "checkbox" else "")))
        elif tag == "select":
            self._select, self._options, self._multiple = attr["name"], [], "multiple" in attr
        elif tag == "option" and self._select is not None:
            self._options.append((attr.get("value", ""), "selected" in attr))
        elif tag == "textarea":
            self._textarea, self._text = attr["name"], ""

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._inside = False
        elif tag == "select" and self._select is not None:
            # A single select with nothing selected sends its first option, as a browser does; a multiple one nothing.
            chosen = [value for value, selected in self._options if selected]
            if not self._multiple:
                chosen = chosen or [value for value, _selected in self._options[:1]]
            self.fields.extend((self._select, value) for value in chosen)
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            self.fields.append((self._textarea, self._text.removeprefix("\n")))
            self._textarea = None


def form_fields(html: str) -> dict[str, Any]:
    """What a browser would post of the page's main form: {name: value, or a list of values}."""
    parser = _ChangeForm()
    parser.feed(html)
    data: dict[str, Any] = {}
    for name, value in parser.fields:
        if name in data:
            data[name] = [*data[name], value] if isinstance(data[name], list) else [data[name], value]
        else:
            data[name] = value
    return data


def model_admin() -> Principal:
    """The principal `model-admin`, an admin of every site (made on first use)."""
    return Principal.objects.get_or_create(name="model-admin", defaults={
        "role": "admin", "all_sites": True, "all_zones": True, "cert_sha256": "0" * 64})[0]


@contextmanager
def admin_client() -> Iterator[Client]:
    """A client the admin lets in as `model_admin()`."""
    with mock.patch("access.admin_access.admin_principal", return_value=(model_admin(), "", "")):
        yield Client()


def admin_change(client: Client, path: str, change: dict[str, Any]):
    """GET the change form at `path`, POST it back with `change` (a checkbox set to False is left out,
    as a browser leaves it)."""
    page = client.get(path)
    assert page.status_code == 200, (path, page.status_code)
    data = form_fields(page.content.decode())
    for field, value in change.items():
        if value is False:
            data.pop(field, None)
        else:
            data[field] = "on" if value is True else str(value)
    return client.post(path, data)


def admin_delete(client: Client, path: str):
    """Confirm the delete page at `path`, as its "Yes, I'm sure" button does."""
    return client.post(path, {"post": "yes"})

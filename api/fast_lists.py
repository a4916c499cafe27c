"""The lists automation polls most, `/api/links/` and `/api/operations/`, answered in one SQL statement.

Through Django and DRF such a GET costs two round trips (the principal, the page) and the serializers;
the registry's read cache (serving/read_cache.py) cannot keep them, as they change with every
operation. So this WSGI wrapper, in front of the read cache (flexzone/wsgi.py), answers exactly these
list GETs itself: one statement reads the certificate's principal, the page's rows, the count when the
page cannot tell it (as api.pagination does) and, for a principal limited to some sites, the WWNs it
may see; Python builds the JSON from the tuples with DRF's own field conversions, pagination links and
renderer, and the answer carries the headers Django gave this list last (none until it has answered
one). What is asked is read with the view's own rules (its filters' checks, the pagination's bounds),
once per distinct request (ASKED). The same statement reads the registry's generation and the list's
own (operations/generation.py): when they are those of a page this process built for the same request
and principal, PostgreSQL skips the page and the kept body is served (api/list_pages.py); any committed
change to the list or the registry makes it unreachable.

It answers only when it can settle everything: a GET of the list itself in JSON (no Accept, `*/*` or
`application/json`), query parameters among the view's filters and limit/offset, each once and valid,
an allowed Host, a client certificate not in the CRL whose principal is not revoked and has a role
that may read the list; a principal limited to some sites gets the rows `access.permissions.visible`
lets it see (the statement applies the models' SCOPE_SITES). Anything else (a bad value, an unknown
parameter, another format, any refusal, the database away, SQLite) goes the whole way through Django,
which answers, refuses and audits as always. `FLEXZONE_API_FAST_LISTS=0` turns it
off. `tests/api/test_fast_lists.py` holds it to DRF's answers byte for byte.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest, get_script_name
from django.core.signals import setting_changed
from django.db import close_old_connections, connection
from django.http import QueryDict
from django.urls import reverse, set_script_prefix
from django.utils import timezone
from prometheus_client import Counter
from rest_framework import ISO_8601, exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.settings import api_settings

from access.authentication import client_identity
from access.authentication import crl_cache as _crl_cache
from access.models import Principal, Role
from access.permissions import has_role
from access.redaction import Hidden
from api.fast_sql import SENTINEL, TYPES, FastList, Unsettled, check_statement, lists, page_statement
from api.list_pages import Page, Pages
from api.pagination import Pagination
from api.schema import QueryFilter
from api.views import OperationViewSet
from operations import generation

log = logging.getLogger("flexzone.api")
StartResponse = Callable[..., Any]
JSON_ACCEPTS = (None, "*/*", "application/json")

answers_total = Counter("flexzone_fast_lists", "Link and operation list GETs by who answered them (fast: the "
                        "one-statement path in front of Django, kept: the same with a page it kept, its "
                        "generations read unchanged; django: anything it could not settle).", ["by"])
rows_total = Counter("flexzone_fast_lists_rows", "Items of the pages the one-statement path built, by how: built "
                     "(written from the row PostgreSQL sent) or reused (the row unchanged since a page this "
                     "process kept: that page's bytes for it).", ["how"])


@dataclass
class _Prepared:
    """What a list's requests share, worked out once: the filters this path knows that mean here what
    they mean in the view (the view's own checks of their values), the roles that may read it, and
    its statement for each set of filters given, and the check of a page it kept (name, PREPARE)."""

    fast: FastList
    checks: dict[str, QueryFilter]
    readers: frozenset[str]
    statements: dict[tuple[str, ...], tuple[str, str]]
    check: tuple[str, str]

    @classmethod
    def of(cls, fast: FastList) -> _Prepared:
        checks = {check.param: check for check in fast.view.query_filters()
                  if check.param in fast.filters and fast.filters[check.param][0] == check.lookup}
        readers = frozenset(role for role in Role if has_role(Principal(role=role), fast.view.read_role))
        return cls(fast, checks, readers, {}, check_statement(fast))

    def statement(self, given: tuple[str, ...]) -> tuple[str, str]:
        """(its name, the PREPARE of it) for this set of filters."""
        found = self.statements.get(given)
        if found is None:
            name = f"flexzone_fast_{self.fast.view.audit_noun}_{'_'.join(given) or 'all'}"
            types = ", ".join(TYPES + ("text",) * len(given))
            found = self.statements[given] = (name, f"PREPARE {name} ({types}) AS {page_statement(self.fast, given)}")
        return found


_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()  # per database connection


class _Query:
    """What the pagination reads of a request: its query and its absolute URI (no more of the request is
    kept, so nothing of a connection outlives it)."""

    def __init__(self, query_params: QueryDict, uri: str) -> None:
        self.query_params = query_params
        self.uri = uri

    def build_absolute_uri(self) -> str:
        return self.uri


# What of a request shapes what it asks (_Asked): the view's checks, the page's bounds and its links
# (scheme, host and script name as Django's request reads them) are functions of these and the settings.
ASKED = ("PATH_INFO", "QUERY_STRING", "SCRIPT_NAME", "SCRIPT_URL", "REDIRECT_URL", "HTTP_HOST", "SERVER_NAME",
         "SERVER_PORT", "wsgi.url_scheme", "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PORT")
ASKED_KEPT = 1024  # distinct requests whose reading is kept per process (both lists), at most
LINKS_KEPT = 64  # counts whose page links are kept per request, at most


@dataclass
class _Asked:
    """What one request asks of a list, read once with the view's own rules and kept for every request
    alike (ASKED): the filters given and their values, the page's bounds, an operation's URL (with
    SENTINEL for its id) and the page links worked out so far, by count. None of it reads the database."""

    given: tuple[str, ...]
    values: tuple[Any, ...]
    limit: int | None
    offset: int
    url: str
    query: _Query
    links: dict[int, tuple[str | None, str | None]]
    key: tuple = ()  # its ASKED values

    def page_links(self, count: int) -> tuple[str | None, str | None]:
        """(next, previous) as the pagination writes them for this many rows."""
        found = self.links.get(count)
        if found is None:
            pagination = Pagination()
            # The pagination reads nothing else of its request than _Query holds.
            pagination.request = cast(Request, self.query)
            pagination.limit, pagination.offset, pagination.count = self.limit, self.offset, count
            found = (pagination.get_next_link(), pagination.get_previous_link())
            if len(self.links) >= LINKS_KEPT:
                self.links.clear()
            self.links[count] = found
        return found


pages = Pages()


class _Meta:
    """What access.authentication reads of a request: its WSGI environ."""

    def __init__(self, environ: dict) -> None:
        self.META = environ


class FastLists:
    """WSGI middleware: the lists above answered without Django when everything can be settled; `app`
    (Django behind the read cache) answers the rest."""

    def __init__(self, app: Callable[[dict, StartResponse], Iterable[bytes]]) -> None:
        self.app = app
        # SQLite has no such statement to offer; dates in another format or time zone are DRF's to write.
        self.lists = {path: _Prepared.of(fast) for path, fast in lists().items()} if (
            connection.vendor == "postgresql" and api_settings.DATETIME_FORMAT == ISO_8601 and settings.USE_TZ
            and settings.TIME_ZONE == "UTC" and JSONRenderer.compact) else {}
        self.headers: dict[str, list[tuple[str, str]]] = {}  # Django's, per list, learnt from its last 200
        self._guard = threading.Lock()
        # Each request's reading (or None: Django answers it), by what shapes it (ASKED and the header
        # SECURE_PROXY_SSL_HEADER names); forgotten when a setting changes (tests override them).
        self.asked: dict[tuple, _Asked | None] = {}
        setting_changed.connect(self._forget, weak=True)

    def _forget(self, **_kwargs: Any) -> None:
        self.asked = {}

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        prepared = self.lists.get(environ.get("PATH_INFO", ""))
        if (prepared is None or environ.get("REQUEST_METHOD") != "GET" or not settings.FLEXZONE_API_FAST_LISTS
                or environ.get("HTTP_ACCEPT") not in JSON_ACCEPTS):
            return self.app(environ, start_response)
        headers = self.headers.get(environ["PATH_INFO"])
        body, by = None, "fast"
        if headers is not None:
            try:
                body, by = self._answer(prepared, environ) or (None, by)
            except (Unsettled, exceptions.APIException, DisallowedHost):
                body = None
            except Exception:  # noqa: BLE001 - the database away, not migrated, an unusable CRL: Django says
                log.debug("fast list failed; Django answers", exc_info=True)
                body = None
        if body is None or headers is None:
            answers_total.labels("django").inc()
            return self._through_django(environ, start_response)
        answers_total.labels(by).inc()
        start_response("200 OK", [(name, str(len(body)) if name.lower() == "content-length" else value)
                                  for name, value in headers])
        close_old_connections()  # as Django does after a request (FLEXZONE_DB_CONN_MAX_AGE)
        return [body]

    def _through_django(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        """Django's answer, whose headers are kept when it is a list's plain JSON 200 (the headers of
        every answer from here: they depend on the path and the format only)."""
        path = environ["PATH_INFO"]

        def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if (status.startswith("200 ") and any(name.lower() == "content-length" for name, _ in headers)
                    and not any(name.lower() == "set-cookie" for name, _ in headers)
                    and dict((name.lower(), value) for name, value in headers).get("content-type")
                    == "application/json"):
                with self._guard:
                    self.headers[path] = list(headers)
            return start_response(status, headers, exc_info)

        return self.app(environ, keep)

    def _answer(self, prepared: _Prepared, environ: dict) -> tuple[bytes, str] | None:
        """The body Django would give and whether it was kept or built, or None (or an exception) when this
        cannot settle it."""
        if timezone.get_current_timezone_name() != "UTC":
            return None  # a time zone activated in this thread (nothing in flexzone does): DRF writes the dates
        asked = self._asked(prepared, environ)
        if asked is None:
            return None
        identity = client_identity(_Meta(environ))
        if identity is None or _crl_cache().is_revoked(identity.cert):
            return None
        key, who = (asked.key, identity.sha256), [identity.sha256, identity.issuer, identity.serial]
        kept = pages.get(key)
        if kept is not None and not kept.stale:  # whether it may go out, in a statement smaller than the page's
            rows = self._rows(*prepared.check, [*who, kept.token])
            if not rows or not self._may_read(prepared, rows[0]):
                return None
            if rows[0][10] and kept.reader == tuple(rows[0][:3]):  # fresh: read unchanged in this snapshot
                return kept.body, "kept"
            kept.stale = True  # changed since: the next request asks the page's statement straight away
        rows = self._rows(*prepared.statement(asked.given), [
            *who, asked.limit, asked.offset, kept.token if kept else "", list(kept.items) if kept else [],
            *asked.values])
        if not rows or not self._may_read(prepared, rows[0]):
            return None
        (pk, role, all_sites, _active, registry_epoch, registry, _registry_rows, lists_epoch, lists, _lists_rows,
         fresh, count, visible, items, floats_odd) = rows[0]
        reader = (pk, role, all_sites)
        if fresh:  # the kept page's generations (PostgreSQL skipped the page), and it is this principal's
            if kept is None or kept.reader != reader:
                return None
            kept.stale = False
            return kept.body, "kept"
        if floats_odd:
            return None
        built = self._items(prepared, asked, kept if kept is not None and kept.reader == reader else None,
                            role == Role.ADMIN, visible, json.loads(items))
        if built is None:
            return None
        following, preceding = asked.page_links(count)
        # DRF's renderer writes the page compactly, its results as its items' own renderings joined by commas.
        head = JSONRenderer().render({"count": count, "next": following, "previous": preceding, "results": []})
        body = b"".join([head[:-2], b",".join(built.values()), b"]}"]) if built else head
        # Built over a kept page: its rows are changing, so the next request goes straight to this statement too.
        pages.put(key, Page(f"{registry_epoch}:{registry}/{lists_epoch}:{lists}", reader, body, built,
                            stale=kept is not None))
        return body, "fast"

    @staticmethod
    def _items(prepared: _Prepared, asked: _Asked, kept: Page | None, admin: bool, visible: list[str] | None,
               marked: list[list]) -> dict[str, bytes] | None:
        """The page's items as DRF writes them, by their rows' marks, in order (`marked`: [mark, same, [the
        item as PostgreSQL wrote it, odd]], or with `same` and no item: the row and its names unchanged since
        the kept page's, whose bytes for it are used); None when this cannot settle them."""
        finish, renderer = prepared.fast.finish, JSONRenderer()
        hidden = Hidden(set(visible)) if visible is not None else None
        built: dict[str, bytes] = {}
        reused = 0
        for mark, same, written in marked:
            if same:
                found = kept.items.get(mark) if kept is not None else None
                if found is None:
                    return None
                built[mark], reused = found, reused + 1
                continue
            if not isinstance(written, list):  # the row could not be read with its names
                return None
            item, odd = written
            if odd:
                return None
            finish(item, admin, asked.url)
            built[mark] = renderer.render(hidden.redact(item) if hidden is not None else item)
        rows_total.labels("reused").inc(reused)
        rows_total.labels("built").inc(len(marked) - reused)
        return built

    def _asked(self, prepared: _Prepared, environ: dict) -> _Asked | None:
        """What this request asks, read as the view reads it, or None when this path leaves it to Django."""
        proxied = settings.SECURE_PROXY_SSL_HEADER
        key = (*(environ.get(name) for name in ASKED), environ.get(proxied[0]) if proxied else None)
        if key in self.asked:
            return self.asked[key]
        try:
            found = self._read(prepared, environ)
        except (Unsettled, exceptions.APIException, DisallowedHost):
            found = None
        if len(self.asked) >= ASKED_KEPT:
            self.asked = {}
        if found is not None:
            found.key = key
        self.asked[key] = found
        return found

    @staticmethod
    def _read(prepared: _Prepared, environ: dict) -> _Asked | None:
        request = WSGIRequest(environ)
        request.get_host()  # DisallowedHost: Django's 400
        query = request.GET
        given = tuple(sorted(param for param in query if param not in ("limit", "offset")))
        if any(len(query.getlist(param)) != 1 for param in query) or not set(given) <= prepared.checks.keys():
            return None
        values = tuple(prepared.checks[param].clean(query[param]) for param in given)
        asked, pagination = _Query(query, request.build_absolute_uri()), Pagination()
        limit, offset = pagination.get_limit(asked), pagination.get_offset(asked)
        url = ""
        if prepared.fast.view is OperationViewSet:
            set_script_prefix(get_script_name(environ))  # as Django's handler does, for reverse()
            url = request.build_absolute_uri(reverse("operation-detail", args=[SENTINEL]))
        return _Asked(given, values, limit, offset, url, asked, {})

    def _may_read(self, prepared: _Prepared, row: tuple) -> bool:
        """Whether the principal may read the list (else Django answers, and refuses); the generations read
        are noted (one lower than seen forgets every page) and the lists' change rows folded now and then."""
        _pk, role, _all_sites, active, registry_epoch, registry, _rows, lists_epoch, lists, lists_rows = row[:10]
        if not active or role not in prepared.readers:
            return False
        if lists_rows > generation.FOLD_AT:
            self._fold()
        pages.saw((registry_epoch, registry), (lists_epoch, lists))
        return True

    @staticmethod
    def _fold() -> None:
        with connection.cursor() as cursor:
            cursor.execute(generation.FOLD)

    @staticmethod
    def _rows(name: str, prepare: str, params: list[Any]) -> list[tuple]:
        close_old_connections()  # as Django does around a request: a connection past its age is closed first
        connection.ensure_connection()
        raw = connection.connection
        try:
            # Prepared once per database connection, as the read cache's statement: planning it costs
            # several times what running it does, and Django's connections prepare nothing themselves.
            with raw.cursor() as cursor:
                names = _prepared.setdefault(raw, set())
                if name not in names:
                    cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = %s", [name])
                    if not cursor.fetchone()[0]:
                        cursor.execute(prepare)
                    names.add(name)
                cursor.execute(f"EXECUTE {name} ({', '.join(['%s'] * len(params))})", params)
                return cursor.fetchall()
        except psycopg.Error:
            _prepared.pop(raw, None)  # a session reset (or a failed PREPARE) forgets them: prepared again
            if raw.broken:
                connection.close()  # Django opens a new one for the request
            raise

"""A read cache for the registry's GET endpoints, checked against the database on every request.

Sites, zones, routers, devices and hosts change rarely and are read often (every CLI listing, every
script that polls). Serving one through DRF costs three times what gunicorn and TLS cost, and most of
it goes into building the same JSON again. So each worker process keeps the bodies it served, and a
request is answered from there when, read in one statement at that moment:

- its client certificate is registered to a principal that is not revoked, whose role may read
  the registry (viewer, operator or admin); the body was made for that very principal (its id), with
  the role and scope flags it has now (the CRL is checked first, as for any request);
- the registry's generation is the one the body was made at. The generation grows with every
  committed transaction that changes one of the tables these endpoints read, or a principal or its
  scope, however it was written (registry/migrations/0001_initial.py); a body is stored
  under the generation read *before* it was made, so a change that commits meanwhile (a role taken
  away between this read and Django's own, say) makes it unreachable, never wrong. A generation lower
  than one already seen (a database restored to an earlier point) empties the cache.

Anything else goes the whole way through Django and DRF, which refuse, audit and count as always
(no refusal is ever answered from here, nor anything the lookup could not settle). Only 200 answers
without cookies are kept, keyed by everything of the request that shapes them (KEYED), at most
`ENTRIES` of them and `BUDGET` bytes per process. It wraps Django's WSGI application
(flexzone/wsgi.py), so a hit costs one statement and no Django request at all; the database
connection is aged and closed as Django would around a request. SQLite has no generation: there the
cache is off. Changes made with the triggers switched off (session_replication_role=replica,
ALTER TABLE ... DISABLE TRIGGER, a table rewritten by DDL) are not seen: restart the API after such
work, or after restoring the database.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import psycopg
from django.db import close_old_connections, connection
from prometheus_client import Counter

from access.authentication import client_identity, crl_cache
from access.models import Principal

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("flexzone.api")

CACHED = re.compile(r"\A/api/(sites|zones|routers|devices|hosts)/([0-9]+/)?\Z")
READERS = ("viewer", "operator", "admin")
# What else of a request shapes its answer (links in a page are built from the host, scheme and script
# name; the format from Accept).
KEYED = ("PATH_INFO", "QUERY_STRING", "SCRIPT_NAME", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT", "wsgi.url_scheme",
         "HTTP_ACCEPT")
ENTRIES = 512
LARGEST = 256 * 1024  # bytes: a larger body is not kept
BUDGET = 32 * 1024 * 1024  # bytes kept per process at most

FOLD_AT = 64  # change rows beyond which a reader folds them into the generation's base
# Fingerprint first, then issuer and serial, as access.authentication.find_principal looks them up; the
# generation is read in the same statement, so from the same snapshot.
# Prepared once per database connection (planning it cost more than running it): Django's connections
# bind parameters on the client and prepare nothing themselves.
_PREPARE = f"""
    PREPARE flexzone_registry_reader (text, text, text) AS
    SELECT p.id, p.role, p.all_sites, p.all_zones, p.revoked_at IS NULL, g.epoch, g.folded,
           (SELECT count(*) FROM flexzone_registry_changes)
      FROM {Principal._meta.db_table} AS p CROSS JOIN flexzone_registry_generation AS g
     WHERE p.cert_sha256 = $1 OR (p.cert_issuer = $2 AND p.cert_serial = $3)
     ORDER BY p.cert_sha256 = $1 DESC NULLS LAST
     LIMIT 1
"""
_READ = "EXECUTE flexzone_registry_reader (%s, %s, %s)"
# One statement, so a reader sees either the rows or their count in `folded`, never both or neither.
_FOLD = """
    WITH gone AS (DELETE FROM flexzone_registry_changes RETURNING 1)
    UPDATE flexzone_registry_generation SET folded = folded + (SELECT count(*) FROM gone) WHERE id = 1
"""


class _Bodies:
    """The bodies this process served, least recently used first out (at most ENTRIES, BUDGET bytes)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple, tuple[bytes, list[tuple[str, str]]]] = OrderedDict()
        self._bytes = 0
        self._guard = threading.Lock()

    def get(self, key: tuple) -> tuple[bytes, list[tuple[str, str]]] | None:
        with self._guard:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: tuple, entry: tuple[bytes, list[tuple[str, str]]]) -> None:
        with self._guard:
            replaced = self._entries.pop(key, None)
            self._bytes += len(entry[0]) - (len(replaced[0]) if replaced else 0)
            self._entries[key] = entry
            while len(self._entries) > ENTRIES or self._bytes > BUDGET:
                _key, (content, _headers) = self._entries.popitem(last=False)
                self._bytes -= len(content)

    def clear(self) -> None:
        with self._guard:
            self._entries.clear()
            self._bytes = 0


bodies = _Bodies()
lookups_total = Counter("flexzone_read_cache_lookups", "Registry GETs the read cache could answer, by result "
                        "(hit: answered from a body kept; miss: served by Django, and kept if it was a 200).",
                        ["result"])


class _Generations:
    """The highest generation this process has read, per epoch: one that goes down (the database was
    restored to an earlier point) empties the cache, whose bodies may then be of another history."""

    def __init__(self) -> None:
        self._highest: dict[str, int] = {}
        self._guard = threading.Lock()

    def saw(self, epoch: str, generation: int) -> None:
        with self._guard:
            if generation < self._highest.get(epoch, generation):
                bodies.clear()
                log.warning("the registry's generation went down (%s -> %s): the read cache is emptied",
                            self._highest[epoch], generation)
            self._highest[epoch] = max(generation, self._highest.get(epoch, generation))


generations = _Generations()
_prepared: weakref.WeakSet = weakref.WeakSet()  # the database connections the statement is prepared on


def _reader_and_generation(environ: dict) -> tuple[tuple, tuple] | None:
    """(who the body is for, the registry's epoch and generation), or None when the request must go the
    whole way (Django answers it, whatever went wrong here)."""
    identity = client_identity(_Meta(environ))
    if identity is None or crl_cache().is_revoked(identity.cert):
        return None
    # As Django does around a request: a connection past its age (or broken) is closed first.
    close_old_connections()
    connection.ensure_connection()
    raw = connection.connection
    try:
        with raw.cursor() as cursor:
            if raw not in _prepared:
                cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = 'flexzone_registry_reader'")
                if not cursor.fetchone()[0]:
                    cursor.execute(_PREPARE)
                _prepared.add(raw)
            cursor.execute(_READ, [identity.sha256, identity.issuer, identity.serial])
            row = cursor.fetchone()
            if row is not None and row[-1] > FOLD_AT:
                cursor.execute(_FOLD)
    except psycopg.Error:
        _prepared.discard(raw)  # a session reset (or a failed PREPARE) forgets it: prepared again next time
        if raw.broken:
            connection.close()  # Django opens a new one for the request
        raise
    if row is None:
        return None
    pk, role, all_sites, all_zones, active, epoch, folded, changes = row
    if not active or role not in READERS:
        return None
    generations.saw(str(epoch), folded + changes)
    return (pk, role, all_sites, all_zones), (str(epoch), folded + changes)


class _Meta:
    """What access.authentication reads of a request: its WSGI environ."""

    def __init__(self, environ: dict) -> None:
        self.META = environ


class RegistryReadCache:
    """WSGI middleware around Django: a cached body goes out without Django being asked at all (the
    headers Django's middleware added to it are stored with it)."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if (environ.get("REQUEST_METHOD") != "GET" or not CACHED.match(environ.get("PATH_INFO", ""))
                or connection.vendor != "postgresql"):
            return self.app(environ, start_response)
        try:
            found = _reader_and_generation(environ)
        except Exception:  # noqa: BLE001 - the database away, the tables not migrated yet, an unusable CRL:
            log.debug("read cache lookup failed; Django answers", exc_info=True)  # Django says what it is
            found = None
        if found is None:
            return self.app(environ, start_response)
        reader, generation = found
        key = (generation, reader, *(environ.get(name, "") for name in KEYED))
        entry = bodies.get(key)
        lookups_total.labels("hit" if entry is not None else "miss").inc()
        if entry is not None:
            content, headers = entry
            start_response("200 OK", list(headers))
            close_old_connections()  # as Django does after a request (FLEXZONE_DB_CONN_MAX_AGE)
            return [content]
        answer: dict = {}

        def keep(status, headers, exc_info=None):
            answer.update(status=status, headers=headers)
            return start_response(status, headers, exc_info)

        response = self.app(environ, keep)
        try:
            content = b"".join(response)
        finally:
            if hasattr(response, "close"):
                response.close()  # Django's request_finished, as the server would have called it
        headers = answer.get("headers") or []
        if (answer.get("status", "").startswith("200 ") and len(content) <= LARGEST
                and not any(name.lower() == "set-cookie" for name, _ in headers)):
            bodies.put(key, (content, list(headers)))
        return [content]

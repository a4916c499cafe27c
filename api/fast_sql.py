"""The SQL of the lists' one-statement path (api/fast_lists.py): each list's table, joins, filters and
fields, an item as PostgreSQL writes it in JSON as DRF would, what Python settles of an item, and the
statements: the page with its principal and generations (the rows of the principal's sites, by the scope
rule of access.permissions.visible), and the check of a kept page alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Field, ManyToManyField, Model

from access.models import Principal
from api.views import LinkViewSet, OperationViewSet, RegistryViewSet
from operations import generation
from operations.models import Link, Operation
from registry.models import Device, Host, Initiator, Router, Site

SENTINEL = 9876543210  # an id no reverse() output holds otherwise, replaced by each operation's


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _column(model: type[Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column, name
    return connection.ops.quote_name(field.column)


class Unsettled(Exception):
    """Something the fast path does not answer: Django does."""


@dataclass(frozen=True)
class FastList:
    """One list: its view; its table (`table`, as `alias`) and the tables joined to it (`joins`: alias ->
    JOIN clause); its `filters` (query parameter -> the view's lookup it stands for and the SQL
    expression, over those aliases, that the lookup compares); an item's `fields` in the serializer's
    order (name -> SQL, of which `dates` are timestamptz and `floats` float8 columns), what Python
    settles of an item PostgreSQL built (`finish`), and the list's generation (generation.LISTS)."""

    view: type[RegistryViewSet]
    table: str
    alias: str
    joins: dict[str, str]
    filters: dict[str, tuple[str, str]]
    fields: dict[str, str]
    dates: frozenset[str]
    floats: frozenset[str]
    finish: Callable[[dict, bool, str], None]  # (item, admin, the operation URL template)
    generation: int
    # SQL, over the aliases, for the id of each site a row belongs to (its model's SCOPE_SITES, the one scope
    # rule of access.permissions.visible): a principal limited to some sites gets the rows of those only.
    scope: tuple[str, ...] = ()

    def json(self) -> str:
        """SQL: an item as JSON, its fields in the serializer's order (json_build_object keeps it)."""
        values = {name: _iso(sql) if name in self.dates else _float(sql) if name in self.floats else sql
                  for name, sql in self.fields.items()}
        pairs = ", ".join(f"'{name}', {sql}" for name, sql in values.items())
        return f"json_build_object({pairs})"

    def odd(self) -> str:
        """SQL: true when a value is one this path does not write as DRF does (see _iso and _float)."""
        dates = [f"NOT coalesce({self.fields[name]} >= '0001-01-01 00:00:00+00' AND {self.fields[name]} < "
                 f"'10000-01-01 00:00:00+00', TRUE)" for name in sorted(self.dates)]
        floats = [f"{self.fields[name]} IN ('NaN', 'Infinity', '-Infinity')" for name in sorted(self.floats)]
        return " OR ".join(dates + floats) or "FALSE"

    def rows(self, given: tuple[str, ...], where: str) -> str:
        """FROM ... WHERE for the rows these filters keep, joining only what the filters read."""
        aliases = {self.filters[param][1].split(".", 1)[0] for param in given} | {
            expression.split(".", 1)[0] for expression in self.scope}
        joins = "".join(f" {join}" for alias, join in self.joins.items() if alias in aliases)
        return f"{self.table} AS {self.alias}{joins} WHERE {where}"



def _iso(column: str) -> str:
    """SQL for a timestamptz column as DRF's DateTimeField writes it in ISO 8601 in UTC (the only time zone
    this path answers for): microseconds only when there are some, `Z` for the offset; NULL stays NULL.
    Formatted by PostgreSQL: psycopg's time-zone-aware loader that Django installs costs more per value
    than the rest of a row."""
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN to_char({utc}, 'US') = '000000' THEN '' "
            f"ELSE to_char({utc}, '.US') END || 'Z'")


def _float(column: str) -> str:
    """SQL for a float8 column as a JSON number that Python reads as the same float: PostgreSQL writes the
    shortest text that reads back as the same value (extra_float_digits >= 1, checked in the statement);
    a whole number gets `.0`, or Python would read an int. NaN and infinities are flagged (odd)."""
    return (f"CASE WHEN {column} IN ('NaN', 'Infinity', '-Infinity') THEN NULL "
            f"WHEN {column}::text ~ '^-?[0-9]+$' THEN ({column}::text || '.0')::json ELSE {column}::text::json END")


def _strings(value: Any) -> list[str]:
    """A ListField(child=CharField) of the stored JSON, as DRF gives it; anything but a list of strings: Django."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Unsettled
    return value


def _link(item: dict, admin: bool, url: str) -> None:
    _strings(item["initiators"])
    if not isinstance(item["pairs"], list):
        raise Unsettled
    for pair in item["pairs"]:
        _strings(pair)


def _operation(item: dict, admin: bool, url: str) -> None:
    item["url"] = url.replace(str(SENTINEL), str(item["id"]))
    if not admin:  # the transcript is for admins (OperationSerializer); zoning images go with one operation only
        del item["transcript"]


def lists() -> dict[str, FastList]:
    def join(kind: str, model: type[Model], alias: str, on: str) -> str:
        return f"{kind} JOIN {_table(model)} AS {alias} ON {alias}.id = {on}"

    link = {"s": join("", Site, "s", f"l.{_column(Link, 'site')}"),
            "d": join("", Device, "d", f"l.{_column(Link, 'device')}"),
            "r": join("", Router, "r", f"l.{_column(Link, 'router')}")}
    link_scope = _belongs(Link, "l", {"site": "s", "device": "d", "router": "r"})
    return {
        "/api/links/": FastList(
            LinkViewSet, _table(Link), "l", link,
            {"state": ("state", "l.state"), "site": ("site__name", "s.name"), "router": ("router__name", "r.name"),
             "device": ("device__description", "d.description")},
            {"id": "l.id", "site": "s.name", "device": "d.description", "router": "r.name", "port": "l.port",
             "zone": "l.zone_number", "remote_ip": "l.remote_ip", "state": "l.state", "initiators": "l.initiators",
             "pairs": "l.pairs", "lease_expires_at": "l.lease_expires_at", "created_at": "l.created_at",
             "updated_at": "l.updated_at", "up_at": "l.up_at", "down_at": "l.down_at"},
            frozenset({"lease_expires_at", "created_at", "updated_at", "up_at", "down_at"}), frozenset(),
            _link, generation.LISTS["links"], link_scope),
        "/api/operations/": FastList(
            OperationViewSet, _table(Operation), "o",
            {"p": join("LEFT", Principal, "p", f"o.{_column(Operation, 'principal')}")},
            {"state": ("state", "o.state"), "kind": ("kind", "o.kind")},
            {"id": "o.id", "url": "NULL", "kind": "o.kind", "state": "o.state", "phase": "o.phase",
             "principal": "p.name", "request": "o.request", "plan": "o.plan", "result": "o.result",
             "attempts": "o.attempts", "error": "o.error",
             "transcript": "CASE WHEN who.role = 'admin' THEN o.transcript END", "registry_ms": "o.registry_ms",
             "invocation_ms": "o.invocation_ms", "router_ms": "o.router_ms", "total_ms": "o.total_ms",
             "created_at": "o.created_at", "started_at": "o.started_at", "finished_at": "o.finished_at",
             "heartbeat_at": "o.heartbeat_at"},
            frozenset({"created_at", "started_at", "finished_at", "heartbeat_at"}),
            frozenset({"registry_ms", "invocation_ms", "router_ms", "total_ms"}),
            _operation, generation.LISTS["operations"]),
    }


def _belongs(model: type[Model], alias: str, joined: dict[str, str]) -> tuple[str, ...]:
    """SQL for the id of each site a row of `model` (as `alias`) belongs to, one per lookup of its
    SCOPE_SITES: a field of its own, or one of a table joined by a relation (`joined`: the relation's
    name -> its alias)."""
    expressions = []
    for lookup in getattr(model, "SCOPE_SITES", ()):
        relation, _, field = lookup.partition("__")
        if not field:
            expressions.append(f"{alias}.{_column(model, relation)}")
            continue
        related = model._meta.get_field(relation).related_model
        assert isinstance(related, type) and "__" not in field, lookup
        expressions.append(f"{joined[relation]}.{_column(related, field)}")
    return tuple(expressions)


# The statement's first parameters (the last two: the generations of the page kept and its rows' marks, see
# api/list_pages.py); the filters' follow.
ORDER = ("sha", "issuer", "serial", "limit", "offset", "kept", "marks")
TYPES = ("text", "text", "text", "bigint", "bigint", "text", "text[]")
# The registry's generation (registry/migrations/0001_initial.py): the names on a page and the scopes.
REGISTRY_CHANGES, REGISTRY_GENERATION = "flexzone_registry_changes", "flexzone_registry_generation"


def _heads(kept: str, fast: FastList) -> str:
    """The CTEs both statements begin with: the registry's and the list's own generations (read once, in
    the statement's snapshot; `lists_rows`: every list's change rows, which a reader folds past
    generation.FOLD_AT), whether they are those of the kept page (`kept`: its parameter, the page's
    generations as Python writes them) and the principal (by fingerprint first, then issuer and serial, as
    access.authentication.find_principal)."""
    return f"""gen AS MATERIALIZED (
        SELECT rg.epoch::text AS registry_epoch, rg.folded AS registry_folded,
               (SELECT count(*) FROM {REGISTRY_CHANGES}) AS registry_rows, lg.epoch::text AS lists_epoch,
               lg.folded + lc.mine AS lists, lc.all_rows AS lists_rows
          FROM {REGISTRY_GENERATION} AS rg, {generation.GENERATIONS} AS lg, {generation.counts(fast.generation)} AS lc
         WHERE rg.id = 1 AND lg.id = {fast.generation}),
    kept AS MATERIALIZED (
        SELECT *, registry_epoch || ':' || registry || '/' || lists_epoch || ':' || lists = {kept} AS fresh,
               registry_epoch || ':' || registry = split_part({kept}, '/', 1) AS same_names
          FROM (SELECT *, registry_folded + registry_rows AS registry FROM gen) AS g),
    who AS (
        SELECT id, role, all_sites, revoked_at IS NULL AS active FROM {_table(Principal)}
         WHERE cert_sha256 = $1 OR (cert_issuer = $2 AND cert_serial = $3)
         ORDER BY cert_sha256 = $1 DESC NULLS LAST LIMIT 1)"""


# What both statements answer first, in this order.
HEAD = "who.id, who.role, who.all_sites, who.active, kept.registry_epoch, kept.registry, kept.registry_rows, " \
       "kept.lists_epoch, kept.lists, kept.lists_rows, kept.fresh"


def check_statement(fast: FastList) -> tuple[str, str]:
    """(its name, the PREPARE of) the statement that tells whether a kept page of the list may be served
    (fresh), with the principal to serve it to: parameters sha, issuer, serial and the page's
    generations. Smaller than the page's statement, whose plan PostgreSQL sets up in full even when it
    skips the page."""
    name = f"flexzone_fast_check_{fast.view.audit_noun}"
    return name, f"PREPARE {name} (text, text, text, text) AS WITH {_heads('$4', fast)} SELECT {HEAD} " \
                 "FROM who CROSS JOIN kept"


def page_statement(fast: FastList, given: tuple[str, ...]) -> str:
    """The one statement for a list with these filters given: the principal (by fingerprint first, then
    issuer and serial, as access.authentication.find_principal), the page's ids, the count only when the
    page cannot tell it (an InitPlan runs only if reached), what a site-scoped principal may see of WWNs
    (access.redaction.hidden_initiators), and the page's items, newest first as the models are ordered,
    as one JSON array of [mark, same, written] built by PostgreSQL (below).

    A row's mark is its id, the transaction id that wrote its version (xmin) and where that version lies
    (ctid): any committed change of the row writes a new version, with its writer's transaction id, so it
    gets another mark (transaction ids come round again only after 2^32 transactions, and the version
    would also have to lie where the old one did). Each item is [mark, same, written]: `same` when the mark
    is among the kept page's (`marks`) while the registry's generation is the kept page's (the names it
    shows, and the scopes), and then nothing is written (the kept page's bytes for it are the same);
    otherwise the row joined to its names and written, as [the item, whether any value in it is odd]
    (left to Django), or false if it could not be read."""
    where = " AND ".join(f"{fast.filters[param][1]} = ${index}"
                         for index, param in enumerate(given, start=len(ORDER) + 1)) or "TRUE"
    through = Principal._meta.get_field("sites")
    assert isinstance(through, ManyToManyField)
    scope = connection.ops.quote_name(through.m2m_db_table())
    if fast.scope:  # the rows of the principal's sites only, unless it sees every site's (access.permissions)
        mine = (f"SELECT ps.{connection.ops.quote_name(through.m2m_reverse_name())} FROM {scope} AS ps JOIN who "
                f"ON ps.{connection.ops.quote_name(through.m2m_column_name())} = who.id")
        belongs = " OR ".join(f"{expression} IN ({mine})" for expression in fast.scope)
        where = f"({where}) AND ((SELECT who.role = 'admin' OR who.all_sites FROM who) OR {belongs})"
    alias, joins = fast.alias, " ".join(fast.joins.values())
    return f"""
    WITH {_heads('$6', fast)},
    page AS (
        SELECT {alias}.id, {alias}.created_at FROM {fast.rows(given, where)}
         ORDER BY {alias}.created_at DESC LIMIT $4 OFFSET $5)
    SELECT {HEAD},
           CASE WHEN kept.fresh THEN NULL
                WHEN (SELECT count(*) FROM page) < $4 AND ((SELECT count(*) FROM page) > 0 OR $5 = 0)
                THEN $5 + (SELECT count(*) FROM page)
                ELSE (SELECT count(*) FROM {fast.rows(given, where)}) END,
           CASE WHEN NOT kept.fresh AND who.role <> 'admin' AND NOT who.all_sites THEN ARRAY(
                SELECT i.{_column(Initiator, 'wwn')} FROM {_table(Initiator)} AS i
                  JOIN {_table(Host)} AS h ON h.id = i.{_column(Initiator, 'host')}
                  JOIN {scope} AS ps ON ps.{connection.ops.quote_name(through.m2m_reverse_name())} = h.site_id
                 WHERE ps.{connection.ops.quote_name(through.m2m_column_name())} = who.id
                UNION SELECT {_column(Device, 'wwn')} FROM {_table(Device)}) END,
           items.json, current_setting('extra_float_digits')::int < 1
      FROM who CROSS JOIN kept LEFT JOIN LATERAL (
           SELECT coalesce(json_agg(json_build_array(marked.mark, marked.same, CASE WHEN NOT marked.same THEN
                    coalesce((SELECT json_build_array({fast.json()}, {fast.odd()})
                                FROM {fast.table} AS {alias} {joins} WHERE {alias}.id = marked.id), 'false') END)
                    ORDER BY marked.created_at DESC), '[]')::text AS json
             FROM (SELECT page.id, page.created_at, mark, kept.same_names AND mark = ANY($7) AS same
                     FROM page JOIN {fast.table} AS {alias} ON {alias}.id = page.id
                    CROSS JOIN LATERAL (SELECT {alias}.id::text || ':' || {alias}.xmin::text || ':'
                                               || {alias}.ctid::text AS mark) AS row_mark) AS marked
            WHERE NOT kept.fresh) AS items ON TRUE"""

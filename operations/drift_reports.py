"""The newest reconcile report of each router, and what it left outstanding (the console's topology and
the drift gauges read these; operations/settling.py writes them as reconcile operations' results).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from operations.models import Operation
from registry.models import Router

DRIFT_KINDS = ("missing", "extra", "mismatched", "unresolved")


def last_reports(scan: int = 50) -> dict[str, dict[str, Any]]:
    """The newest reconcile report of each router registered now:
    {router name: {"operation", "finished_at", "repair", "error", the report's lists, "outstanding"}}.

    `outstanding` maps each of DRIFT_KINDS to what still differed when that reconcile ended: what a
    check found; after a repair, what it left unresolved, and everything it found if it did not
    converge. A router no reconcile ever read is absent; one whose last read failed carries its "error".
    The newest `scan` reconciles usually name every router; one reconciled only long ago is looked up
    on its own.
    """
    names = set(Router.objects.values_list("name", flat=True))
    ended = (Operation.objects.filter(kind=Operation.Kind.RECONCILE, finished_at__isnull=False)
             .order_by("-finished_at").values("pk", "finished_at", "result"))
    latest: dict[str, dict[str, Any]] = {}
    for row in ended[:scan]:
        _take_reports(latest, row, names)
        if names <= latest.keys():
            return latest
    for name in sorted(names - latest.keys()):
        older = ended.filter(result__routers__has_key=name).first()
        if older is not None:
            _take_reports(latest, older, {name})
    return latest


def _take_reports(latest: dict[str, dict[str, Any]], row: Mapping[str, Any], names: set[str]) -> None:
    result = row["result"] or {}
    repair = bool(result.get("repair"))
    for name, report in (result.get("routers") or {}).items():
        if name in latest or name not in names or not isinstance(report, dict):
            continue
        kinds: tuple[str, ...]
        if not repair or report.get("converged") is False:
            kinds = DRIFT_KINDS
        else:
            kinds = ("unresolved",)
        outstanding = {kind: list(report.get(kind) or []) if kind in kinds else [] for kind in DRIFT_KINDS}
        latest[name] = {"operation": row["pk"], "finished_at": row["finished_at"], "repair": repair, **report,
                        "outstanding": outstanding}

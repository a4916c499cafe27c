"""Routers converged at once, each holding it: a reconcile of every router (or one), and the converge
that ends an operation that failed part-way (`settle_routers`). What one router is compared with and
how it is repaired is operations/drift.py's `reconcile_router`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from typing import Any

from operations.conf import ops_settings
from operations.drift import Ending, reconcile_router
from operations.errors import OperationFailed, StepFailed
from operations.journal import Run
from operations.models import Link
from operations.planner import find_router
from operations.steps import with_router
from registry.models import Router


def execute_reconcile(run: Run) -> None:
    """The reconcile operation: each router (or the named one, or those of the sites named) read, compared
    and, with repair, converged."""
    repair, policy = run.op.request.get("repair", False), run.op.request.get("policy", "registry")
    settle_only = run.op.request.get("settle", False)
    name, sites = run.op.request.get("router"), run.op.request.get("sites")
    if name:
        routers = [find_router(name)]
    else:  # every router, or (a principal scoped to some sites asked) every router of those sites
        everywhere = Router.objects.order_by("name")
        routers = list(everywhere.filter(site__in=sites) if sites is not None else everywhere)
    # Every router at once, each on a thread of its own holding it (operations.threads.at_once).
    reports = run.at_once([functools.partial(_reconcile_one, run, router, repair, policy, settle_only)
                           for router in routers], threads=ops_settings().worker_concurrency)
    report = {router.name: found for router, found in zip(routers, reports, strict=True)}
    failed = [router.name for router, found in zip(routers, reports, strict=True) if "error" in found]
    run.op.result = {"repair": repair, "policy": policy, "routers": report}
    if failed:
        raise OperationFailed(f"could not read {', '.join(failed)}")


def _reconcile_one(run: Run, router: Router, repair: bool, policy: str, settle_only: bool,
                   ending: Ending | None = None) -> dict[str, Any]:
    """One router reconciled holding it (a reconcile reads the router first in any case); its report, or
    {"error": why} when it could not be read."""
    try:
        return with_router(run, router, lambda lease, _read_first: reconcile_router(run, router, lease, repair,
                                                                                    policy, settle_only, ending))
    except StepFailed as exc:
        return {"error": str(exc)}


class Unsettled(dict):
    """What the converge that ends an operation could not settle, and why: {(router id, None): why the
    router could not be read} and {(router id, link key): why that link was left as it is}."""

    def of(self, link: Link) -> str | None:
        """Why `link` (a record on one of the routers) was left as it is; None: it was settled."""
        return self.get((link.router_id, None)) or self.get((link.router_id, link.key))


def settle_routers(run: Run, router_ids: Iterable[int], *, ending_grants: tuple[int, list[int]] | None = None
                   ) -> Unsettled:
    """The end of an operation that failed part-way: each router it changed converged at once to the
    grants as they are now, without `ending_grants` (a failed connect's, which the caller ends after:
    the devices stay held until what was made for them is off), this operation's own records settled
    with the rest, as the settle chore would settle them once it ended. So a site keeps whole what it
    holds, or holds nothing, by the one converge every repair uses. The routers get a time budget of
    their own (the operation's limit, at most 60 s): the operation may have spent all of its time.
    Returns what could not be settled (a router not read, a link left unresolved): the settle chore's."""
    run.deadline = max(run.deadline, time.monotonic() + min(60.0, ops_settings().total_timeout))
    routers = [run.row(Router, pk=pk) for pk in dict.fromkeys(router_ids)]
    ending = Ending(run.op.pk, ending_grants)
    reports = run.at_once([functools.partial(_reconcile_one, run, router, True, "registry", True, ending)
                           for router in routers])
    left = Unsettled()
    for router, report in zip(routers, reports, strict=True):
        if "error" in report:
            left[(router.pk, None)] = report["error"]
            continue
        for done in report["repaired"]:
            run.notes.append(f"{router.name} {_where(done)}{done['action']}")
        for item in report["unresolved"]:
            key = (item["port"], item["zone"], item["remote_ip"]) if "port" in item else None
            left[(router.pk, key)] = f"{_where(item)}{item['reason']}"
    return left


def _where(item: dict[str, Any]) -> str:
    return f"port {item['port']} zone {item['zone']} -> {item['remote_ip']}: " if "port" in item else ""

"""The API's one seam to the operations engine (registry.operations).

The API never runs router work itself: it journals a request as an Operation and hands it to the
engine, which executes it on a worker and updates the row. If the engine exposes
`registry.operations.submit(kind, request, principal) -> Operation`, that is used; without an engine
the row is journaled as queued, where a worker will find it.
"""

from __future__ import annotations

import importlib
import time

from django.db import transaction

from registry.models import Operation, OperationState, Principal

TERMINAL_STATES = (OperationState.SUCCEEDED, OperationState.FAILED, OperationState.ROLLED_BACK)
POLL_INTERVAL = 0.1


def _engine_submit():
    try:
        module = importlib.import_module("registry.operations")
    except ImportError:
        return None
    return getattr(module, "submit", None)


def submit(kind: str, request: dict, principal: Principal | None, plan: dict | None = None) -> Operation:
    """Journal and enqueue one operation; returns its row (state queued, or further along)."""
    engine = _engine_submit()
    if engine is not None:
        operation = engine(kind, request, principal)
        if plan and not operation.plan:
            Operation.objects.filter(pk=operation.pk).update(plan=plan)
            operation.plan = plan
        return operation
    with transaction.atomic():
        return Operation.objects.create(kind=kind, request=request, principal=principal, plan=plan or {})


def wait_for(operation: Operation, seconds: float) -> Operation:
    """Re-read the row until it reaches a terminal state or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while operation.state not in TERMINAL_STATES and time.monotonic() < deadline:
        time.sleep(min(POLL_INTERVAL, max(0.0, deadline - time.monotonic())))
        operation.refresh_from_db()
    return operation

"""Execute: run one journaled operation to its end, and the synchronous conveniences built on it.

`execute` claims the operation (once, however many workers try), dispatches it by kind (an add to
operations/adding.py, a remove or expiry to operations/removing.py, a reconcile to
operations/settling.py; a list and a V1 command here), and writes its end through the journal. A
crashed worker's operation is claimed again once its heartbeat is stale and re-run in recovery mode
(state read before every change), so it finishes or rolls back from whatever the routers actually
hold.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from access.models import Principal
from operations.adding import execute_add
from operations.conf import ops_settings
from operations.errors import OperationFailed, StepFailed
from operations.intake import submit
from operations.journal import WORKER_ID, Run, claim, finish, heartbeats
from operations.metrics import operation_ended
from operations.models import Operation
from operations.planner import find_router
from operations.removing import execute_remove
from operations.settling import execute_reconcile
from operations.steps import read_router
from operations.threads import in_own_connection
from registry.models import Router
from routers.drivers.base import RouterLink

log = logging.getLogger(__name__)
Kind, State = Operation.Kind, Operation.State


def execute(operation_id: int) -> Operation:
    """Run one queued operation to its end (what a worker does). Safe to call twice: only one claims it."""
    started = time.perf_counter()
    op, recovering = claim(operation_id)
    if op is None:
        return Operation.objects.get(pk=operation_id)
    run = Run(op=op, recovering=recovering, started=started)
    run.deadline = time.monotonic() + ops_settings().total_timeout
    run.registry_s = time.perf_counter() - started
    handlers: dict[str, Callable[[Run], None]] = {
        Kind.ADD: execute_add,
        Kind.REMOVE: execute_remove,
        Kind.EXPIRE: execute_remove,
        Kind.LIST: execute_list,
        Kind.INVOKE: execute_invoke,
        Kind.RECONCILE: execute_reconcile,
    }
    heartbeats.add(op.pk)
    try:
        if recovering:
            run.notes.append(f"recovered by {WORKER_ID} after a stale heartbeat; reading router state first")
        handlers[op.kind](run)
        op.state = State.SUCCEEDED
    except OperationFailed as exc:
        op.state, op.error = exc.state, str(exc)
    except Exception as exc:  # noqa: BLE001 - journal any bug instead of leaving the row running
        log.exception("operation %s failed unexpectedly", op.pk)
        op.state, op.error = State.FAILED, f"internal error: {type(exc).__name__}: {exc}"
    finally:
        heartbeats.discard(op.pk)
        if finish(run, started):  # counted once, by the worker whose end was written
            operation_ended(op)
    return op


def run_in_thread(operation_id: int) -> str:
    """Execute in a pool thread with its own database connection (the workers' entry point)."""
    return in_own_connection(execute, operation_id).state


def list_links(router: str | None = None, principal: Principal | None = None) -> dict[str, list[dict[str, Any]]]:
    """What each router (or the named one) holds right now, read from the routers; journaled."""
    op = execute(submit(Kind.LIST, {"router": router} if router else {}, principal, enqueue=False).pk)
    if op.state != State.SUCCEEDED and not op.result.get("routers"):
        raise OperationFailed(op.error)
    return op.result["routers"]


def reconcile(
    repair: bool = False, policy: str = "registry", principal: Principal | None = None, router: str | None = None
) -> Operation:
    """Compare registry and routers (and converge when `repair`); the report is `operation.result`."""
    request = {"repair": repair, "policy": policy, **({"router": router} if router else {})}
    return execute(submit(Kind.RECONCILE, request, principal, enqueue=False).pk)


def invoke(
    router: str,
    command: str,
    port: int | None = None,
    zone: int | None = None,
    remote_ip: str | None = None,
    principal: Principal | None = None,
    *,
    wait: bool = True,
) -> Operation:
    """V1: lsifcp / addifcp / rmifcp on a named router, journaled; waits for the result unless told not to."""
    request = {"router": router, "command": command, "port": port, "zone": zone, "remote_ip": remote_ip}
    op = submit(Kind.INVOKE, request, principal, enqueue=not wait)
    return execute(op.pk) if wait else op


def _link_dict(link: RouterLink) -> dict[str, Any]:
    """A link as the router reports it; `oper` is its carrier's status where the router says (FOS)."""
    return {"port": link.port, "zone": link.zone, "remote_ip": link.remote_ip, "state": link.state,
            "oper": link.oper}


def execute_list(run: Run) -> None:
    name = run.op.request.get("router")
    routers = [find_router(name)] if name else list(Router.objects.order_by("name"))
    listing, errors = {}, {}
    for router in routers:
        try:
            listing[router.name] = [_link_dict(link) for link in read_router(run, router)]
        except StepFailed as exc:
            errors[router.name] = str(exc)
    run.op.result = {"routers": listing, "errors": errors}
    if errors:
        raise OperationFailed("; ".join(errors.values()))


def execute_invoke(run: Run) -> None:
    request = run.op.request
    if request["command"] == "lsifcp":
        try:
            links = read_router(run, find_router(request["router"]))
        except StepFailed as exc:  # a read changes nothing: failed, with the router's reason, not an engine error
            raise OperationFailed(str(exc)) from exc
        wanted = {k: request[k] for k in ("port", "zone", "remote_ip") if request.get(k) not in (None, "")}
        chosen = [link for link in links if all(str(getattr(link, k)) == str(v) for k, v in wanted.items())]
        run.op.result = {"links": [_link_dict(link) for link in chosen]}
    elif request["command"] == "addifcp":
        execute_add(run)
    else:
        execute_remove(run)

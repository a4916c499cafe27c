"""The operations engine: every change to a router goes through here, journaled and verified.

Public API (import from ``operations``):

``submit(kind, request, principal=None, *, authorize=None, enqueue=True) -> Operation``
    Validate and plan synchronously, call ``authorize(plan)`` (it raises to refuse), write the
    journal row (state ``queued``), take the device
    locks (add) and queue the operation. Raises ``PlanError`` (answer 400; ``.as_dict()`` names the
    field) or its subclass ``DeviceBusy`` (answer 409) before anything is queued. Kinds and requests:
    ``add``/``remove``: ``{"site", one of "device_description"|"wwn"|"zone", "duration": s (add, optional)}``;
    ``list``: ``{"router": name}`` or ``{}``;
    ``reconcile``: ``{"repair": bool, "policy": "registry"|"router", "router": name (optional)}``;
    ``invoke``: ``{"router", "command": "lsifcp"|"addifcp"|"rmifcp", "port", "zone", "remote_ip"}``.
``execute(operation_id) -> Operation``
    Run it to its end (what a worker does). Idempotent: a finished or live-claimed operation is
    returned untouched; one whose worker died (stale heartbeat) is re-run in recovery mode.
``list_links(router=None, principal=None) -> {router_name: [{"port", "zone", "remote_ip", "state"}]}``
    Read the routers now (journaled as a ``list`` operation).
``reconcile(repair=False, policy="registry", principal=None, router=None) -> Operation``
    Drift report per router in ``operation.result["routers"][name]``: missing / extra / mismatched /
    in_flight / repaired / unresolved.
``invoke(router, command, port=None, zone=None, remote_ip=None, principal=None, *, wait=True) -> Operation``
    The V1 interface (lsifcp / addifcp / rmifcp on one named router), journaled; adds and removes
    keep Link records so the registry still matches the router.

An Operation shows ``state`` (queued, running, succeeded, failed, rolled_back), a live ``phase``
(queued -> connecting -> on_router -> verifying -> done), ``attempts``, ``error`` (the router's own
message for a refusal), masked ``transcript``, ``result`` and the timings ``registry_ms``,
``invocation_ms``, ``router_ms``, ``total_ms`` (total = registry + invocation + router).

Modules: see README.md ("Where things are"). Settings: ``FLEXZONE_OPS_*`` in flexzone/settings.py.
"""

# A Django app's package is imported before the models are ready: the public names are loaded on
# first use (PEP 562), not here.
_PUBLIC = {
    "submit": "operations.intake",
    "execute": "operations.runner",
    "invoke": "operations.runner",
    "list_links": "operations.runner",
    "reconcile": "operations.runner",
    "DeviceBusy": "operations.errors",
    "OperationFailed": "operations.errors",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'operations' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_PUBLIC[name]), name)

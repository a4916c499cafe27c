"""The admin's view of what the engine owns: links, device locks and operations, read-only.

A link or a lock is the registry's record of what a router holds; changing the row would make the
registry lie about the router. So the admin shows them and changes them only through the engine,
like the API does: actions that submit operations (disconnect, reconcile), each attributed to the
admin principal signed in by certificate, audited, and followed on the console's operation page.
"""

from __future__ import annotations

from django.apps import apps
from django.contrib import admin, messages
from django.db import DatabaseError
from django.urls import reverse
from django.utils.html import format_html

from access import audit
from operations import submit
from operations.models import Grant, Link, Operation
from operations.planner import PlanError
from registry.admin import DeviceAdmin, RouterAdmin
from registry.models import Device, Router


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never added, changed or deleted here."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


def _submit(modeladmin, request, kind: str, what: dict, action: str) -> None:
    """Submit one operation for the signed-in admin principal, audit it, and say where to follow it."""
    principal = getattr(request, "flexzone_principal", None)
    try:
        op = submit(kind, what, principal)
    except PlanError as exc:
        modeladmin.message_user(request, f"{action}: {exc}", messages.ERROR)
        return
    audit.note(request, target=f"operation:{op.pk}", after={"kind": kind, **what}, operation=op.pk)
    try:
        audit.record(request, _Accepted(), f"admin.{action}")
    except DatabaseError:
        audit.log.exception("could not write the audit record for the admin's %s", action)
    link = reverse("console:operation", args=[op.pk])
    modeladmin.message_user(request, format_html('Operation <a href="{}">#{}</a> queued: {} {}', link, op.pk, kind,
                                                 ", ".join(f"{key} {value}" for key, value in what.items())))


class _Accepted:
    """The answer an admin action's audit record reads: accepted (202), nothing refused."""

    status_code = 202
    data: dict[str, object] = {}


def _disconnect(modeladmin, request, pairs) -> None:
    for site, device in sorted(set(pairs)):
        _submit(modeladmin, request, Operation.Kind.REMOVE, {"site": site, "device_description": device},
                "disconnect")


@admin.register(Link)
class LinkAdmin(ReadOnlyAdmin):
    list_display = ("router", "port", "zone", "remote_ip", "state", "site", "device", "lease_expires_at", "updated_at")
    search_fields = ("router__name", "remote_ip", "site__name", "device__description", "device__wwn")
    list_filter = ("state", "router", "site", "zone")
    list_select_related = ("router", "zone", "site", "device")
    date_hierarchy = "created_at"
    actions = ["disconnect"]

    @admin.action(description="Disconnect the selected links' sites from their devices (an operation each)")
    def disconnect(self, request, queryset) -> None:
        active = queryset.filter(state__in=Link.ACTIVE_STATES)
        _disconnect(self, request, active.values_list("site__name", "device__description"))


@admin.register(Grant)
class GrantAdmin(ReadOnlyAdmin):
    list_display = ("device", "site", "exclusive", "acquired_at", "expires_at", "reason")
    search_fields = ("device__description", "device__wwn", "site__name", "reason")
    list_filter = ("exclusive", "site")
    list_select_related = ("device", "site")
    actions = ["disconnect"]

    @admin.action(description="Release: disconnect the holding sites from the selected devices (an operation each)")
    def disconnect(self, request, queryset) -> None:
        _disconnect(self, request, queryset.values_list("site__name", "device__description"))


@admin.register(Operation)
class OperationAdmin(ReadOnlyAdmin):
    list_display = ("pk", "kind", "state", "phase", "principal", "attempts", "total_ms", "router_ms", "created_at")
    search_fields = ("error", "principal__name")
    list_filter = ("kind", "state", "phase")
    list_select_related = ("principal",)
    date_hierarchy = "created_at"


@admin.action(description="Check the selected routers against the registry (reconcile, report only)")
def check_routers(modeladmin, request, queryset) -> None:
    for name in queryset.values_list("name", flat=True):
        _submit(modeladmin, request, Operation.Kind.RECONCILE, {"router": name, "repair": False}, "reconcile")


@admin.action(description="Repair the selected routers: make them hold what the registry records")
def repair_routers(modeladmin, request, queryset) -> None:
    for name in queryset.values_list("name", flat=True):
        _submit(modeladmin, request, Operation.Kind.RECONCILE, {"router": name, "repair": True,
                                                                "policy": "registry"}, "repair")


admin.site.unregister(Router)  # registry.admin's, imported above: the same page, with the engine's actions


@admin.register(Router)
class EngineRouterAdmin(RouterAdmin):
    actions = [check_routers, repair_routers]


class GrantInline(admin.TabularInline):
    """Who holds the device: shown only; a lock changes through the engine (the actions above)."""

    model = Grant
    extra = 0
    fields = ("site", "exclusive", "acquired_at", "expires_at", "reason")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


admin.site.unregister(Device)  # registry.admin's: the same page, with who holds the device


@admin.register(Device)
class EngineDeviceAdmin(DeviceAdmin):
    inlines = [GrantInline]


# procrastinate (installed with PostgreSQL) registers an admin for its jobs with retry, cancel and abort
# actions that change a job behind its operation's back: a cancelled job leaves its operation queued for
# ever with its device locks held, and nothing is audited. The jobs stay visible (what the queue holds is
# worth seeing); what happens to them is the engine's business. Its admin module is imported here first so
# that it has registered when this one replaces it, whichever order the apps are listed in.
if apps.is_installed("procrastinate.contrib.django"):
    from procrastinate.contrib.django.admin import ProcrastinateJobAdmin
    from procrastinate.contrib.django.models import ProcrastinateJob

    admin.site.unregister(ProcrastinateJob)

    @admin.register(ProcrastinateJob)
    class QueueJobAdmin(ProcrastinateJobAdmin):
        """procrastinate's job list and pages, without its actions."""

        # None, as Django documents, turns off the site's actions too; procrastinate annotates a list.
        actions = None  # type: ignore[assignment]

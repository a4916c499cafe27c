"""Django admin for the registry's own models, with search and filters. Router secrets are referenced,
never shown. Links, grants and operations are the engine's: console/admin.py shows them read-only
(and a device's grants on its page) and changes them only by submitting operations."""

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.http import HttpResponseRedirect

from registry import in_use
from registry.models import Device, Host, Initiator, Router, Site, Zone


class RefusalsAsMessages(admin.ModelAdmin):
    """A delete the registry refuses (rule `in_use`, registry/in_use.py: a host or initiator a live
    link zones; the models' refusal or the database's), from the delete page, the delete action or an
    inline, is shown as a message on the page
    it came from, not as a server error; its transaction is rolled back, log entries included."""

    def _refusals_shown(self, request, view, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except (ValidationError, DatabaseError) as error:
            exc = in_use.from_database(error) if isinstance(error, DatabaseError) else error
            if exc is None or not in_use.refused(exc):
                raise
            for message in exc.messages:
                self.message_user(request, message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def delete_view(self, request, *args, **kwargs):
        return self._refusals_shown(request, super().delete_view, *args, **kwargs)

    def changelist_view(self, request, *args, **kwargs):
        # The "delete selected" action writes its log entries before it deletes, outside any transaction:
        # one here takes them back with the refused delete.
        return self._refusals_shown(request, transaction.atomic()(super().changelist_view), *args, **kwargs)

    def changeform_view(self, request, *args, **kwargs):  # an inline's "delete" box
        return self._refusals_shown(request, super().changeform_view, *args, **kwargs)


class RouterInline(admin.TabularInline):
    model = Router
    extra = 0
    fields = ("name", "platform", "transport", "host", "port")
    show_change_link = True


class HostInline(admin.TabularInline):
    """A site's hosts, read here and edited on their own page (with their initiators)."""

    model = Host
    extra = 0
    fields = ("name", "description")
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class InitiatorInline(admin.TabularInline):
    model = Initiator
    extra = 1
    fields = ("wwn", "description")


@admin.register(Site)
class SiteAdmin(RefusalsAsMessages):
    list_display = ("name", "display_name", "msan_id", "management_ip", "data_ip", "router_port")
    search_fields = ("name", "display_name", "description", "management_ip", "data_ip")
    list_filter = ("router_port",)
    inlines = [RouterInline, HostInline]


@admin.register(Host)
class HostAdmin(RefusalsAsMessages):
    list_display = ("name", "site", "description", "initiator_wwns")
    search_fields = ("name", "description", "site__name", "site__display_name", "initiators__wwn")
    list_filter = ("site",)
    list_select_related = ("site",)
    inlines = [InitiatorInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("initiators")

    @admin.display(description="initiators")
    def initiator_wwns(self, host: Host) -> str:
        return ", ".join(initiator.wwn for initiator in host.initiators.all())


@admin.register(Initiator)
class InitiatorAdmin(RefusalsAsMessages):
    list_display = ("wwn", "host", "description")
    search_fields = ("wwn", "description", "host__name")
    list_filter = ("host__site",)
    list_select_related = ("host__site",)


@admin.register(Zone)
class ZoneAdmin(RefusalsAsMessages):
    list_display = ("zone_id", "description")
    search_fields = ("zone_id", "description")


@admin.register(Router)
class RouterAdmin(RefusalsAsMessages):
    list_display = ("name", "site", "platform", "transport", "host", "port", "vsan", "username")
    search_fields = ("name", "host", "site__name", "site__display_name")
    list_filter = ("platform", "transport", "site")


@admin.register(Device)
class DeviceAdmin(RefusalsAsMessages):
    list_display = ("description", "device_id", "wwn", "zone", "owner_site", "shareable")
    search_fields = ("description", "device_id", "wwn")
    list_filter = ("zone", "owner_site", "shareable")

"""Django admin for every registry model, with search and filters. Router secrets are referenced,
never shown; operation transcripts are read-only."""

from django.contrib import admin

from registry.models import Device, DeviceLock, Link, Operation, Principal, Router, Site, Zone


class RouterInline(admin.TabularInline):
    model = Router
    extra = 0
    fields = ("name", "platform", "transport", "host", "port")
    show_change_link = True


class DeviceLockInline(admin.TabularInline):
    model = DeviceLock
    extra = 0
    fields = ("site", "exclusive", "acquired_at", "expires_at", "reason")


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("name", "display_name", "msan_id", "management_ip", "data_ip", "router_port")
    search_fields = ("name", "display_name", "description", "management_ip", "data_ip")
    list_filter = ("router_port",)
    inlines = [RouterInline]


@admin.register(Zone)
class ZoneAdmin(admin.ModelAdmin):
    list_display = ("zone_id", "description")
    search_fields = ("zone_id", "description")


@admin.register(Router)
class RouterAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "platform", "transport", "host", "port", "username")
    search_fields = ("name", "host", "site__name", "site__display_name")
    list_filter = ("platform", "transport", "site")


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = ("description", "device_id", "wwn", "zone", "owner_site", "shareable")
    search_fields = ("description", "device_id", "wwn")
    list_filter = ("zone", "owner_site", "shareable")
    inlines = [DeviceLockInline]


@admin.register(DeviceLock)
class DeviceLockAdmin(admin.ModelAdmin):
    list_display = ("device", "site", "exclusive", "acquired_at", "expires_at", "reason")
    search_fields = ("device__description", "device__wwn", "site__name", "reason")
    list_filter = ("exclusive", "site")


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ("router", "port", "zone", "remote_ip", "state", "site", "device", "lease_expires_at", "updated_at")
    search_fields = ("router__name", "remote_ip", "site__name", "device__description", "device__wwn")
    list_filter = ("state", "router", "site", "zone")
    date_hierarchy = "created_at"


@admin.register(Principal)
class PrincipalAdmin(admin.ModelAdmin):
    list_display = ("name", "role", "cert_sha256", "cert_serial", "revoked_at")
    search_fields = ("name", "cert_sha256", "cert_serial", "cert_issuer")
    list_filter = ("role", "all_sites", "all_zones")
    filter_horizontal = ("sites", "zones")


@admin.register(Operation)
class OperationAdmin(admin.ModelAdmin):
    list_display = ("pk", "kind", "state", "phase", "principal", "attempts", "total_ms", "router_ms", "created_at")
    search_fields = ("error", "principal__name")
    list_filter = ("kind", "state", "phase")
    date_hierarchy = "created_at"
    readonly_fields = ("transcript", "registry_ms", "invocation_ms", "router_ms", "total_ms", "attempts")

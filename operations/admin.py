from django.contrib import admin

from operations.models import Operation


@admin.register(Operation)
class OperationAdmin(admin.ModelAdmin):
    list_display = ("pk", "kind", "state", "phase", "principal", "attempts", "total_ms", "router_ms", "created_at")
    search_fields = ("error", "principal__name")
    list_filter = ("kind", "state", "phase")
    date_hierarchy = "created_at"
    readonly_fields = ("transcript", "registry_ms", "invocation_ms", "router_ms", "total_ms", "attempts")

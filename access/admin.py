"""The admin site's page for principals (the audit trail is read through the API and the console)."""

from django.contrib import admin

from access.models import Principal


@admin.register(Principal)
class PrincipalAdmin(admin.ModelAdmin):
    list_display = ("name", "role", "cert_sha256", "cert_serial", "revoked_at")
    search_fields = ("name", "cert_sha256", "cert_serial", "cert_issuer")
    list_filter = ("role", "all_sites", "all_zones")
    filter_horizontal = ("sites", "zones")

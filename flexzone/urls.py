"""Top-level URL map: the admin, the REST API, the Prometheus metrics and the console (at the root)."""

from django.contrib import admin
from django.urls import include, path

from api.metrics import MetricsView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("", include("console.urls")),
]

# Under /api/ every answer is JSON, also when Django refuses a request before any view sees it.
handler400 = "api.errors.bad_request"
handler404 = "api.errors.not_found"
handler500 = "api.errors.server_error"

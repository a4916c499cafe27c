"""Routes under /api/: kebab-case plurals for the registry, verbs for the operations."""

from django.urls import path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from api import health, views

router = DefaultRouter()
router.register("sites", views.SiteViewSet, basename="site")
router.register("zones", views.ZoneViewSet, basename="zone")
router.register("hosts", views.HostViewSet, basename="host")
router.register("devices", views.DeviceViewSet, basename="device")
router.register("routers", views.RouterViewSet, basename="router")
router.register("links", views.LinkViewSet, basename="link")
router.register("grants", views.GrantViewSet, basename="grant")
router.register("operations", views.OperationViewSet, basename="operation")
router.register("principals", views.PrincipalViewSet, basename="principal")
router.register("audit-events", views.AuditEventViewSet, basename="audit-event")
router.register("zoning-history", views.ZoningHistoryViewSet, basename="zoning-history")

urlpatterns = [
    path("health/", health.HealthView.as_view(), name="health"),
    path("health/live/", health.LiveView.as_view(), name="health-live"),
    path("plan/", views.PlanView.as_view(), name="plan"),
    path("connect/", views.ConnectView.as_view(), name="connect"),
    path("disconnect/", views.DisconnectView.as_view(), name="disconnect"),
    path("reconcile/", views.ReconcileView.as_view(), name="reconcile"),
    path("invoke/", views.InvokeView.as_view(), name="invoke"),
    path("schema/", views.SchemaView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    *router.urls,
]

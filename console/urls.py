"""Console pages, at the site root of the API's server (https://127.0.0.1:8443/ in the demo)."""

from django.urls import path

from console import views

app_name = "console"

urlpatterns = [
    path("", views.topology_page, name="topology"),
    path("operations/", views.operations_page, name="operations"),
    path("operations/<int:pk>/", views.operation_page, name="operation"),
    path("connect/", views.connect_page, name="connect"),
    path("drift/", views.drift_page, name="drift"),
    path("sites/", views.sites_page, name="sites"),
    path("sites/<str:name>/", views.site_page, name="site"),
    path("zones/", views.zones_page, name="zones"),
    path("devices/", views.devices_page, name="devices"),
    path("devices/<int:pk>/", views.device_page, name="device"),
    path("routers/", views.routers_page, name="routers"),
    path("links/<int:pk>/", views.link_page, name="link"),
]

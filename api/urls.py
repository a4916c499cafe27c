"""Routes under /api/."""

urlpatterns: list = []

"""Health for load balancers and supervisors, without a client certificate's principal:

- `/api/health/live/` (liveness): this process answers requests. It reads nothing, so a database
  outage never makes a supervisor restart healthy API processes.
- `/api/health/` (readiness): this process can serve: the database answers, every migration is
  applied (an upgraded process in front of a database not yet migrated is not ready), and the CRL is
  present and current. 503 names what is failing. It also says whether the ledger still holds the last
  head witnessed on this host (`ledger`: "ok" or what changed); a rewritten ledger is an alert
  (FlexzoneLedgerRewritten), not a reason to stop serving.
"""

from __future__ import annotations

import time

from django.db import DatabaseError, connection
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from access.authentication import crl_cache
from operations import ledger
from registry.readiness import pending_migrations

_READY_FIELDS = ("status", "database", "migrations", "crl", "ledger")
_ALERTS = ("ledger",)  # said, but not a reason to stop serving
_READY = inline_serializer("Health", {name: serializers.CharField() for name in _READY_FIELDS})
# How long "every migration is applied" is trusted before the next probe looks again (reading the
# migration graph takes tens of ms; a database restored from an older dump shows within this).
MIGRATED_FOR = 10.0
_migrated_at = float("-inf")


def _migrations() -> str:
    global _migrated_at
    if time.monotonic() - _migrated_at < MIGRATED_FOR:
        return "ok"
    pending = pending_migrations()
    if pending:
        return f"{len(pending)} pending, first {pending[0]}: run manage.py migrate"
    _migrated_at = time.monotonic()
    return "ok"


class HealthView(APIView):
    """Readiness: the database answers, its migrations are applied, and the CRL is usable."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: _READY, 503: _READY})
    def get(self, request):
        body = {name: "ok" for name in _READY_FIELDS}
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            body["migrations"] = _migrations()
            body["ledger"] = ledger.witnessed_head_problem() or "ok"
        except DatabaseError as exc:
            body.update(database=f"unreachable: {exc.__class__.__name__}", migrations="unknown", ledger="unknown")
        try:
            crl_cache()._current()
        except Exception as exc:
            body["crl"] = str(exc)
        if any(value != "ok" for name, value in body.items() if name != "status" and name not in _ALERTS):
            body["status"] = "failing"
        return Response(body, status=200 if body["status"] == "ok" else 503)


class LiveView(APIView):
    """Liveness: the process answers; nothing is read."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: inline_serializer("Live", {"status": serializers.CharField()})})
    def get(self, request):
        return Response({"status": "ok"})

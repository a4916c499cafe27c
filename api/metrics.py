"""/metrics: flexzone for Prometheus, in the text exposition format, for monitor and admin principals.

Who may read it: a principal with role `monitor` (Prometheus' own client certificate: it reads the
metrics and nothing else) or an admin, over the same mutual TLS as everything else. A separate
plain-HTTP listener would have needed a second port and a second story about who can reach it; a
certificate gives Prometheus an identity that can be revoked like any other.

What a scrape reports: the counters and histograms of every process sharing PROMETHEUS_MULTIPROC_DIR
(the API's workers; `manage.py worker` processes given the same FLEXZONE_METRICS_DIR), and, read
from the database at scrape time, the queue, links by state and the last reconcile's drift.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.http import HttpResponse
from prometheus_client import REGISTRY, CollectorRegistry, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from rest_framework import exceptions
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import BasePermission
from rest_framework.views import APIView

from access.models import Role
from access.permissions import SameOriginWrites
from api.views import AuditedView
from operations.drift_reports import DRIFT_KINDS, last_reports
from operations.metrics import registry_snapshot

METRICS_ROLES = (Role.MONITOR, Role.ADMIN)


class RegistryCollector:
    """Gauges read from the database at scrape time (the database is their one source of truth)."""

    def describe(self):
        return []  # nothing to query when registered: the names are only known per scrape

    def collect(self):
        snapshot = registry_snapshot()
        queued = GaugeMetricFamily("flexzone_queue_depth", "Operations queued, not yet claimed by a worker.")
        queued.add_metric([], snapshot["queued"])
        running = GaugeMetricFamily("flexzone_operations_running", "Operations a worker is running now.")
        running.add_metric([], snapshot["running"])
        oldest = GaugeMetricFamily("flexzone_queue_oldest_age_seconds",
                                   "Age of the oldest queued operation (0 when none waits).")
        oldest.add_metric([], snapshot["oldest_queued_seconds"])
        links = GaugeMetricFamily("flexzone_links", "Link records by state.", labels=["state"])
        for state, count in snapshot["links"].items():
            links.add_metric([state], count)
        drift = GaugeMetricFamily("flexzone_drift_links",
                                  "Differences each router's last reconcile left: found by a check (missing, extra, "
                                  "mismatched) or left unresolved by a repair.", labels=["router", "kind"])
        checked = GaugeMetricFamily("flexzone_reconcile_last_timestamp_seconds",
                                    "When each router's last reconcile ended (Unix time).", labels=["router"])
        failed = GaugeMetricFamily("flexzone_reconcile_last_failed",
                                   "1 when the last reconcile could not read the router.", labels=["router"])
        for router, report in sorted(last_reports().items()):
            for kind in DRIFT_KINDS:
                drift.add_metric([router, kind], len(report["outstanding"][kind]))
            checked.add_metric([router], report["finished_at"].timestamp())
            failed.add_metric([router], 1 if report.get("error") else 0)
        yield from (queued, running, oldest, links, drift, checked, failed)


MULTIPROCESS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if not MULTIPROCESS_DIR:
    REGISTRY.register(RegistryCollector())  # beside this process's own counters (imports run once)


def forget_dead_processes(directory: str) -> None:
    """Drop the live gauges of processes of this machine that are gone without saying so (SIGKILL):
    their sessions closed with them. Processes that exit cleanly do it themselves (atexit)."""
    for path in Path(directory).glob("gauge_live*_*.db"):
        try:
            pid = int(path.stem.rsplit("_", 1)[1])
            os.kill(pid, 0)
        except ValueError:
            continue
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, directory)
        except PermissionError:
            continue  # alive, another user's


def exposition(accept: str = "") -> tuple[bytes, str]:
    """(body, content type) in the format the scraper asked for (Accept; the classic text format by
    default): every process's counters (multi-process mode) or this process's, and the database's gauges."""
    if MULTIPROCESS_DIR:
        forget_dead_processes(MULTIPROCESS_DIR)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, MULTIPROCESS_DIR)
        registry.register(RegistryCollector())
    else:
        registry = REGISTRY
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type


class MetricsReaders(BasePermission):
    def has_permission(self, request, view) -> bool:
        user = request.user
        if user is None or not getattr(user, "is_authenticated", False):
            raise exceptions.NotAuthenticated("A client certificate is required (mutual TLS).")
        if user.principal.role not in METRICS_ROLES:
            raise exceptions.PermissionDenied(
                f"Principal {user.principal.name} has role {user.principal.role}; /metrics is for the monitor and "
                "admin roles.")
        return True


class AnyAccept(BaseContentNegotiation):
    """/metrics picks its format from Accept itself (choose_encoder); errors are JSON whatever was asked."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class MetricsView(AuditedView, APIView):
    """GET /metrics: Prometheus text format."""

    audit_noun = "metrics"
    permission_classes = [SameOriginWrites, MetricsReaders]
    content_negotiation_class = AnyAccept
    http_method_names = ["get", "head"]

    def get(self, request):
        body, content_type = exposition(request.headers.get("Accept", ""))
        return HttpResponse(body, content_type=content_type)

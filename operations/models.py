"""The operations journal: one row per request, with what it planned, did and measured."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from registry.models import Principal


class OperationKind(models.TextChoices):
    ADD = "add"
    REMOVE = "remove"
    LIST = "list"
    RECONCILE = "reconcile"
    INVOKE = "invoke"
    EXPIRE = "expire"


class OperationState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"


TERMINAL_STATES = (OperationState.SUCCEEDED, OperationState.FAILED, OperationState.ROLLED_BACK)


class OperationPhase(models.TextChoices):
    QUEUED = "queued"
    CONNECTING = "connecting"
    ON_ROUTER = "on_router"
    VERIFYING = "verifying"
    DONE = "done"


class Operation(models.Model):
    """One journaled request (add, remove, list, reconcile, or a V1 invoke) and everything it did.

    Phase timings are the seed's Figure 11-13 quantities: registry_ms (lookups and planning),
    invocation_ms (flexzone's own work), router_ms (waiting on routers, login included), total_ms.
    """

    Kind = OperationKind
    State = OperationState
    Phase = OperationPhase

    kind = models.CharField(max_length=16, choices=Kind.choices)
    principal = models.ForeignKey(Principal, null=True, blank=True, on_delete=models.PROTECT, related_name="operations")
    request = models.JSONField(default=dict, help_text="what was asked, as given")
    plan = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    transcript = models.TextField(blank=True, help_text="router session text, secrets masked")
    registry_ms = models.FloatField(default=0.0)
    invocation_ms = models.FloatField(default=0.0)
    router_ms = models.FloatField(default=0.0)
    total_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=120, blank=True, help_text="worker running it: host:pid:thread")
    job_id = models.BigIntegerField(null=True, blank=True, help_text="the queue's job id, when queued")

    class Meta:
        db_table = "registry_operation"  # the table keeps the name it had before the journal became an app
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["state", "heartbeat_at"], name="registry_operation_state_hb"),
            # The console's drift page and /metrics read each router's newest reconcile.
            models.Index(fields=["kind", "-finished_at"], name="registry_operation_kind_fin"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=[choice.value for choice in OperationState]),
                name="registry_operation_state_valid",
                violation_error_message="Unknown operation state.",
            ),
        ]

    def __str__(self) -> str:
        return f"operation {self.pk} {self.kind} ({self.state})"

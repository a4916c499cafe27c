"""Who may do what, and what they did: principals known by client certificates, their roles and scopes,
and the audit trail of API events.

The tables keep the names they had in the registry app (`registry_principal`, `registry_auditevent`),
so the move to this app changed Django's state only. An audit event names its operation by id, not by
a foreign key: the trail is read and sealed on its own, and the journal (`operations`) sits above this
app, as its operations name their principal.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from registry.models import Site, Zone
from registry.validators import validate_short_name


class Role(models.TextChoices):
    """viewer < operator < admin, each allowed what the one before is and more; monitor stands apart:
    it reads the Prometheus metrics (/metrics) and nothing else."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"
    MONITOR = "monitor"


class Principal(models.Model):
    """Someone (a person or a script) known by a client certificate, with a role and a scope.

    Identity is the certificate's SHA-256 fingerprint, or its issuer and serial; never the CN.
    """

    Role = Role

    name = models.CharField(max_length=63, validators=[validate_short_name])
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    cert_sha256 = models.CharField(max_length=64, null=True, blank=True, help_text="hex SHA-256 of the DER certificate")
    cert_issuer = models.CharField(max_length=500, blank=True, help_text="RFC 4514 issuer DN")
    cert_serial = models.CharField(max_length=64, blank=True, help_text="serial number, lower-case hex")
    sites = models.ManyToManyField(Site, blank=True, related_name="principals")
    zones = models.ManyToManyField(Zone, blank=True, related_name="principals")
    all_sites = models.BooleanField(default=False)
    all_zones = models.BooleanField(default=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "registry_principal"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"],
                name="registry_principal_unique_name",
                violation_error_message="A principal with this name already exists.",
            ),
            models.UniqueConstraint(
                fields=["cert_sha256"],
                name="registry_principal_unique_fingerprint",
                violation_error_message="This certificate is already registered to another principal.",
            ),
            models.UniqueConstraint(
                fields=["cert_issuer", "cert_serial"],
                condition=~Q(cert_serial=""),
                name="registry_principal_unique_issuer_serial",
                violation_error_message="This issuer and serial are already registered to another principal.",
            ),
            models.CheckConstraint(
                condition=Q(cert_sha256__isnull=False) | (~Q(cert_issuer="") & ~Q(cert_serial="")),
                name="registry_principal_has_identity",
                violation_error_message="A principal needs a certificate fingerprint, or an issuer and serial.",
            ),
            models.CheckConstraint(
                condition=Q(role__in=[choice.value for choice in Role]),
                name="registry_principal_role_valid",
                violation_error_message="The role must be viewer, operator, admin or monitor.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


class AuditOutcome(models.TextChoices):
    ALLOWED = "allowed"
    DENIED = "denied"
    FAILED = "failed"


class AuditEvent(models.Model):
    """One attributed API event: every write (whether it succeeded or failed) and every refusal.

    The principal is kept by reference and by name and fingerprint, so the record still says who it
    was after the principal is deleted; `before`/`after` hold the object's state around a change.
    """

    Outcome = AuditOutcome

    principal = models.ForeignKey(
        Principal, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events"
    )
    principal_name = models.CharField(max_length=63, blank=True)
    cert_sha256 = models.CharField(max_length=64, blank=True)
    cert_subject = models.CharField(max_length=500, blank=True)
    action = models.CharField(max_length=64, help_text='e.g. "site.create", "connect", "auth"')
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    outcome = models.CharField(max_length=8, choices=AuditOutcome.choices)
    status_code = models.PositiveSmallIntegerField()
    detail = models.TextField(blank=True)
    target = models.CharField(max_length=200, blank=True, help_text='the object acted on, e.g. "site:3"')
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    operation_id = models.BigIntegerField(null=True, blank=True, db_index=True,
                                       help_text="the operation the request started, if any")
    remote_addr = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "registry_auditevent"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(outcome__in=[choice.value for choice in AuditOutcome]),
                name="registry_auditevent_outcome_valid",
                violation_error_message="The outcome must be allowed, denied or failed.",
            ),
        ]

    def __str__(self) -> str:
        who = self.principal_name or "anonymous"
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {who} {self.action} {self.outcome} ({self.status_code})"

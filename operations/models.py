"""The engine's records: the operations journal (one row per request, with what it planned, did and
measured), the links it configured on routers and the locks by which sites hold devices."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from access.models import Principal
from registry.models import PORT_MAX, Device, Router, Site, Zone
from registry.validators import validate_description


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


class Grant(models.Model):
    """The one record of intended access: site `site` may reach `device`, exclusively unless the
    device is shareable, until `expires_at` or indefinitely, and on FCIP for the `initiators` it was
    given. Connect creates or renews a grant, disconnect and expiry end it; what each router must
    carry is computed from the grants (operations/desired.py).

    An exclusive grant locks the device: at most one per device, and a site holds a device at most
    once (database rules); the engine takes grants under a row lock on the device, so shared and
    exclusive never mix.
    """

    # A hold belongs to its site and to the device's owner (who sees it: access.permissions.visible).
    SCOPE_SITES = ("site", "device__owner_site")

    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="grants")
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="grants")
    exclusive = models.BooleanField(default=True)
    acquired_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="lease expiry; the link is removed then")
    reason = models.CharField(max_length=200, blank=True, validators=[validate_description])
    operation = models.ForeignKey(
        Operation,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="grants",
        help_text="the connect that took the grant",
    )
    initiators = models.JSONField(
        default=list,
        blank=True,
        help_text="FCIP: the initiator WWNs this grant zones with the device (the hosts chosen at connect; a "
        "renewal naming more hosts adds theirs); empty when none of its links is FCIP",
    )

    class Meta:
        ordering = ["device", "acquired_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["device"],
                condition=Q(exclusive=True),
                name="operations_grant_one_exclusive_holder",
                violation_error_message="Another site holds an exclusive grant of this device.",
            ),
            models.UniqueConstraint(
                fields=["device", "site"],
                name="operations_grant_unique_holder",
                violation_error_message="This site already holds a grant of this device.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.device} granted to {self.site.name}"


class LinkState(models.TextChoices):
    REQUESTED = "requested"
    CONFIGURING = "configuring"
    UP = "up"
    REMOVING = "removing"
    DOWN = "down"
    FAILED = "failed"


class Link(models.Model):
    """One SAN extension configured on one router: an iFCP session (or FCIP tunnel) for a zone
    towards a remote gateway, requested by a site to reach a device.

    The record is what was applied: router (by id), port (the FC port, or the FCIP interface or VE
    port), `zone_number`, `remote_ip`, `local_ip`, `vsan` and (FCIP) `pairs` are the values sent to the
    router, copied when the link was written, and nothing follows a later registry edit; a removal
    takes off exactly these (`applied_spec`). `zone` and `device` say whose link it is. The zone names
    an FCIP link's zones carry on the switch follow from these values by the driver's naming
    (`fz_z<zone>_fcip<port>_<initiator>_<target>`), so they are not copied again.
    """

    # A hold belongs to its site and to the device's owner (who sees it: access.permissions.visible).
    SCOPE_SITES = ("site", "device__owner_site")

    State = LinkState
    ACTIVE_STATES = (State.REQUESTED, State.CONFIGURING, State.UP, State.REMOVING)

    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="links", help_text="requesting site")
    device = models.ForeignKey(Device, on_delete=models.PROTECT, related_name="links")
    router = models.ForeignKey(Router, on_delete=models.PROTECT, related_name="links")
    port = models.PositiveSmallIntegerField(validators=[MaxValueValidator(PORT_MAX)])
    zone = models.ForeignKey(Zone, on_delete=models.PROTECT, related_name="links")
    zone_number = models.PositiveSmallIntegerField(
        validators=[MaxValueValidator(4094)],
        help_text="the zone number configured on the router (copied when applied; a later edit of the zone's "
        "number does not change it)")
    remote_ip = models.GenericIPAddressField(help_text="data-path IP of the gateway at the other end")
    local_ip = models.GenericIPAddressField(
        null=True, blank=True, help_text="this router's own data-path IP as configured (FCIP: the tunnel's or "
        "profile's address); null on records older than the applied record")
    vsan = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Cisco MDS: the VSAN its zones were written in; null elsewhere")
    state = models.CharField(max_length=16, choices=State.choices, default=State.REQUESTED)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    initiators = models.JSONField(
        default=list,
        blank=True,
        help_text="FCIP: the initiator WWNs this link zones with the device (a snapshot taken at connect); "
        "empty for iFCP",
    )
    pairs = models.JSONField(
        default=list,
        blank=True,
        help_text="FCIP: the [initiator, target] pairs flexzone last applied for every grant this link serves "
        "(empty for iFCP, and on records older than shared FCIP links: the device with `initiators`)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    up_at = models.DateTimeField(null=True, blank=True)
    down_at = models.DateTimeField(null=True, blank=True)
    operation = models.ForeignKey(
        Operation,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="links",
        help_text="the last operation that changed this link",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["router", "port", "zone", "remote_ip"],
                condition=Q(state__in=["requested", "configuring", "up", "removing"]),
                name="operations_link_one_active_per_endpoint",
                violation_error_message="An active link with this router, port, zone and remote IP already exists.",
            ),
            models.CheckConstraint(
                condition=Q(state__in=[choice.value for choice in LinkState]),
                name="operations_link_state_valid",
                violation_error_message="Unknown link state.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.router.name} port {self.port} zone {self.zone_number} -> {self.remote_ip} ({self.state})"

    def save(self, *args, **kwargs) -> None:
        # A record written without the applied values (a shell, a fixture) takes the registry's now,
        # which are what a link written now would be configured with.
        if self.zone_number is None and self.zone_id is not None:
            self.zone_number = Zone.objects.values_list("zone_id", flat=True).get(pk=self.zone_id)
        super().save(*args, **kwargs)

    @property
    def key(self) -> tuple[int, int, str]:
        """(port, zone number, remote gateway) as applied: how routers list the link."""
        return (self.port, self.zone_number, self.remote_ip)

    @classmethod
    def active(cls) -> models.QuerySet:
        return cls.objects.filter(state__in=cls.ACTIVE_STATES)

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES

    def clean(self) -> None:
        super().clean()
        errors = {}
        if self.router_id and self.site_id and self.device_id:
            allowed_sites = {self.site_id, self.device.owner_site_id}
            if self.router.site_id not in allowed_sites:
                errors["router"] = "The router must belong to the requesting site or to the device's owning site."
        if self.zone_id and self.device_id and self.device.zone_id != self.zone_id:
            errors["zone"] = "The link's zone must be the device's zone."
        if errors:
            raise ValidationError(errors)


class LedgerEntry(models.Model):
    """One record of the hash chain over the audit trail and the ended operations (operations/ledger.py):
    `digest` covers the record's content, `hash` covers the entry before (`prev`) and this one."""

    class Kind(models.TextChoices):
        AUDIT = "audit"
        OPERATION = "operation"

    seq = models.PositiveBigIntegerField(primary_key=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    ref = models.BigIntegerField(help_text="the audit event's or the operation's id")
    digest = models.CharField(max_length=64)
    prev = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    late = models.BooleanField(default=False, help_text="written over FLEXZONE_LEDGER_GRACE seconds before the seal "
                               "before this one: later records were sealed first (covered by `hash`)")
    sealed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["kind", "ref"], name="operations_ledger_one_entry_per_record")]


class LedgerSignature(models.Model):
    """The chain's head at `seq`, signed with the service's Ed25519 key."""

    seq = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=64)
    public_key = models.CharField(max_length=64, help_text="raw Ed25519 public key, hex")
    signature = models.CharField(max_length=128, help_text="Ed25519 signature of the head, hex")
    signed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["seq"]


class ZoningImage(models.Model):
    """The zoning in force on an FCIP switch (FOS: the effective configuration; MDS: one VSAN's active
    zoneset) as read just before one of flexzone's zoning changes and as read after it. Admins see
    them on the operation, and a restore renders (never runs) what would put a before-image back."""

    router = models.ForeignKey(Router, on_delete=models.CASCADE, related_name="zoning_images")
    operation = models.ForeignKey(Operation, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="zoning_images")
    taken_at = models.DateTimeField(default=timezone.now)
    before = models.JSONField(help_text="{in_effect, zones: {name: members}} (MDS: and vsan), read before the change")
    after = models.JSONField(null=True, blank=True,
                             help_text="the same, read after the change (null: the session ended before a read)")

    class Meta:
        ordering = ["-taken_at", "-id"]
        indexes = [models.Index(fields=["router", "-taken_at"], name="operations_zoning_router_taken")]


class RouterSession(models.Model):
    """A CLI session one process holds to a router (in use or idle in its pool), counted against the
    router's session budget across every process on every host (operations/budget.py)."""

    router = models.ForeignKey(Router, on_delete=models.CASCADE, related_name="flexzone_sessions")
    holder = models.CharField(max_length=100, help_text="host:pid:nonce of the process holding it")
    opened_at = models.DateTimeField(default=timezone.now)
    heartbeat_at = models.DateTimeField(default=timezone.now)
    release_wanted = models.BooleanField(default=False, help_text="another process needs the slot: log out when idle")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["router", "holder"], name="operations_routersession_one_per_process",
                                    violation_error_message="A process holds one session per router."),
        ]


class ZoningLock(models.Model):
    """A Cisco MDS enhanced-mode zone session lock that a session of flexzone's may hold: written before
    the session sends what may take it, deleted once the lock is seen freed. A worker that dies holding
    one leaves the record, and the next session of any flexzone process to that switch frees the lock
    (only if it is held by flexzone's account); without the record the lock would wait for a person."""

    router = models.ForeignKey(Router, on_delete=models.CASCADE, related_name="zoning_locks")
    vsan = models.PositiveSmallIntegerField()
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["router", "vsan"], name="operations_zoninglock_one_per_vsan",
                                    violation_error_message="One zoning lock record per router and VSAN."),
        ]

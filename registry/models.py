"""The registry: the inventory. Sites and their hosts and initiators, zones, shared devices, routers.

Links, locks and grants are the engine's (`operations.models`); principals and the audit trail are
`access.models`.

Invariants live in the database first (named constraints with messages a human understands);
`clean()` is kept for rules that cross objects. `registry.errors.explain_integrity_error` turns a
database refusal back into the message declared here.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models, transaction
from django.db.models import Q
from django.db.models.functions import Lower
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from registry import in_use
from registry.validators import (
    validate_description,
    validate_host,
    validate_secret_ref,
    validate_short_name,
    validate_ssh_host_key,
)
from routers import hostkeys
from routers.platforms import WWN_MESSAGE, WWN_PATTERN, Platform, Transport, choices

ZONE_MIN, ZONE_MAX = 1, 4094
PORT_MAX = 4095
# Cisco MDS VSANs 1-4093 are usable; 4079 is reserved for the switch's own (EVFP isolated) use.
VSAN_MIN, VSAN_MAX, VSAN_RESERVED = 1, 4093, 4079
VSAN_MESSAGE = f"The VSAN must be between {VSAN_MIN} and {VSAN_MAX} and not the reserved {VSAN_RESERVED}."
PORT_ROLE_MESSAGE = "a port is either a target or an initiator here."


def validate_vsan(value: int) -> None:
    if not VSAN_MIN <= value <= VSAN_MAX or value == VSAN_RESERVED:
        raise ValidationError(VSAN_MESSAGE, code="vsan_range")


class CarriedByRouters(models.Model):
    """A registry row whose values routers carry: its writes get the database's `in_use` refusal as the
    models' own ValidationError (registry/in_use.py), whichever path calls save() or delete(), and a
    refused write leaves the caller's transaction usable (its own savepoint is rolled back)."""

    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        with in_use.database_refusals(), transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        with in_use.database_refusals(), transaction.atomic(using=kwargs.get("using")):
            return super().delete(*args, **kwargs)


class Site(CarriedByRouters):
    """A Site is one storage network (MSAN) joined to the others through its storage router.

    Remote gateways reach it at its data-path IP; flexzone manages its router at the management IP.
    """

    name = models.CharField(max_length=63, validators=[validate_short_name], help_text="short name, e.g. primary-site")
    display_name = models.CharField(max_length=100, validators=[validate_description], help_text="e.g. GSFC-DICEL1")
    msan_id = models.PositiveIntegerField(help_text="MSAN id, unique positive integer")
    management_ip = models.GenericIPAddressField()
    data_ip = models.GenericIPAddressField(help_text="address remote gateways use for this site's iFCP/FCIP traffic")
    description = models.CharField(max_length=200, blank=True, validators=[validate_description])
    router_port = models.PositiveSmallIntegerField(
        validators=[MaxValueValidator(PORT_MAX)], help_text="the router's FC port facing this site's SAN"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"],
                name="registry_site_unique_name",
                violation_error_message="A site with this short name already exists.",
            ),
            models.UniqueConstraint(
                Lower("display_name"),
                name="registry_site_unique_display_name",
                violation_error_message="A site with this display name already exists.",
            ),
            models.UniqueConstraint(
                fields=["msan_id"],
                name="registry_site_unique_msan_id",
                violation_error_message="Another site already uses this MSAN id; MSAN ids must not overlap.",
            ),
            models.CheckConstraint(
                condition=Q(msan_id__gte=1),
                name="registry_site_msan_id_positive",
                violation_error_message="The MSAN id must be a positive integer.",
            ),
            models.CheckConstraint(
                condition=Q(router_port__lte=PORT_MAX),
                name="registry_site_router_port_range",
                violation_error_message=f"The router port must be between 0 and {PORT_MAX}.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.display_name})"

    # What a site's links were configured with: remote gateways reach its data IP, its router's FC port.
    ROUTER_FIELDS = ["data_ip", "router_port"]

    def clean(self) -> None:
        super().clean()
        in_use.refuse(in_use.changed_fields(self, self.ROUTER_FIELDS), f"Site {self.name}'s value",
                      in_use.Subject.SITE, sites=[self.pk])


class Host(CarriedByRouters):
    """A server at a site whose HBA ports (initiators) reach shared storage through the site's SAN.

    An FCIP link zones the requesting site's initiators with the device's target port, so the hosts
    registered here are who a link grants access to.
    """

    SCOPE_SITES = ("site",)  # seen only by principals scoped to its site (access.permissions.visible)

    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="hosts")
    name = models.CharField(max_length=63, validators=[validate_short_name], help_text="e.g. segment-server")
    description = models.CharField(max_length=200, blank=True, validators=[validate_description])
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["site", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["site", "name"],
                name="registry_host_unique_name_per_site",
                violation_error_message="This site already has a host with this name.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} at {self.site.name}"

    def clean(self) -> None:
        super().clean()
        in_use.refuse(in_use.changed_fields(self, ["site"]), f"Host {self.name}'s site", in_use.Subject.HOST,
                      hosts=[self.pk])


class Initiator(CarriedByRouters):
    """One initiator port of a host: the port WWN of an HBA that an FCIP link zones with a device's target.

    Its WWN is stored lower-case and is unique across the registry; a WWN is never both a device's
    (target) and an initiator's.
    """

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="initiators")
    wwn = models.CharField(max_length=23, validators=[RegexValidator(WWN_PATTERN, WWN_MESSAGE)])
    description = models.CharField(max_length=100, blank=True, validators=[validate_description],
                                   help_text="e.g. HBA slot 2 port 1")

    class Meta:
        ordering = ["wwn"]
        constraints = [
            models.UniqueConstraint(
                Lower("wwn"),
                name="registry_initiator_unique_wwn",
                violation_error_message="An initiator with this WWN already exists "
                "(WWNs compare without regard to case).",
            ),
            models.CheckConstraint(
                condition=Q(wwn__regex=WWN_PATTERN),
                name="registry_initiator_wwn_format",
                violation_error_message=WWN_MESSAGE,
            ),
        ]

    def __str__(self) -> str:
        return self.wwn

    def save(self, *args, **kwargs) -> None:
        self.wwn = self.wwn.strip().lower()
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.wwn:
            self.wwn = self.wwn.strip().lower()
            device = Device.objects.filter(wwn=self.wwn).first()
            if device is not None:
                message = f"{self.wwn} is the WWN of device {device.description}; {PORT_ROLE_MESSAGE}"
                raise ValidationError({"wwn": ValidationError(message, code="target_wwn")})
        changed = in_use.changed_fields(self, ["host", "wwn"])
        if changed:  # from a host whose links zone it, or to one (as adding it there would)
            stored = Host.objects.get(initiators=self.pk)
            in_use.refuse(changed, f"Initiator {self.wwn} of host {stored.name}", in_use.Subject.HOST,
                          hosts=[stored.pk, self.host_id])
        elif self.pk is None and self.host_id:
            in_use.refuse(["wwn"], f"Host {self.host.name}'s initiators", in_use.Subject.HOST, hosts=[self.host_id])


class Zone(CarriedByRouters):
    """A Zone groups the devices that may be reached together; an iFCP session is opened per zone."""

    zone_id = models.PositiveSmallIntegerField(validators=[MinValueValidator(ZONE_MIN), MaxValueValidator(ZONE_MAX)])
    description = models.CharField(max_length=200, blank=True, validators=[validate_description])

    class Meta:
        ordering = ["zone_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["zone_id"],
                name="registry_zone_unique_zone_id",
                violation_error_message="A zone with this id already exists.",
            ),
            models.CheckConstraint(
                condition=Q(zone_id__gte=ZONE_MIN, zone_id__lte=ZONE_MAX),
                name="registry_zone_zone_id_range",
                violation_error_message=f"The zone id must be between {ZONE_MIN} and {ZONE_MAX}.",
            ),
        ]

    def __str__(self) -> str:
        return f"zone {self.zone_id}"

    def clean(self) -> None:
        super().clean()
        # The routers carry the number (an iFCP session's zone, an FCIP zone's name).
        changed = in_use.changed_fields(self, ["zone_id"])
        if changed:
            number = Zone.objects.filter(pk=self.pk).values_list("zone_id", flat=True).first()
            in_use.refuse(changed, f"Zone {number}'s number", in_use.Subject.DEVICE,
                          devices=list(self.devices.values_list("pk", flat=True)))


class Router(CarriedByRouters):
    """A storage router (iFCP or FCIP gateway) that joins one site's SAN to the WAN.

    The login secret is referenced (`secret_ref`), never stored here, so no listing can leak it.
    """

    Platform = Platform
    Transport = Transport

    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="routers")
    name = models.CharField(max_length=63, validators=[validate_short_name])
    platform = models.CharField(max_length=32, choices=choices(Platform))
    transport = models.CharField(max_length=8, choices=choices(Transport))
    host = models.CharField(max_length=253, validators=[validate_host])
    port = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(65535)])
    username = models.CharField(max_length=64, validators=[validate_short_name])
    secret_ref = models.CharField(
        max_length=200,
        validators=[validate_secret_ref],
        help_text='"env:FLEXZONE_ROUTER_SECRET_<NAME>" or "file:NAME" (in the secrets dir)',
    )
    connect_timeout = models.FloatField(default=30.0, validators=[MinValueValidator(0.1)])
    command_timeout = models.FloatField(default=30.0, validators=[MinValueValidator(0.1)])
    vsan = models.PositiveSmallIntegerField(
        default=1,
        validators=[validate_vsan],
        help_text="Cisco MDS: the VSAN whose active zoneset flexzone edits (1-4093, not 4079)",
    )
    session_budget = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(64)],
        help_text="the most CLI sessions flexzone holds to this router at once, over every process on every host "
                  "(idle pooled ones included); empty: the platform's default, which leaves sessions for people",
    )
    ssh_host_key = models.CharField(
        max_length=2000,
        blank=True,
        validators=[validate_ssh_host_key],
        help_text='SSH: the trusted host key, "<type> <base64>" (manage.py routers trust NAME records it); '
                  "empty: not trusted yet, and nothing is sent to the router",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    @property
    def ssh_host_key_sha256(self) -> str:
        """The trusted key's fingerprint as OpenSSH shows it, or "" if none is trusted."""
        return hostkeys.fingerprint(self.ssh_host_key) if self.ssh_host_key else ""

    @property
    def transport_security(self) -> str:
        """What protects the management session: "plaintext" (telnet: passwords cross in the clear),
        "ssh, host key pinned", or "ssh, host key not trusted yet" (nothing is sent until it is)."""
        if self.transport == Transport.TELNET:
            return "plaintext"
        return "ssh, host key pinned" if self.ssh_host_key else "ssh, host key not trusted yet"

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"],
                name="registry_router_unique_name",
                violation_error_message="A router with this name already exists.",
            ),
            models.UniqueConstraint(
                fields=["host", "port"],
                name="registry_router_unique_endpoint",
                violation_error_message="Another router is already registered at this host and port.",
            ),
            models.CheckConstraint(
                condition=Q(platform__in=[choice.value for choice in Platform]),
                name="registry_router_platform_valid",
                violation_error_message="Unknown router platform.",
            ),
            models.CheckConstraint(
                condition=Q(transport__in=[choice.value for choice in Transport]),
                name="registry_router_transport_valid",
                violation_error_message="The transport must be telnet or ssh.",
            ),
            models.CheckConstraint(
                condition=Q(port__gte=1, port__lte=65535),
                name="registry_router_port_range",
                violation_error_message="The management port must be between 1 and 65535.",
            ),
            models.CheckConstraint(
                condition=Q(connect_timeout__gt=0, command_timeout__gt=0),
                name="registry_router_timeouts_positive",
                violation_error_message="Timeouts must be positive.",
            ),
            models.CheckConstraint(
                condition=Q(vsan__gte=VSAN_MIN, vsan__lte=VSAN_MAX) & ~Q(vsan=VSAN_RESERVED),
                name="registry_router_vsan_range",
                violation_error_message=VSAN_MESSAGE,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_platform_display()} at {self.host}:{self.port})"

    # What a link on this router was configured with: its site and platform (which driver takes it off)
    # and, on Cisco MDS, the VSAN. How flexzone reaches the router (transport, host, port, credentials,
    # timeouts) and its name are free: a link names its router by id, and nothing on the router changes.
    LINK_FIELDS = ["site", "platform", "vsan"]

    def clean(self) -> None:
        super().clean()
        changed = in_use.changed_fields(self, self.LINK_FIELDS)
        sites = list(Router.objects.filter(pk=self.pk).values_list("site", flat=True)) if changed else []
        if self.site_id and (self.pk is None or "site" in changed):
            # A router joining a site whose links are live could be its first registered (one moved from
            # another site), which takes the next disconnect's plan there.
            sites.append(self.site_id)
            changed = changed or ["site"]
        if changed:
            in_use.refuse(changed, f"Router {self.name}'s value", in_use.Subject.ROUTER, sites=sites, routers=[self.pk])


class Device(CarriedByRouters):
    """A shared storage device (an FC target such as an Xserve RAID) owned by one site, in one zone.

    Its WWN is stored lower-case, so `21:00:00:E0:8B:0E:95:17` and its lower-case form are the same
    device. Locks (`Grant`) record which sites hold it.
    """

    device_id = models.CharField(max_length=63, validators=[validate_short_name])
    description = models.CharField(max_length=100, validators=[validate_description], help_text="e.g. XRAID1")
    wwn = models.CharField(
        max_length=23,
        validators=[RegexValidator(WWN_PATTERN, WWN_MESSAGE)],
    )
    zone = models.ForeignKey(Zone, on_delete=models.PROTECT, related_name="devices")
    owner_site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="devices")
    shareable = models.BooleanField(default=False, help_text="may be locked by several sites at once")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["description"]
        constraints = [
            models.UniqueConstraint(
                fields=["device_id"],
                name="registry_device_unique_device_id",
                violation_error_message="A device with this id already exists.",
            ),
            models.UniqueConstraint(
                Lower("description"),
                name="registry_device_unique_description",
                violation_error_message="A device with this description already exists.",
            ),
            models.UniqueConstraint(
                Lower("wwn"),
                name="registry_device_unique_wwn",
                violation_error_message="A device with this WWN already exists (WWNs compare without regard to case).",
            ),
            models.CheckConstraint(
                condition=Q(wwn__regex=WWN_PATTERN),
                name="registry_device_wwn_format",
                violation_error_message=WWN_MESSAGE,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.description} ({self.wwn})"

    # What links to this device zone and route by.
    LINK_FIELDS = ["wwn", "zone", "owner_site"]

    def save(self, *args, **kwargs) -> None:
        self.wwn = self.wwn.strip().lower()
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.wwn:
            self.wwn = self.wwn.strip().lower()
            initiator = Initiator.objects.select_related("host__site").filter(wwn=self.wwn).first()
            if initiator is not None:
                host = initiator.host
                message = (f"{self.wwn} is the WWN of an initiator of host {host.name} at {host.site.name}; "
                           f"{PORT_ROLE_MESSAGE}")
                raise ValidationError({"wwn": ValidationError(message, code="initiator_wwn")})
        in_use.refuse(in_use.changed_fields(self, self.LINK_FIELDS), f"Device {self.description}'s value",
                      in_use.Subject.DEVICE, devices=[self.pk])
        in_use.refuse_unsharing(self, self.shareable, f"Device {self.description}")


# Deletes get the rule edits get: a host or initiator that a live FCIP link zones stays until that link is
# disconnected, a router while its site's links are live, and a device until no site holds it (its grants
# would go with it, and the links they keep would be left out of the desired state by a delete, not by a
# disconnect). pre_delete is sent for every object a delete removes, whatever asks for it (the API, the
# admin, a queryset in the shell, a cascade), and it keeps Django from deleting these rows in bulk SQL.
# Raw SQL meets the database's rule.
@receiver(pre_delete, sender=Host)
def _host_in_use(sender, instance: Host, **kwargs) -> None:
    if instance.initiators.exists():
        in_use.refuse_delete(f"Host {instance.name}", in_use.Subject.HOST, hosts=[instance.pk])


@receiver(pre_delete, sender=Initiator)
def _initiator_in_use(sender, instance: Initiator, **kwargs) -> None:
    in_use.refuse_delete(f"Initiator {instance.wwn}", in_use.Subject.HOST, hosts=[instance.host_id])


@receiver(pre_delete, sender=Device)
def _device_in_use(sender, instance: Device, **kwargs) -> None:
    in_use.refuse_delete(f"Device {instance.description}", in_use.Subject.DEVICE, devices=[instance.pk])


@receiver(pre_delete, sender=Router)
def _router_in_use(sender, instance: Router, **kwargs) -> None:
    in_use.refuse_delete(f"Router {instance.name}", in_use.Subject.ROUTER, sites=[instance.site_id],
                         routers=[instance.pk])

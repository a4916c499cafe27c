"""Serializers: one base class applies the models' own rules (full_clean), the rest are declarations."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import cast

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.relations import SlugRelatedField
from rest_framework.validators import UniqueTogetherValidator, UniqueValidator

from access import redaction
from access.models import AuditEvent, Principal, Role
from api.fields import (
    NaturalKeyField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictIPAddressField,
    WWNField,
)
from operations.models import Grant, Link, Operation, ZoningImage
from registry import in_use
from registry.models import ZONE_MAX, ZONE_MIN, Device, Host, Initiator, Router, Site, Zone
from registry.validators import validate_description, validate_short_name
from routers import hostkeys
from routers.drivers import DRIVERS
from routers.drivers.zoning_restore import differences as zoning_differences

LEASE_MAX = 90 * 24 * 3600
INITIATORS_MAX = 64
HOSTS_MAX = 64  # hosts one connect or plan may name


def site_field(**kwargs) -> NaturalKeyField:
    return NaturalKeyField(StrictCharField(validators=[validate_short_name]), slug_field="name", **kwargs)


def zone_field(**kwargs) -> NaturalKeyField:
    key = StrictIntegerField(min_value=ZONE_MIN, max_value=ZONE_MAX)
    return NaturalKeyField(key, slug_field="zone_id", **kwargs)


class ItemsField(serializers.ListField):
    """A list whose entries are checked one by one: an entry at fault is reported by its position
    (`initiators[2]`), and an entry given twice (as the child reads it: WWNs in any case) is refused."""

    schema_fragment = {"uniqueItems": True}

    def run_child_validation(self, data):
        values, errors, seen = [], [], {}
        for index, item in enumerate(data):
            try:
                value = self.child.run_validation(item)
            except serializers.ValidationError as exc:
                values.append(None)
                errors.append(exc.detail)
                continue
            if value in seen:
                errors.append([ErrorDetail(f"Given twice (also {self.field_name}[{seen[value]}]).", code="duplicate")])
            else:
                seen[value] = index
                errors.append([])
            values.append(value)
        if any(errors):
            raise serializers.ValidationError(errors)
        return values


class KnownFieldsOnly:
    """Refuse fields the request does not take: a misspelt `duraton` must not silently mean no lease.

    Read-only fields (an `id` sent back from a GET) are accepted and ignored, as DRF does.
    """

    # Query parameters DRF itself reads (`?format=json`).
    tolerated: frozenset[str] = frozenset({"format"})

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields) - self.tolerated)
            if unknown:
                taken = ", ".join(sorted(name for name, field in self.fields.items() if not field.read_only))
                raise serializers.ValidationError(
                    {name: [f"Unknown field; this request takes {taken}."] for name in unknown}, code="unknown_field"
                )
        return super().to_internal_value(data)


class RegistrySerializer(KnownFieldsOnly, serializers.ModelSerializer):
    """Base of every model serializer.

    DRF does not call `full_clean()`; this does, so the admin, the API and the jobs share one set of
    rules. Uniqueness is left to the database, whose named constraint becomes a 409 with its message.
    """

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.IntegerField: StrictIntegerField,
        models.PositiveIntegerField: StrictIntegerField,
        models.PositiveSmallIntegerField: StrictIntegerField,
        models.SmallIntegerField: StrictIntegerField,
        models.BigIntegerField: StrictIntegerField,
        models.GenericIPAddressField: StrictIPAddressField,
        models.BooleanField: StrictBooleanField,
        models.FloatField: StrictFloatField,
    }

    def get_validators(self):
        return [v for v in super().get_validators() if not isinstance(v, UniqueTogetherValidator)]

    def get_fields(self):
        # ModelSerializer derives every field from the model again for each serializer (a good part of a
        # list request's time). What it derives depends on the class alone (no serializer here varies
        # its fields by request), so it is derived once per class; each serializer gets its own copy,
        # as DRF gives each one a copy of its declared fields.
        derived = type(self).__dict__.get("_derived_fields")
        if derived is None:
            derived = super().get_fields()
            type(self)._derived_fields = derived
        fields = copy.deepcopy(derived)
        for field in fields.values():
            field.validators = [v for v in field.validators if not isinstance(v, UniqueValidator)]
        return fields

    def validate(self, attrs):
        attrs = super().validate(attrs)
        model = self.Meta.model
        many = {f.name for f in model._meta.many_to_many}
        instance = copy.copy(self.instance) if self.instance is not None else model()
        for name, value in attrs.items():
            if name not in many:
                setattr(instance, name, value)
        try:
            instance.full_clean(validate_unique=False, validate_constraints=False)
            for constraint in model._meta.constraints:
                if isinstance(constraint, models.CheckConstraint):
                    constraint.validate(model, instance)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None
        # clean() may normalise (a WWN is stored lower-case): keep what it settled on.
        return {name: (value if name in many else getattr(instance, name)) for name, value in attrs.items()}


class SiteSerializer(RegistrySerializer):
    class Meta:
        model = Site
        fields = [
            "id", "name", "display_name", "msan_id", "management_ip", "data_ip", "description", "router_port",
            "created_at", "updated_at",
        ]
        extra_kwargs = {"msan_id": {"min_value": 1}}  # registry_site_msan_id_positive, stated in the schema


class InitiatorsField(ItemsField):
    """A host's initiator port WWNs: written as a list of strings (any case), read lower-case."""

    def __init__(self, **kwargs) -> None:
        super().__init__(child=WWNField(), max_length=INITIATORS_MAX, **kwargs)

    def to_representation(self, initiators):
        return [initiator.wwn for initiator in initiators.all()]


class HostSerializer(RegistrySerializer):
    """A host and its initiator WWNs, written together: the list given replaces the host's initiators."""

    site = site_field(queryset=Site.objects.all())
    initiators = InitiatorsField(
        required=False, help_text="the host's initiator port WWNs; given, they replace its initiators"
    )

    class Meta:
        model = Host
        fields = ["id", "name", "site", "description", "initiators", "created_at", "updated_at"]

    def validate(self, attrs):
        wwns = attrs.pop("initiators", None)
        attrs = super().validate(attrs)
        if wwns is not None:
            self._check_initiators(wwns)
            if self.instance is not None and set(wwns) != set(self.instance.initiators.values_list("wwn", flat=True)):
                try:
                    in_use.refuse(["initiators"], f"Host {self.instance.name}'s initiators", in_use.Subject.HOST,
                                  hosts=[self.instance.pk])
                except DjangoValidationError as exc:
                    raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None
            attrs["initiators"] = wwns
        return attrs

    @staticmethod
    def _check_initiators(wwns: list[str]) -> None:
        """Each initiator by the model's own rules (a WWN that is a device's is refused), by position."""
        errors: list[list[str]] = []
        for wwn in wwns:
            try:
                Initiator(wwn=wwn).full_clean(exclude=["host"], validate_unique=False, validate_constraints=False)
                errors.append([])
            except DjangoValidationError as exc:
                errors.append([detail for details in serializers.as_serializer_error(exc).values()
                               for detail in details])
        if any(errors):
            raise serializers.ValidationError({"initiators": errors})

    def create(self, validated_data):
        wwns = validated_data.pop("initiators", [])
        with transaction.atomic():
            host = super().create(validated_data)
            self._replace_initiators(host, wwns)
        return host

    def update(self, instance, validated_data):
        wwns = validated_data.pop("initiators", None)
        with transaction.atomic():
            host = super().update(instance, validated_data)
            if wwns is not None:
                self._replace_initiators(host, wwns)
        return host

    @staticmethod
    def _replace_initiators(host: Host, wwns: list[str]) -> None:
        """Keep the initiators still listed (and their descriptions), delete the others, add the new ones.

        A WWN another host already has is refused by the database (registry_initiator_unique_wwn).
        """
        host.initiators.exclude(wwn__in=wwns).delete()
        kept = set(host.initiators.values_list("wwn", flat=True))
        for wwn in wwns:
            if wwn not in kept:
                Initiator.objects.create(host=host, wwn=wwn)
        getattr(host, "_prefetched_objects_cache", {}).pop("initiators", None)


class ZoneSerializer(RegistrySerializer):
    class Meta:
        model = Zone
        fields = ["id", "zone_id", "description"]


class RouterSerializer(RegistrySerializer):
    """The login secret's reference can be set by an admin but is never shown to anyone."""

    site = site_field(queryset=Site.objects.all())

    class Meta:
        model = Router
        fields = [
            "id", "name", "site", "platform", "transport", "transport_security", "host", "port", "vsan", "username",
            "secret_ref", "ssh_host_key", "ssh_host_key_sha256", "connect_timeout", "command_timeout", "session_budget",
            "created_at", "updated_at",
        ]
        extra_kwargs = {"secret_ref": {"write_only": True}}

    transport_security = serializers.CharField(read_only=True, help_text=(
        'what protects the management session: "plaintext" (telnet), "ssh, host key pinned", or "ssh, host '
        'key not trusted yet" (no login is attempted until it is)'))
    ssh_host_key_sha256 = serializers.CharField(read_only=True, help_text="the trusted host key's fingerprint")

    def validate_ssh_host_key(self, value: str) -> str:
        return hostkeys.normalize(value) if value else ""


class DeviceSerializer(RegistrySerializer):
    zone = zone_field(queryset=Zone.objects.all())
    owner_site = site_field(queryset=Site.objects.all())

    class Meta:
        model = Device
        fields = ["id", "device_id", "description", "wwn", "zone", "owner_site", "shareable", "created_at",
                  "updated_at"]


class LinkSerializer(redaction.InitiatorsScoped, RegistrySerializer):
    """A link as flexzone configured it; initiator WWNs (and pairs holding them) only of the
    principal's sites."""

    site: SlugRelatedField[Site] = SlugRelatedField(slug_field="name", read_only=True)
    device: SlugRelatedField[Device] = SlugRelatedField(slug_field="description", read_only=True)
    router: SlugRelatedField[Router] = SlugRelatedField(slug_field="name", read_only=True)
    zone = serializers.IntegerField(source="zone_number", read_only=True, help_text="the zone number configured")
    initiators = serializers.ListField(child=serializers.CharField(), read_only=True,
                                       help_text=Link._meta.get_field("initiators").help_text)
    pairs = serializers.ListField(child=serializers.ListField(child=serializers.CharField(), min_length=2,
                                                              max_length=2),
                                  read_only=True, help_text=Link._meta.get_field("pairs").help_text)

    class Meta:
        model = Link
        fields = ["id", "site", "device", "router", "port", "zone", "remote_ip", "state", "initiators", "pairs",
                  "lease_expires_at", "created_at", "updated_at", "up_at", "down_at"]
        read_only_fields = fields


class GrantSerializer(RegistrySerializer):
    """A site's grant of access to a device (the `Grant` record): what connect created or renewed
    and what disconnect or expiry ends. Initiator WWNs only for principals whose scope has the grant's
    site (admins and all_sites principals see every one)."""

    site: SlugRelatedField[Site] = SlugRelatedField(slug_field="name", read_only=True)
    device: SlugRelatedField[Device] = SlugRelatedField(slug_field="description", read_only=True)
    owner_site = serializers.CharField(source="device.owner_site.name", read_only=True,
                                       help_text="the site that owns the device")
    zone = serializers.IntegerField(source="device.zone.zone_id", read_only=True)
    state = serializers.SerializerMethodField(
        help_text="active: the connect that took it has ended; pending: that connect is still queued or running "
        "(the grant may yet be withdrawn)")
    origin = serializers.SerializerMethodField(
        help_text="connect: taken by a connect (its links are what the grant needs); v1: taken by a V1 addifcp "
        "(it needs only the links V1 commands made)")
    initiators = serializers.ListField(child=serializers.CharField(), read_only=True,
                                       help_text=Grant._meta.get_field("initiators").help_text)
    expires_at = serializers.DateTimeField(read_only=True, allow_null=True,
                                           help_text="when the grant ends by itself (a renewal's new end shows from "
                                           "its submission); null: until disconnected")
    operation = serializers.IntegerField(source="operation_id", read_only=True, allow_null=True,
                                         help_text="the connect (or V1 addifcp) that took the grant")

    class Meta:
        model = Grant
        fields = ["id", "site", "device", "owner_site", "zone", "exclusive", "state", "origin", "initiators",
                  "acquired_at", "expires_at", "operation"]
        read_only_fields = fields

    def get_state(self, grant: Grant) -> str:
        live = grant.operation is not None and grant.operation.state in (Operation.State.QUEUED,
                                                                         Operation.State.RUNNING)
        return "pending" if live else "active"

    def get_origin(self, grant: Grant) -> str:
        return "v1" if grant.operation is not None and grant.operation.plan.get("raw") else "connect"

    def to_representation(self, grant: Grant) -> dict:
        data = super().to_representation(grant)
        visible = self.context.get("initiator_sites")  # None: every site's
        if visible is not None and grant.site_id not in visible:
            data["initiators"] = []
        return data


class ZoningImageSerializer(RegistrySerializer):
    """One of flexzone's zoning changes on an FCIP switch: the zoning in force before and after it, what
    differs, and the commands that would put the before-image back (a dry run: never sent)."""

    router: SlugRelatedField[Router] = SlugRelatedField(slug_field="name", read_only=True)
    operation = serializers.IntegerField(source="operation_id", read_only=True, allow_null=True)
    changes = serializers.SerializerMethodField(help_text="zones the change put in force (added), took out "
                                                "(removed) and whose members it changed (changed)")
    restore = serializers.SerializerMethodField(help_text="the commands that would put the before-image back, "
                                                "relative to the zoning flexzone left; rendered, never sent")

    class Meta:
        model = ZoningImage
        fields = ["id", "router", "operation", "taken_at", "before", "after", "changes", "restore"]
        read_only_fields = fields

    def get_changes(self, image: ZoningImage) -> dict[str, list[str]]:
        added, removed, changed = zoning_differences(image.before, image.after or image.before)
        return {"added": added, "removed": removed, "changed": changed}

    def get_restore(self, image: ZoningImage) -> list[str]:
        return DRIVERS[image.router.platform].render_restore(image.before, image.after)


class OperationSerializer(redaction.InitiatorsScoped, RegistrySerializer):
    """State and phase timings for everyone; the router transcript only for admins; initiator WWNs
    (in the request, plan, commands, result and error) only of the principal's sites."""

    principal: SlugRelatedField[Principal] = SlugRelatedField(slug_field="name", read_only=True)
    url = serializers.SerializerMethodField()
    zoning_images = serializers.SerializerMethodField(
        help_text="admins, one operation at a time: the zoning in force on each FCIP switch before and after each "
        "of its zoning changes (/api/zoning-history/); omitted otherwise")

    class Meta:
        model = Operation
        fields = ["id", "url", "kind", "state", "phase", "principal", "request", "plan", "result", "attempts",
                  "error", "transcript", "zoning_images", "registry_ms", "invocation_ms", "router_ms", "total_ms",
                  "created_at", "started_at", "finished_at", "heartbeat_at"]
        read_only_fields = fields

    def get_url(self, operation: Operation) -> str:
        path = reverse("operation-detail", args=[operation.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if getattr(user, "role", None) != Role.ADMIN:
            data.pop("transcript", None)
        if not self._shows_zoning():
            data.pop("zoning_images", None)
        return data

    def _shows_zoning(self) -> bool:
        user = getattr(self.context.get("request"), "user", None)
        return getattr(user, "role", None) == Role.ADMIN and self.context.get("zoning_images", True)

    @extend_schema_field(ZoningImageSerializer(many=True))
    def get_zoning_images(self, operation: Operation) -> list[dict]:
        if not self._shows_zoning():
            return []
        images = operation.zoning_images.select_related("router").order_by("taken_at", "pk")
        # many=True makes a ListSerializer, whose data is a list (the stubs type the constructor's result as one row's)
        return cast(list[dict], ZoningImageSerializer(images, many=True, context=self.context).data)


class PrincipalSerializer(RegistrySerializer):
    sites = site_field(queryset=Site.objects.all(), many=True, required=False)
    zones = zone_field(queryset=Zone.objects.all(), many=True, required=False)

    class Meta:
        model = Principal
        fields = ["id", "name", "role", "cert_sha256", "cert_issuer", "cert_serial", "sites", "zones", "all_sites",
                  "all_zones", "revoked_at", "created_at"]
        extra_kwargs = {
            "cert_sha256": {"allow_blank": False, "validators": [RegexValidator(
                r"\A[0-9a-f]{64}\Z", "64 lower-case hex digits (SHA-256 of the DER certificate).", "sha256_hex")]},
            "cert_serial": {"validators": [RegexValidator(
                r"\A[0-9a-f]{1,40}\Z", "Lower-case hex without separators, at most 40 digits.", "serial_hex")]},
        }


class AuditEventSerializer(RegistrySerializer):
    operation = serializers.IntegerField(source="operation_id", read_only=True, allow_null=True)  # its id

    class Meta:
        model = AuditEvent
        fields = ["id", "created_at", "principal_name", "cert_sha256", "cert_subject", "action", "method", "path",
                  "outcome", "status_code", "detail", "target", "before", "after", "operation", "remote_addr"]
        read_only_fields = fields


# --- requests that are not models ----------------------------------------------------------------


class TargetSerializer(KnownFieldsOnly, serializers.Serializer):
    """What to connect (or disconnect, or plan): a site and exactly one of device, WWN or zone."""

    site = StrictCharField(max_length=100, validators=[validate_description],
                           help_text="requesting site: short name, display name or MSAN id")
    device_description = StrictCharField(max_length=100, required=False, validators=[validate_description])
    wwn = WWNField(required=False)
    zone = StrictIntegerField(required=False, min_value=ZONE_MIN, max_value=ZONE_MAX)

    def validate(self, attrs):
        given = [name for name in ("device_description", "wwn", "zone") if attrs.get(name) not in (None, "")]
        if len(given) != 1:
            raise serializers.ValidationError(
                {"device": "Give exactly one of device_description, wwn or zone."}, code="one_selector"
            )
        return attrs


def hosts_field() -> ItemsField:
    return ItemsField(
        child=StrictCharField(max_length=63, validators=[validate_short_name]),
        required=False,
        allow_empty=False,
        max_length=HOSTS_MAX,
        help_text="FCIP: zone only these hosts (names) of the requesting site; default all of its hosts",
    )


class PlanQuerySerializer(TargetSerializer):
    action = serializers.ChoiceField(choices=["connect", "disconnect"], default="connect")
    zone = StrictIntegerField(required=False, min_value=ZONE_MIN, max_value=ZONE_MAX, text=True)  # a query: text
    hosts = hosts_field()

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if attrs["action"] == "disconnect" and "hosts" in attrs:
            raise serializers.ValidationError(
                {"hosts": "A disconnect removes the whole link, for every host; hosts goes with connect."},
                code="connect_only",
            )
        return attrs


class ConnectSerializer(TargetSerializer):
    duration = StrictIntegerField(required=False, min_value=1, max_value=LEASE_MAX,
                                  help_text="lease in seconds: remove the link after this long")
    hosts = hosts_field()


class ReconcileSerializer(KnownFieldsOnly, serializers.Serializer):
    repair = StrictBooleanField(default=False, help_text="converge registry and routers (admin only)")
    policy = serializers.ChoiceField(choices=["registry", "router"], default="registry",
                                     help_text="which side is the truth when repairing")
    router = StrictCharField(max_length=63, required=False, validators=[validate_short_name],
                             help_text="this router only (one of the principal's sites'); every router when absent")


class InvokeSerializer(KnownFieldsOnly, serializers.Serializer):
    """The V1 low-level commands, against a named router."""

    router = StrictCharField(max_length=63, validators=[validate_short_name])
    command = serializers.ChoiceField(choices=["lsifcp", "addifcp", "rmifcp"])
    port = StrictIntegerField(required=False, min_value=0, max_value=4095)
    zone = StrictIntegerField(required=False, min_value=ZONE_MIN, max_value=ZONE_MAX)
    ifcpip = StrictIPAddressField(required=False, help_text="the remote iFCP gateway's IP address")

    def validate(self, attrs):
        if attrs["command"] != "lsifcp":
            missing = {name: "Required for addifcp and rmifcp." for name in ("port", "zone", "ifcpip")
                       if attrs.get(name) is None}
            if missing:
                raise serializers.ValidationError(missing, code="required")
        return attrs

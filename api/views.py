"""API views. Registry viewsets are declarations over `RegistryViewSet`, which owns transactions,
audit records and logging; the operation endpoints (connect, disconnect, reconcile, invoke) journal
a request through `operations.intake` and answer 202 with the operation's URL."""

from __future__ import annotations

import json
import logging
import re
import time
from contextlib import ExitStack

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, transaction
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.permissions import SAFE_METHODS
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from access import audit, redaction, writers
from access.models import AuditEvent, Principal, Role
from access.permissions import require_scope, scoped_site_ids, visible
from api import serializers as s
from api.fields import invalid
from api.schema import QueryFilter, query_filters
from operations import planner, submit
from operations.delta import with_delta
from operations.models import TERMINAL_STATES, Grant, Link, Operation, OperationKind, ZoningImage
from registry.models import Device, Host, Router, Site, Zone

log = logging.getLogger("flexzone.api")
_WAIT = re.compile(r"\A[0-9]{1,6}(\.[0-9]{1,3})?\Z")


def _jsonable(data) -> dict:
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()

    def get_fields(self):
        # Declared here rather than in the class body: `errors` is also the serializer's own property.
        errors = inline_serializer(
            "FieldError",
            {"field": serializers.CharField(), "rule": serializers.CharField(), "message": serializers.CharField()},
            many=True,
            required=False,
        )
        return {**super().get_fields(), "errors": errors}


ERRORS = {status_code: ErrorSerializer for status_code in (400, 401, 403, 404, 409)}


class AuditedView:
    """Records every write and every refusal (see access.audit) once the response is final; the rows a
    write changes are recorded by the database's write trail under the request's principal
    (access.writers)."""

    read_role = Role.VIEWER
    write_role = Role.ADMIN
    audit_noun = "resource"

    def dispatch(self, request, *args, **kwargs):
        self._acting = ExitStack()
        with self._acting:
            return super().dispatch(request, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        principal = getattr(request.user, "principal", None)
        if request.method not in SAFE_METHODS and principal is not None:
            self._acting.enter_context(writers.acting(principal.name, f"api {request.method} {request.path}"))

    def audit_action(self, request) -> str:
        action = getattr(self, "action", None) or request.method.lower()
        return f"{self.audit_noun}.{action}"

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if audit.should_record(request.method, response.status_code):
            try:
                audit.record(request, response, self.audit_action(request))
            except DatabaseError:
                log.exception("could not write the audit record for %s %s", request.method, request.path)
        return response


class RegistryViewSet(AuditedView, viewsets.ModelViewSet):
    """Base of every registry endpoint: reads for viewers, writes for `write_role`, each write in one
    transaction with its before/after recorded; `filters` maps query parameters to lookups.
    Reads show what the principal may see (`access.permissions.visible`, the one scope rule)."""

    filters: dict[str, str] = {}
    lookup_value_regex = "[0-9]+"
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self):
        queryset = super().get_queryset()
        queryset = visible(queryset, getattr(self.request.user, "principal", None))
        if self.action != "list":
            return queryset
        for query_filter in self.query_filters():
            value = self.request.query_params.get(query_filter.param)
            if value is not None:
                queryset = queryset.filter(**{query_filter.lookup: query_filter.clean(value)})
        return queryset

    @classmethod
    def query_filters(cls) -> list[QueryFilter]:
        """The list's filters, typed from the fields they filter on (api.schema): the schema and the
        check of a value come from the same declaration."""
        if cls.queryset is None:
            raise TypeError(f"{cls.__name__} lists no queryset to filter")
        return query_filters(cls.queryset.model, cls.filters)

    def _target(self, instance) -> str:
        return f"{self.audit_noun}:{instance.pk}"

    def perform_create(self, serializer):
        with transaction.atomic():
            instance = serializer.save()
        audit.note(self.request, target=self._target(instance), after=_jsonable(serializer.data))
        log.info("%s created %s", self.request.user, self._target(instance))

    def perform_update(self, serializer):
        before = _jsonable(self.get_serializer(serializer.instance).data)
        with transaction.atomic():
            instance = serializer.save()
        audit.note(self.request, target=self._target(instance), before=before, after=_jsonable(serializer.data))
        log.info("%s updated %s", self.request.user, self._target(instance))

    def perform_destroy(self, instance):
        target, before = self._target(instance), _jsonable(self.get_serializer(instance).data)
        with transaction.atomic():
            instance.delete()
        audit.note(self.request, target=target, before=before)
        log.info("%s deleted %s", self.request.user, target)


class ReadOnlyRegistryViewSet(RegistryViewSet):
    http_method_names = ["get", "head", "options"]


class SiteViewSet(RegistryViewSet):
    queryset = Site.objects.all()
    serializer_class = s.SiteSerializer
    audit_noun = "site"
    filters = {"name": "name"}


class ZoneViewSet(RegistryViewSet):
    queryset = Zone.objects.all()
    serializer_class = s.ZoneSerializer
    audit_noun = "zone"
    filters = {"zone_id": "zone_id"}


class RouterViewSet(RegistryViewSet):
    queryset = Router.objects.select_related("site")
    serializer_class = s.RouterSerializer
    audit_noun = "router"
    filters = {"name": "name", "site": "site__name"}


class DeviceViewSet(RegistryViewSet):
    queryset = Device.objects.select_related("zone", "owner_site")
    serializer_class = s.DeviceSerializer
    audit_noun = "device"
    filters = {"description": "description__iexact", "wwn": "wwn__iexact", "zone": "zone__zone_id",
               "owner_site": "owner_site__name"}


class HostViewSet(RegistryViewSet):
    queryset = Host.objects.select_related("site").prefetch_related("initiators")
    serializer_class = s.HostSerializer
    audit_noun = "host"
    filters = {"site": "site__name", "name": "name"}


class LinkViewSet(ReadOnlyRegistryViewSet):
    queryset = Link.objects.select_related("site", "device", "router")
    serializer_class = s.LinkSerializer
    audit_noun = "link"
    filters = {"state": "state", "site": "site__name", "router": "router__name", "device": "device__description"}


class GrantViewSet(ReadOnlyRegistryViewSet):
    """Who may reach what, until when: a principal sees the grants its sites hold and those of its
    sites' devices, but initiator WWNs only of its own sites' grants."""

    queryset = Grant.objects.select_related("site", "device__owner_site", "device__zone", "operation").defer(
        "operation__transcript", "operation__result").order_by("site__name", "device__description")
    serializer_class = s.GrantSerializer
    audit_noun = "grant"
    filters = {"site": "site__name", "device": "device__description", "owner_site": "device__owner_site__name"}

    def _scoped_sites(self) -> set[int] | None:
        """The principal's site ids; None for an admin or an all_sites principal (no limit)."""
        if not hasattr(self, "_sites"):
            self._sites = scoped_site_ids(getattr(self.request.user, "principal", None))
        return self._sites

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "initiator_sites": self._scoped_sites()}


class OperationViewSet(ReadOnlyRegistryViewSet):
    queryset = Operation.objects.select_related("principal")
    serializer_class = s.OperationSerializer
    audit_noun = "operation"
    filters = {"state": "state", "kind": "kind"}

    def get_serializer_context(self):
        # The zoning images go with one operation read on its own, not with every row of a listing.
        return {**super().get_serializer_context(), "zoning_images": self.action == "retrieve"}


class PrincipalViewSet(RegistryViewSet):
    queryset = Principal.objects.prefetch_related("sites", "zones")
    serializer_class = s.PrincipalSerializer
    audit_noun = "principal"
    read_role = Role.ADMIN
    filters = {"name": "name", "role": "role"}


class ZoningHistoryViewSet(ReadOnlyRegistryViewSet):
    """The zoning in force on each FCIP switch before and after each of flexzone's changes, newest
    first, each with the commands that would put its before-image back (rendered, never sent). Admins
    only: the images hold every host's zoning on the fabric."""

    queryset = ZoningImage.objects.select_related("router")
    serializer_class = s.ZoningImageSerializer
    audit_noun = "zoning-history"
    read_role = Role.ADMIN
    filters = {"router": "router__name", "operation": "operation_id"}


class AuditEventViewSet(ReadOnlyRegistryViewSet):
    queryset = AuditEvent.objects.all()
    serializer_class = s.AuditEventSerializer
    audit_noun = "audit-event"
    read_role = Role.ADMIN
    filters = {"principal": "principal_name", "outcome": "outcome", "action": "action"}


# --- operations ----------------------------------------------------------------------------------


class PlanStepSerializer(serializers.Serializer):
    order = serializers.IntegerField()
    action = serializers.CharField()
    router = serializers.CharField()
    platform = serializers.CharField()
    site = serializers.CharField()
    port = serializers.IntegerField()
    zone = serializers.IntegerField()
    remote_ip = serializers.CharField()
    local_ip = serializers.CharField()
    wwn = serializers.CharField(allow_null=True)
    device = serializers.CharField()
    commands = serializers.ListField(child=serializers.CharField())
    delta = serializers.CharField(
        required=False, help_text="dry runs: what the step changes given the links recorded now: add: create, shared "
        "(nothing sent), extend (FCIP zoning extended in place), waits (another operation is changing the link), "
        "refused (an FCIP record left mid-change stands for other grants' pairs); remove: remove, kept (another "
        "grant needs it: nothing sent), shrink (FCIP), waits; absent outside dry runs")
    initiators = serializers.ListField(
        child=serializers.CharField(), help_text="FCIP: the requesting site's initiator WWNs zoned with wwn; [] on iFCP"
    )
    vsan = serializers.IntegerField(allow_null=True, help_text="Cisco MDS: the VSAN zoned; null on other platforms")
    pairs = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2), required=False,
        help_text="FCIP zone connects: the further [initiator, target] pairs of the zone's other devices on this link",
    )
    notes = serializers.ListField(
        child=serializers.CharField(), help_text='settled at run time, e.g. "<effective cfg>" is read from the switch'
    )


class PlanSerializer(serializers.Serializer):
    action = serializers.CharField()
    site = serializers.CharField()
    zone = serializers.IntegerField()
    devices = serializers.ListField(child=serializers.CharField())
    steps = PlanStepSerializer(many=True)


def _plan_scope(plan: dict) -> dict:
    """The sites and zone a plan (as journaled) touches: the requesting site and every router's site."""
    return {
        "sites": list(Site.objects.filter(name__in={plan["site"], *(step["site"] for step in plan["steps"])})),
        "zones": list(Zone.objects.filter(zone_id=plan["zone"])),
    }


_POLL_SECONDS = 0.1


def _wait_for(operation: Operation, seconds: float) -> Operation:
    """Re-read the row until it reaches a terminal state or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while operation.state not in TERMINAL_STATES and time.monotonic() < deadline:
        time.sleep(min(_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        operation.refresh_from_db()
    return operation


class OperationView(AuditedView, APIView):
    """Base of the endpoints that journal an operation; subclasses build (kind, request, plan)."""

    write_role = Role.OPERATOR
    serializer_class: type[serializers.Serializer]
    field_aliases: dict[str, str] = {}

    def journal(self, principal: Principal, data: dict) -> tuple[str, dict]:
        """(kind, request) for the engine; refuses what the principal may not ask at all."""
        raise NotImplementedError

    def authorize(self, principal: Principal, plan: dict) -> None:
        """Refuse (PermissionDenied) a plan that reaches outside the principal's scopes; the engine
        calls it with the one plan it will run, before anything is locked or queued."""

    def post(self, request):
        serializer = self.serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        wait = self._wait_seconds(request)
        principal = request.user.principal
        kind, operation_request = self.journal(principal, serializer.validated_data)
        try:
            operation = submit(kind, operation_request, principal,
                               authorize=lambda plan: self.authorize(principal, plan))
        except planner.PlanError as exc:
            if exc.field in self.field_aliases:  # name the field the way the client sent it
                exc.field = self.field_aliases[exc.field]
            raise
        # By target, not the operation foreign key: inserting a row that references the operation takes
        # FOR KEY SHARE on it, and a worker claiming it with FOR UPDATE SKIP LOCKED would then skip it.
        audit.note(request, target=f"operation:{operation.pk}", after=operation_request, operation=operation.pk)
        log.info("%s submitted %s operation %s: %s", principal.name, kind, operation.pk, operation_request)
        if wait:
            operation = _wait_for(operation, wait)
        done = operation.state in TERMINAL_STATES
        data = s.OperationSerializer(operation, context={"request": request}).data
        code = status.HTTP_200_OK if done else status.HTTP_202_ACCEPTED
        location = request.build_absolute_uri(reverse("operation-detail", args=[operation.pk]))
        return Response(data, status=code, headers={"Location": location})

    @staticmethod
    def _wait_seconds(request) -> float:
        raw = request.query_params.get("wait")
        if raw is None:
            return 0.0
        if not _WAIT.match(raw):
            raise exceptions.ValidationError({"wait": ["Seconds to wait, e.g. 30 or 2.5 (ASCII digits)."]})
        return min(float(raw), settings.FLEXZONE_API_MAX_WAIT)


_WAIT_SCHEMA = {"type": "string", "pattern": _WAIT.pattern.replace("\\A", "^").replace("\\Z", "$")}
_WAIT_PARAM = OpenApiParameter("wait", _WAIT_SCHEMA, description="block up to this many seconds for the "
                               "result (e.g. 30 or 2.5; at most FLEXZONE_API_MAX_WAIT, 60 by default)")
_OPERATION_RESPONSES = {200: s.OperationSerializer, 202: s.OperationSerializer, **ERRORS}


@extend_schema(request=s.ConnectSerializer, responses=_OPERATION_RESPONSES, parameters=[_WAIT_PARAM])
class ConnectView(OperationView):
    """Connect a site to a device (by description or WWN) or a whole zone; answers 202 + operation."""

    serializer_class: type[serializers.Serializer] = s.ConnectSerializer
    audit_noun = "connect"
    kind = OperationKind.ADD

    def journal(self, principal, data):
        return self.kind, dict(data)

    def authorize(self, principal, plan):
        require_scope(principal, **_plan_scope(plan))

    def audit_action(self, request) -> str:
        return self.audit_noun


@extend_schema(request=s.TargetSerializer, responses=_OPERATION_RESPONSES, parameters=[_WAIT_PARAM])
class DisconnectView(ConnectView):
    """Take down what connect put up; removing an absent link succeeds without change."""

    serializer_class = s.TargetSerializer
    audit_noun = "disconnect"
    kind = OperationKind.REMOVE


@extend_schema(request=s.ReconcileSerializer, responses=_OPERATION_RESPONSES, parameters=[_WAIT_PARAM])
class ReconcileView(OperationView):
    """Compare the registry with every router (or one); with repair (admin), converge them."""

    serializer_class = s.ReconcileSerializer
    audit_noun = "reconcile"

    def journal(self, principal, data):
        # A report only reads the routers; a repair changes any of them, so it is for admins.
        if data.get("repair") and principal.role != Role.ADMIN:
            raise exceptions.PermissionDenied(f"Principal {principal.name} is not an admin; repair needs admin.")
        if data.get("router"):
            require_scope(principal, sites=[planner.find_router(data["router"]).site])
        elif (sites := scoped_site_ids(principal)) is not None:
            # Every router it may act on: those of its sites (the one scope rule), named in the request.
            if not sites:
                raise exceptions.PermissionDenied(f"Principal {principal.name} is scoped to no site: it has no "
                                                  "router to reconcile.")
            data = {**data, "sites": sorted(sites)}  # by id: a site renamed meanwhile keeps its routers in
        return OperationKind.RECONCILE, dict(data)

    def audit_action(self, request) -> str:
        return self.audit_noun


@extend_schema(request=s.InvokeSerializer, responses=_OPERATION_RESPONSES, parameters=[_WAIT_PARAM])
class InvokeView(OperationView):
    """V1-compatible lsifcp / addifcp / rmifcp against a named router, journaled like any operation."""

    serializer_class = s.InvokeSerializer
    audit_noun = "invoke"
    field_aliases = {"remote_ip": "ifcpip"}

    def journal(self, principal, data):
        router = planner.find_router(data["router"])
        zones = []
        if data.get("zone") is not None:
            zone = Zone.objects.filter(zone_id=data["zone"]).first()
            if zone is None:
                raise planner.PlanError("zone", f"zone {data['zone']} does not exist.")
            zones = [zone]
        # The router's site, and the site at the other end of the link, which the link serves.
        served = Site.objects.filter(data_ip=data["ifcpip"]).first() if data.get("ifcpip") else None
        require_scope(principal, sites=[router.site, *([served] if served else [])], zones=zones)
        request = {key: value for key, value in data.items() if key != "ifcpip"}
        if data.get("ifcpip") is not None:
            request["remote_ip"] = data["ifcpip"]  # V1 called it --ifcpip; the engine says remote_ip
        return OperationKind.INVOKE, request

    def audit_action(self, request) -> str:
        try:
            data = request.data
        except exceptions.APIException:  # a body that could not be parsed: the refusal is being answered
            return "invoke"
        return f"invoke.{data.get('command', '')}"[:64] if isinstance(data, dict) else "invoke"


class PlanView(AuditedView, APIView):
    """Dry run: which routers, in which order, with exactly which command lines."""

    audit_noun = "plan"

    @extend_schema(parameters=[s.PlanQuerySerializer], responses={200: PlanSerializer, **ERRORS})
    def get(self, request):
        params = request.query_params.dict()
        if "hosts" in request.query_params:  # the one repeatable parameter: ?hosts=a&hosts=b
            params["hosts"] = request.query_params.getlist("hosts")
        query = s.PlanQuerySerializer(data=params)
        query.is_valid(raise_exception=True)
        plan = planner.plan_target(query.validated_data["action"], query.validated_data)
        try:
            # The delta says who holds what there (the links recorded, and whose): it is shown to principals
            # whose scope covers every site of the plan (the one scope rule); the commands are the registry's.
            require_scope(request.user.principal, **_plan_scope(plan.as_dict()))
            plan = with_delta(plan)
        except exceptions.PermissionDenied:
            pass
        return Response(redaction.for_request(request).redact(plan.as_dict()))


class SchemaView(SpectacularAPIView):
    """The schema, in the format `?format=` names (json or yaml) or the one the Accept header asks for;
    an empty `format` is refused like any other value outside the two (DRF would ignore it)."""

    def handle_exception(self, exc):
        # Its renderers write OpenAPI documents; an error is the API's JSON like everywhere else.
        self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    def get(self, request, *args, **kwargs):
        if request.query_params.get("format") == "":
            raise invalid("format", "One of json or yaml, or leave it out.", "invalid_choice")
        return super().get(request, *args, **kwargs)

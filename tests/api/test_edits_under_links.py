"""Registry values a router carries cannot change while links or holds use them (issue 21, item 3).

A PATCH of a site's `router_port`/`data_ip`, a router's `site`, `platform` or `vsan`, a device's `wwn`
or `zone`, or a host's initiators, while a site holds a device through them, would make the desired
state name another link than the one on the router. Such an edit is a 409 naming what uses the value;
nothing changes. Once those are disconnected, the edit goes through. How flexzone reaches a router
(its address and port) stays free. Over the real mTLS server. The same rule holds in the database for
the paths that skip the models (issue 45, item 4): a queryset update, a save without full_clean, raw SQL.
"""

from __future__ import annotations

import re
import threading
import time
from unittest import mock

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.forms import modelform_factory

from operations import intake
from operations.desired import desired_for
from operations.models import Grant, Link
from registry import in_use
from registry.demo import load_demo
from registry.models import Device, Host, Initiator, Router, Site, Zone
from tests.support.registry import database_refuses, models_refuse


@pytest.fixture
def held(cast):
    """remote-site connected to XRAID1 (primary-site's): its lock and the two links, as an add leaves them."""
    device = cast["xraid1"]
    Grant.objects.create(device=device, site=cast["remote"], exclusive=True)
    for router, port, remote in ((cast["primary_rtr"], 8, "127.0.0.22"), (cast["remote_rtr"], 4, "127.0.0.21")):
        Link.objects.create(site=cast["remote"], device=device, router=router, port=port, zone=device.zone,
                            remote_ip=remote, state="up")
    return cast


EDITS = [
    ("site", "primary", {"router_port": 9}, "router_port"),
    ("site", "remote", {"data_ip": "127.0.0.29"}, "data_ip"),
    ("router", "primary_rtr", {"vsan": 10}, "vsan"),
    ("device", "xraid1", {"wwn": "20:00:00:04:53:00:09:99"}, "wwn"),
]


def path_of(cast, kind: str, key: str) -> str:
    return f"/api/{kind}s/{cast[key].pk}/"


@pytest.mark.parametrize("kind, key, change, field", EDITS, ids=[f"{k}-{f}" for k, _, _, f in EDITS])
def test_an_edit_of_a_value_live_links_were_made_with_is_refused_naming_them(call, held, kind, key, change, field):
    before = call("root", "GET", path_of(held, kind, key)).json()
    refused = call("root", "PATCH", path_of(held, kind, key), json=change)
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "in_use" and body["errors"][0]["field"] == field
    assert "remote-site holds XRAID1" in body["detail"] and "disconnect" in body["detail"]
    assert call("root", "GET", path_of(held, kind, key)).json() == before  # nothing changed


def test_a_host_s_initiators_cannot_change_while_its_site_s_fcip_links_zone_them(call, held):
    host = Host.objects.get(site=held["remote"])
    wwns = list(host.initiators.values_list("wwn", flat=True))
    Link.objects.filter(site=held["remote"]).update(initiators=wwns)  # as an FCIP link records them
    refused = call("root", "PATCH", f"/api/hosts/{host.pk}/", json={"initiators": ["10:00:00:10:9b:5e:c0:77"]})
    assert refused.status_code == 409, refused.text
    assert refused.json()["errors"][0]["field"] == "initiators"
    assert sorted(host.initiators.values_list("wwn", flat=True)) == sorted(wwns)
    # The same list again changes nothing, and goes through.
    assert call("root", "PATCH", f"/api/hosts/{host.pk}/", json={"initiators": wwns}).status_code == 200
    # iFCP links zone no initiators: with only those, the host's initiators are free.
    Link.objects.update(initiators=[])
    freed = call("root", "PATCH", f"/api/hosts/{host.pk}/", json={"initiators": ["10:00:00:10:9b:5e:c0:77"]})
    assert freed.status_code == 200, freed.text


def test_values_no_link_uses_and_values_once_disconnected_can_change(call, held):
    # A description changes nothing on a router; a site nobody's link uses is free; so is how flexzone
    # reaches a router (a link names its router by id).
    assert call("root", "PATCH", path_of(held, "site", "primary"), json={"description": "HQ"}).status_code == 200
    moved = call("root", "PATCH", path_of(held, "router", "remote_rtr"), json={"host": "127.0.0.41", "port": 2399})
    assert moved.status_code == 200, moved.text
    assert call("root", "PATCH", path_of(held, "device", "xraid2"), json={"wwn": "20:00:00:04:53:00:09:98"}
                ).status_code == 200
    Link.objects.update(state="down")
    Grant.objects.all().delete()
    changed = call("root", "PATCH", path_of(held, "router", "primary_rtr"), json={"vsan": 10})
    assert changed.status_code == 200 and Router.objects.get(pk=held["primary_rtr"].pk).vsan == 10
    assert call("root", "PATCH", path_of(held, "site", "remote"), json={"data_ip": "127.0.0.29"}).status_code == 200
    assert Site.objects.get(pk=held["remote"].pk).data_ip == "127.0.0.29"


def test_the_admin_s_forms_refuse_the_same_edits(held):
    """The Django admin edits through model forms, whose full_clean() runs the same rule."""
    router_form = modelform_factory(Router, fields=["vsan"])
    form = router_form({"vsan": 10}, instance=Router.objects.get(pk=held["primary_rtr"].pk))
    assert not form.is_valid() and form.errors.as_data()["vsan"][0].code == "in_use"
    initiator = Initiator.objects.filter(host__site=held["remote"]).first()
    Link.objects.filter(site=held["remote"]).update(initiators=[initiator.wwn])
    initiator_form = modelform_factory(Initiator, fields=["wwn"])
    form = initiator_form({"wwn": "10:00:00:10:9b:5e:c0:78"}, instance=initiator)
    assert not form.is_valid() and "remote-site holds XRAID1" in form.errors["wwn"][0]
    assert Router.objects.get(pk=held["primary_rtr"].pk).vsan == held["primary_rtr"].vsan


def test_a_router_cannot_join_a_site_whose_links_are_live(call, held):
    """The planner takes a site's first-registered router: one moved there from another site may be it, and
    would take the next disconnect. A new router cannot be, but is refused all the same while links are live."""
    other = {"name": "a-rtr", "platform": "nishan_ips3000", "transport": "telnet", "host": "127.0.0.40",
             "port": 2399, "username": "admin", "secret_ref": "file:a-rtr"}
    refused = call("root", "POST", "/api/routers/", json={**other, "site": "remote-site"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["errors"][0]["field"] == "site" and "remote-site holds XRAID1" in refused.json()["detail"]
    elsewhere = Site.objects.create(name="third-site", display_name="THIRD", msan_id=3, management_ip="127.0.0.13",
                                    data_ip="127.0.0.23", router_port=5)
    created = call("root", "POST", "/api/routers/", json={**other, "site": "third-site"})
    assert created.status_code == 201, created.text
    moved = call("root", "PATCH", f"/api/routers/{created.json()['id']}/", json={"site": "remote-site"})
    assert moved.status_code == 409, moved.text
    assert Router.objects.get(name="a-rtr").site == elsewhere


def test_a_zone_s_number_cannot_change_under_live_links(call, held):
    """Issue 45, defect 1: the routers carry a link's zone number (`ifcp session ... zone 1`); renumbered,
    the next disconnect planned `zone 99` and left the zone-1 sessions on the routers."""
    zone = held["zones"][1]
    refused = call("root", "PATCH", f"/api/zones/{zone.pk}/", json={"zone_id": 99})
    assert refused.status_code == 409, refused.text
    assert refused.json()["errors"][0]["field"] == "zone_id" and "remote-site holds XRAID1" in refused.json()["detail"]
    assert Zone.objects.get(pk=zone.pk).zone_id == 1
    assert call("root", "PATCH", f"/api/zones/{zone.pk}/", json={"description": "free"}).status_code == 200
    Link.objects.update(state="down")
    Grant.objects.all().delete()
    assert call("root", "PATCH", f"/api/zones/{zone.pk}/", json={"zone_id": 99}).status_code == 200


def _zoned(held) -> tuple[Host, list[str]]:
    """remote-site's host, whose initiators remote-site's FCIP links zone."""
    host = Host.objects.get(site=held["remote"])
    wwns = sorted(host.initiators.values_list("wwn", flat=True))
    Link.objects.filter(site=held["remote"]).update(initiators=wwns)
    return host, wwns


def test_deleting_a_host_or_initiator_a_live_link_zones_is_refused_on_every_path(call, held):
    """Issue 45, defect 3: a PATCH emptying a host's initiators was refused, but a DELETE of the host (its
    initiators cascading) or of one initiator went through, the zoning of the live link left behind. One
    rule at the delete, whatever path deletes: the API, a queryset (the shell, a bulk delete), a cascade."""
    host, wwns = _zoned(held)
    refused = call("root", "DELETE", f"/api/hosts/{host.pk}/")
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "in_use" and "remote-site holds XRAID1" in refused.json()["detail"]
    assert "delete" in refused.json()["detail"]
    for delete in (lambda: Host.objects.filter(pk=host.pk).delete(),
                   lambda: Initiator.objects.filter(wwn=wwns[0]).delete(),
                   lambda: Initiator.objects.get(wwn=wwns[0]).delete()):
        with pytest.raises(ValidationError) as raised:
            delete()
        assert "remote-site holds XRAID1" in str(raised.value)
    assert sorted(Host.objects.get(pk=host.pk).initiators.values_list("wwn", flat=True)) == wwns
    # Once disconnected, the host goes, and its initiators with it.
    Link.objects.update(state="down")
    Grant.objects.all().delete()
    assert call("root", "DELETE", f"/api/hosts/{host.pk}/").status_code == 204
    assert not Initiator.objects.filter(wwn__in=wwns).exists()


def test_the_admin_refuses_those_deletes_with_a_message_not_an_error_page(api_server, held):
    host, wwns = _zoned(held)
    initiator = Initiator.objects.get(wwn=wwns[0])
    root = api_server.session("root")
    url = f"{api_server.url}/admin/registry/initiator/{initiator.pk}/delete/"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', root.get(url, timeout=20).text).group(1)
    answer = root.post(url, timeout=20, headers={"Referer": url}, data={"csrfmiddlewaretoken": token, "post": "yes"})
    assert answer.status_code == 200, answer.text[:500]
    assert "remote-site holds XRAID1" in answer.text
    listing = f"{api_server.url}/admin/registry/host/"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', root.get(listing, timeout=20).text).group(1)
    answer = root.post(listing, timeout=20, headers={"Referer": listing}, data={
        "csrfmiddlewaretoken": token, "action": "delete_selected", "_selected_action": [host.pk], "post": "yes"})
    assert answer.status_code == 200 and "remote-site holds XRAID1" in answer.text
    assert sorted(Host.objects.get(pk=host.pk).initiators.values_list("wwn", flat=True)) == wwns
    assert not LogEntry.objects.filter(action_flag=DELETION).exists()  # no "Deleted ..." for what stayed


def test_renaming_a_router_never_moves_the_next_disconnect_to_another(call, held):
    """Issue 45, defect 2: names are free to change, but a site's links were planned on "the first router
    by name": with a second router at remote-site (added while nothing was held), renaming remote-rtr
    made the disconnect plan target the other router, and the link stayed on the renamed one."""
    Grant.objects.all().delete()
    Link.objects.update(state="down")
    second = {"name": "z-rtr", "site": "remote-site", "platform": "nishan_ips3000", "transport": "telnet",
              "host": "127.0.0.40", "port": 2399, "username": "admin", "secret_ref": "file:z-rtr"}
    assert call("root", "POST", "/api/routers/", json=second).status_code == 201
    Link.objects.update(state="up")
    Grant.objects.create(device=held["xraid1"], site=held["remote"], exclusive=True)

    def disconnect_routers() -> list[str]:
        plan = call("root", "GET", "/api/plan/", params={"site": "remote-site", "device_description": "XRAID1",
                                                          "action": "disconnect"})
        assert plan.status_code == 200, plan.text
        return sorted(step["router_id"] for step in plan.json()["steps"])

    before = disconnect_routers()
    assert before == sorted([held["primary_rtr"].pk, held["remote_rtr"].pk])
    renamed = call("root", "PATCH", f"/api/routers/{held['remote_rtr'].pk}/", json={"name": "zz-rtr"})
    assert renamed.status_code == 200, renamed.text
    assert disconnect_routers() == before


def test_links_a_release_made_on_a_router_first_by_name_stay_that_router_s(call, held):
    """Before routers were taken by id, a site's first router by name carried its links. After an upgrade
    that router is still the one: the router carrying a site's live links is its router, so neither the
    next disconnect nor the settle chore's view of what the grants need moves to the first registered."""
    Grant.objects.all().delete()
    Link.objects.update(state="down")
    earlier = {"name": "a-rtr", "site": "remote-site", "platform": "nishan_ips3000", "transport": "telnet",
               "host": "127.0.0.40", "port": 2399, "username": "admin", "secret_ref": "file:a-rtr"}
    created = call("root", "POST", "/api/routers/", json=earlier)
    assert created.status_code == 201, created.text
    a_rtr = created.json()["id"]
    Link.objects.filter(router=held["remote_rtr"]).update(router_id=a_rtr, state="up")
    Link.objects.filter(router=held["primary_rtr"]).update(state="up")
    Grant.objects.create(device=held["xraid1"], site=held["remote"], exclusive=True)
    plan = call("root", "GET", "/api/plan/", params={"site": "remote-site", "device_description": "XRAID1",
                                                      "action": "disconnect"})
    assert plan.status_code == 200, plan.text
    assert sorted(step["router_id"] for step in plan.json()["steps"]) == sorted([held["primary_rtr"].pk, a_rtr])
    needed = {router for router, wants in desired_for().items() if wants}
    assert needed == {held["primary_rtr"].pk, a_rtr}


# (model, key in the cast, field, column, value): each value the routers carry, as a write would change it.
BEHIND_THE_MODELS = [
    (Site, "primary", "router_port", "router_port", 9),
    (Site, "remote", "data_ip", "data_ip", "127.0.0.29"),
    (Router, "primary_rtr", "vsan", "vsan", 10),
    (Router, "remote_rtr", "platform", "platform", "mcdata_eclipse"),
    (Device, "xraid1", "wwn", "wwn", "20:00:00:04:53:00:09:99"),
    (Zone, None, "zone_id", "zone_id", 99),
]


def _row(held, model, key):
    return model.objects.get(pk=held["zones"][1].pk if key is None else held[key].pk)


@pytest.mark.parametrize("model, key, field, column, value", BEHIND_THE_MODELS,
                         ids=[f"{m.__name__}-{f}" for m, _, f, _, _ in BEHIND_THE_MODELS])
def test_every_path_that_skips_the_models_rule_is_refused_by_the_database(held, model, key, field, column, value):
    """Issue 45, item 4: the rule lived in clean() and the delete hooks; a queryset update, a save()
    without full_clean() (the shell) and raw SQL changed the value under the live links. The database's
    trigger refuses each, with the models' sentence, naming the field; nothing changes."""
    row = _row(held, model, key)
    before = getattr(row, column)
    table = model._meta.db_table
    writes = {
        "queryset update": lambda: model.objects.filter(pk=row.pk).update(**{column: value}),
        "raw SQL": lambda: connection.cursor().execute(f"UPDATE {table} SET {column} = %s WHERE id = %s",
                                                       [value, row.pk]),
    }
    for path, write in writes.items():
        with pytest.raises(DatabaseError) as raised, transaction.atomic():
            write()
        refusal = in_use.from_database(raised.value)
        assert refusal is not None, (path, raised.value)
        assert in_use.refused(refusal) and list(refusal.error_dict) == [field], (path, refusal)
        assert "remote-site holds XRAID1" in str(refusal) and "Disconnect those first" in str(refusal)
    setattr(row, column, value)
    with pytest.raises(ValidationError) as saved:
        row.save()  # the shell's save: no full_clean(); the refusal is the models' own error
    assert in_use.refused(saved.value) and list(saved.value.error_dict) == [field]
    assert getattr(_row(held, model, key), column) == before
    # Released, every path writes.
    Link.objects.update(state="down")
    Grant.objects.all().delete()
    row.save()
    assert getattr(_row(held, model, key), column) == value


def test_the_database_refuses_deleting_or_moving_what_a_live_fcip_link_zones(held):
    host, wwns = _zoned(held)
    initiator = Initiator.objects.get(wwn=wwns[0])
    other = Host.objects.exclude(pk=host.pk).first()
    statements = [
        (f"DELETE FROM {Initiator._meta.db_table} WHERE id = %s", [initiator.pk], ""),
        (f"UPDATE {Initiator._meta.db_table} SET wwn = %s WHERE id = %s", ["10:00:00:10:9b:5e:c0:79", initiator.pk],
         "wwn"),
        (f"UPDATE {Initiator._meta.db_table} SET host_id = %s WHERE id = %s", [other.pk, initiator.pk], "host"),
        (f"UPDATE {Host._meta.db_table} SET site_id = %s WHERE id = %s", [held["primary"].pk, host.pk], "site"),
    ]
    for sql, values, field in statements:
        with pytest.raises(DatabaseError) as raised, transaction.atomic():
            connection.cursor().execute(sql, values)
        refusal = in_use.from_database(raised.value)
        assert refusal is not None and "remote-site holds XRAID1" in str(refusal), sql
        assert list(getattr(refusal, "error_dict", {"": None})) == [field], (sql, refusal)
    assert sorted(Host.objects.get(pk=host.pk).initiators.values_list("wwn", flat=True)) == wwns
    assert Host.objects.get(pk=host.pk).site_id == held["remote"].pk


def test_a_device_a_site_holds_cannot_be_deleted_on_any_path(call, held):
    """Its grants cascade: the delete ended access without a disconnect. Refused like an edit."""
    Link.objects.all().delete()  # link records, kept when down, protect it on their own
    device = held["xraid1"]
    refused = call("root", "DELETE", f"/api/devices/{device.pk}/")
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "in_use" and "remote-site holds XRAID1" in refused.json()["detail"]
    for delete in (lambda: Device.objects.filter(pk=device.pk).delete(),
                   lambda: Device.objects.get(pk=device.pk).delete()):
        with pytest.raises(ValidationError):
            delete()
    assert Grant.objects.filter(device=device).exists()


def test_the_database_and_the_models_refuse_the_same_edits(held):
    """Two codings of one rule (the models' for a field-named refusal before writing, the trigger for
    every path): for each edit, held and then released, both refuse or both let it through."""
    cases = [(model, key, column, value) for model, key, _f, column, value in BEHIND_THE_MODELS]
    for state in ("held", "links only", "grant only", "released"):
        if state == "links only":
            Grant.objects.all().delete()
        elif state == "grant only":
            Link.objects.update(state="down")
            Grant.objects.create(device=held["xraid1"], site=held["remote"], exclusive=True)
        elif state == "released":
            Grant.objects.all().delete()
        for model, key, column, value in cases:
            row = _row(held, model, key)
            refusals = (models_refuse(row, column, value), database_refuses(model, row.pk, **{column: value}))
            assert refusals == (state != "released",) * 2, (state, model.__name__, column, refusals)


def test_the_database_and_the_models_refuse_the_same_host_edits(held):
    """A host's initiators, while an FCIP link records them and once it is down: both refuse, then
    neither does."""
    host, wwns = _zoned(held)
    initiator = Initiator.objects.get(wwn=wwns[0])
    other = Host.objects.exclude(pk=host.pk).exclude(site=held["remote"]).first()
    cases = [(initiator, "wwn", "10:00:00:10:9b:5e:c0:7b"), (initiator, "host_id", other.pk),
             (host, "site_id", held["primary"].pk)]
    for live in (True, False):
        Link.objects.update(state="up" if live else "down")
        Grant.objects.all().delete()
        for row, column, value in cases:
            model = type(row)
            refusals = (models_refuse(model.objects.get(pk=row.pk), column, value),
                        database_refuses(model, row.pk, **{column: value}))
            assert refusals == (live, live), (live, model.__name__, column, refusals)


def test_a_host_edit_the_database_refuses_after_the_models_let_it_is_a_409_not_a_500(call, held):
    """The models' rule reads who zones an initiator from the desired state; the database's from what the
    grants and links record. Where they differ (here a grant that records the initiator on routers that do
    not zone, as a race with a connect would leave it), the serializer's queryset delete met the trigger
    and the API answered 500."""
    host = Host.objects.get(site=held["remote"])
    wwns = sorted(host.initiators.values_list("wwn", flat=True))
    Link.objects.update(state="down")
    Grant.objects.filter(site=held["remote"]).update(initiators=wwns)
    answer = call("root", "PATCH", f"/api/hosts/{host.pk}/", json={"initiators": []})
    assert answer.status_code == 409, answer.text
    assert answer.json()["code"] == "in_use" and "remote-site holds XRAID1" in answer.json()["detail"]
    assert sorted(host.initiators.values_list("wwn", flat=True)) == wwns


def test_the_database_refuses_raw_deletes_of_a_held_device_or_router_and_initiators_added_to_a_held_host(held):
    host, _wwns = _zoned(held)
    statements = [
        (f"DELETE FROM {Device._meta.db_table} WHERE id = %s", [held["xraid1"].pk]),
        (f"DELETE FROM {Router._meta.db_table} WHERE id = %s", [held["remote_rtr"].pk]),
        (f"INSERT INTO {Initiator._meta.db_table} (host_id, wwn, description) VALUES (%s, %s, '')",
         [host.pk, "10:00:00:10:9b:5e:c0:7a"]),
    ]
    for sql, values in statements:
        with pytest.raises(DatabaseError) as raised, transaction.atomic():
            connection.cursor().execute(sql, values)
        refusal = in_use.from_database(raised.value)
        assert refusal is not None and "remote-site holds XRAID1" in str(refusal), (sql, raised.value)
    Link.objects.all().delete()  # link records protect a router on their own; the grant still holds
    with pytest.raises(ValidationError):
        Router.objects.get(pk=held["primary_rtr"].pk).delete()  # the models' pre_delete: the same rule
    assert Router.objects.filter(pk__in=[held["remote_rtr"].pk, held["primary_rtr"].pk]).count() == 2
    assert Device.objects.filter(pk=held["xraid1"].pk).exists()


def test_an_edit_racing_a_connect_waits_for_its_grant_and_is_refused(transactional_db, demo):
    """Review of issue 45, item 4: the rule looks for holds when the edit writes; a connect that had
    planned with the old value and not yet written its grant was not there to see, so the edit went
    through and the grant held a value the registry no longer had. The submit now keeps registry writes
    out from its plan to its commit: the edit waits, then finds the grant."""
    planned, edit_done = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def plan_then_dawdle(*args, **kwargs):
        plan = real_plan(*args, **kwargs)
        planned.set()
        # The edit runs now: done at once (before the fix), or waiting for this submit's advisory lock.
        deadline = time.monotonic() + 10
        while not edit_done.wait(timeout=0.02) and time.monotonic() < deadline:
            with connection.cursor() as cursor:
                cursor.execute("SELECT wait_event FROM pg_stat_activity WHERE pid = %s", [outcome.get("pid", 0)])
                if (cursor.fetchone() or [None])[0] == "advisory":
                    break
        return plan

    def edit() -> None:
        outcome["pid"] = connection.cursor().connection.info.backend_pid
        planned.wait(timeout=10)
        try:
            with transaction.atomic():
                Site.objects.filter(name="primary-site").update(router_port=9)
            outcome["edit"] = "saved"
        except DatabaseError as exc:
            outcome["edit"] = in_use.from_database(exc)
        finally:
            edit_done.set()
            connection.close()

    real_plan = intake.plan_request
    editor = threading.Thread(target=edit)
    editor.start()
    with mock.patch.object(intake, "plan_request", plan_then_dawdle):
        op = intake.submit("add", {"site": "remote-site", "device_description": "XRAID1"}, enqueue=False)
    editor.join(timeout=20)
    assert Grant.objects.filter(operation=op).exists()
    refusal = outcome.get("edit")
    assert isinstance(refusal, ValidationError) and "remote-site holds XRAID1" in str(refusal), outcome
    assert Site.objects.get(name="primary-site").router_port == demo["primary"].router_port


def test_an_initiator_registered_later_never_joins_a_grant_recorded_without_initiators(call, cast):
    """A grant recorded without initiators (taken by hand, or from a router, with no link yet) zoned its
    site's own initiators, whichever they were. Neither rule sees such a grant zone a new host (no grant
    or link records its initiators), so a host registered later through the API, or an initiator added
    by a bulk insert, joined the grant on the next converge: access to a host nobody granted. A grant
    zones only the initiators it was given. Failed before: the new initiators were in the desired pairs."""
    load_demo(fcip=True)
    west, device = Site.objects.get(name="west-site"), Device.objects.get(description="EAST-ARRAY1")
    Grant.objects.create(site=west, device=device, exclusive=True, initiators=[])
    added = call("root", "POST", "/api/hosts/",
                 json={"name": "west-new", "site": "west-site", "initiators": ["10:00:00:10:9b:5e:b0:77"]})
    assert added.status_code == 201, added.text
    Initiator.objects.bulk_create([Initiator(host=Host.objects.get(name="west-new"), wwn="10:00:00:10:9b:5e:b0:78")])
    zoned = {initiator for wants in desired_for().values() for want in wants.values()
             for initiator, _target in want.pairs}
    assert not zoned & {"10:00:00:10:9b:5e:b0:77", "10:00:00:10:9b:5e:b0:78"}, zoned
    assert not zoned, "a grant given no initiators zones none"


def test_a_device_held_by_several_sites_cannot_stop_being_shareable_on_any_path(call, cast):
    """A shareable device two sites hold, made not shareable, left both holding a device that allows one
    (the API answered 200; a connect refused only the sites that came later). The rule is at the models
    and in the database (migration 0007), so the API, the admin's forms and a queryset update meet it;
    with one holder left it goes through. Failed before: every path saved it."""
    load_demo(fcip=True)
    device = cast["xraid1"]
    Device.objects.filter(pk=device.pk).update(shareable=True)
    for name in ("remote-site", "east-site"):
        Grant.objects.create(device=device, site=Site.objects.get(name=name), exclusive=False)
    assert models_refuse(Device.objects.get(pk=device.pk), "shareable", False)
    assert database_refuses(Device, device.pk, shareable=False)
    refused = call("root", "PATCH", f"/api/devices/{device.pk}/", json={"shareable": False})
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "in_use" and body["errors"][0]["field"] == "shareable", body
    assert "east-site holds XRAID1, remote-site holds XRAID1" in body["detail"], body
    assert Device.objects.get(pk=device.pk).shareable
    Grant.objects.filter(site__name="east-site").delete()
    assert not models_refuse(Device.objects.get(pk=device.pk), "shareable", False)
    assert not database_refuses(Device, device.pk, shareable=False)
    answer = call("root", "PATCH", f"/api/devices/{device.pk}/", json={"shareable": False})
    assert answer.status_code == 200 and answer.json()["shareable"] is False, answer.text

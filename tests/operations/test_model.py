"""A model-based test of the engine: hypothesis picks random sequences of moves and looks for one that
breaks what the locks (today's grants) promise.

The cast: the demo registry with its FCIP pair, five sites on all four platforms (primary-site on an
McData Eclipse and remote-site on a Nishan IPS 3000 over telnet, east-site on Brocade FOS and
west-site on Cisco MDS over SSH, and north-site on a second Brocade FOS, each FCIP switch carrying
another admin's production zoning), plus RAID-R1 (remote-site's, zone 1, so two sites hold each
other's devices through the same links), WEST-ARRAY1 and WEST-ARRAY2 (west-site's, zone 4: east-site
and west-site share one FCIP link both ways, and two devices on it) and NORTH-ARRAY1 (north-site's,
zone 5: a west-site hold of it needs west-rtr's FCIP interface to peer with a second gateway). A
connect between an iFCP and an FCIP site is refused at submit, like any other plan error.

The moves: connect (with or without a lease; again, it renews), disconnect, a lease run out and expired
by the lease chore, an expiry that fails before any router step (waiting on a queued renewal past its
time limit, or on an internal error), a registry edit of a site's router port or data IP or of a zone's
number, a device made shareable or not, a rename of a router (remote-site has a spare router, first by
name), each edit through the models, the REST API or the Django admin's change form, an FCIP host or its
initiator deleted (the same three paths), a session slot taken away as stale by another process that
then logs in (each router's budget is one session), a router outage (logins refused) and its recovery,
another admin's zoning change on an FCIP switch, connects and disconnects naming hosts on the FCIP link
east-site and west-site share, the MDS switched to enhanced zoning, and a connect while another admin
holds a switch's zoning open (a FOS transaction, an MDS enhanced-mode lock) for a second. A database
restart is the soak's (`python -m bench soak --db-restarts`, on a cluster of its own): this test runs in
one transaction of the shared test database.
After every move, with every operation ended:

* each router carries exactly the links the locks need: the union of the plans of every lock,
  computed from the registry, equals what the simulator has up, and the registry's `up` links agree
  (a router that does not answer may also carry what a lapsed lease needed, which an expiry could not
  take off there: the settle does once it answers);
  each FCIP link zones exactly the union of its grants' (initiator, target) pairs;
* nothing flexzone did not create changed on the FCIP switches (zones, aliases, configurations,
  what is in force), beyond the admin's own changes;
* flexzone's sessions open on each router are within its budget, each counted in the session table;
* a device that is not shareable is held by one site at most; no link is left `configuring` on a router
  that answers (the settle chore, run after each move, finishes them);
* an edit or delete of a value live links were made with is refused (409 `in_use`), by the models, the
  API, the admin and the database (a queryset update, which skips the models) alike, and goes through
  otherwise.

`make test` runs a few short examples. More: FLEXZONE_MODEL_EXAMPLES=40 FLEXZONE_MODEL_STEPS=20. Each
run prints its seed; FLEXZONE_MODEL_SEED=N replays it (hypothesis also prints the shortest failing
sequence of moves it found).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from datetime import timedelta
from unittest import mock

import hypothesis
import pytest
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from rest_framework.test import APIClient

from access.authentication import PrincipalUser
from operations import execute, reconcile, removing, submit
from operations.budget import budget_of
from operations.chores import expire_leases, settle_stranded_links
from operations.conf import ops_settings
from operations.desired import desired_for, desired_links, registry_facts
from operations.locking import router_lock
from operations.models import Grant, Link, Operation, RouterSession
from operations.planner import PlanError, plan_connect
from operations.pool import SessionPool, pool
from operations.steps import router_target
from registry.demo import load_demo
from registry.models import Device, Host, Initiator, Router, Site, Zone
from simulators.admin import FabricAdmin, foreign_zoning
from simulators.faults import Fault
from tests.support.admin_forms import admin_change, admin_client, admin_delete, model_admin
from tests.support.registry import database_refuses
from tests.support.sims import USERNAME, wire

WIRING = {"primary-rtr": ("mcdata_eclipse", "telnet"), "remote-rtr": ("nishan_ips3000", "telnet"),
          "east-rtr": ("brocade_fos", "ssh"), "west-rtr": ("cisco_mds", "ssh"), "north-rtr": ("brocade_fos", "ssh")}
FCIP = ("east-rtr", "west-rtr", "north-rtr")
SITES = ("primary-site", "remote-site", "east-site", "west-site", "north-site")
DEVICES = ("XRAID1", "XRAID2", "XRAID3", "RAID-R1", "EAST-ARRAY1", "WEST-ARRAY1", "WEST-ARRAY2", "NORTH-ARRAY1")
LEASES = (None, None, 3600)
# The FCIP sites' hosts (a second one each, made by the fixture), and the zone-4 devices their shared link serves.
FCIP_HOSTS = {"east-site": ("east-backup", "east-archive"), "west-site": ("west-analysis", "west-batch")}
FCIP_DEVICES = ("EAST-ARRAY1", "WEST-ARRAY1", "WEST-ARRAY2")
SPARE = "aa-spare-rtr"
VIA = ("models", "api", "admin")  # the paths registry edits take: the models (full_clean, save), the API, the admin
ADMIN, ADMIN_PASSWORD = "fabric-admin", "not-flexzone"  # the other admin's own account on the FCIP switches
EXAMPLES = int(os.environ.get("FLEXZONE_MODEL_EXAMPLES", "3"))
STEPS = int(os.environ.get("FLEXZONE_MODEL_STEPS", "8"))


def up_keys(sim) -> set[tuple]:
    return {link.key for link in sim.links() if link.state == "up"}


@pytest.fixture
def model_lab(db, ops_settings, sim_factory, secrets_dir):
    # The session pool's beat is the moves' to run (`beat_once`, as its thread would): a thread's own
    # database connection cannot see the rows of the test's transaction.
    ops_settings.FLEXZONE_OPS_HEARTBEAT = 3600
    load_demo(fcip=True)
    zone1, zone4 = Device.objects.get(description="XRAID1").zone, Device.objects.get(description="EAST-ARRAY1").zone
    Device.objects.create(device_id="raid-r1", description="RAID-R1", wwn="21:00:00:e0:8b:0e:95:99", zone=zone1,
                          owner_site=Site.objects.get(name="remote-site"))
    Device.objects.create(device_id="west-array1", description="WEST-ARRAY1", wwn="50:00:09:72:08:1a:f1:44",
                          zone=zone4, owner_site=Site.objects.get(name="west-site"))
    Device.objects.create(device_id="west-array2", description="WEST-ARRAY2", wwn="50:00:09:72:08:1a:f1:45",
                          zone=zone4, owner_site=Site.objects.get(name="west-site"))
    north = Site.objects.create(name="north-site", display_name="DICE-NORTH", msan_id=5, management_ip="127.0.0.15",
                                data_ip="127.0.0.25", router_port=26)
    Router.objects.create(site=north, name="north-rtr", platform="brocade_fos", transport="ssh", host="127.0.0.15",
                          port=2327, username="admin", secret_ref="file:north-rtr")
    Device.objects.create(device_id="north-array1", description="NORTH-ARRAY1", wwn="50:00:09:72:08:1a:f1:55",
                          zone=Zone.objects.create(zone_id=5, description="North FCIP storage"), owner_site=north)
    for site, name, wwn in (("east-site", "east-archive", "10:00:00:10:9b:5e:a0:02"),
                            ("west-site", "west-batch", "10:00:00:10:9b:5e:b0:03"),
                            ("north-site", "north-ingest", "10:00:00:10:9b:5e:c5:01")):
        Initiator.objects.create(host=Host.objects.create(site=Site.objects.get(name=site), name=name), wwn=wwn)
    # Registered after remote-rtr and first by name: never the site's router (that is the first registered),
    # whatever the moves rename. No simulator answers at its address.
    Router.objects.create(site=Site.objects.get(name="remote-site"), name=SPARE, platform="nishan_ips3000",
                          transport="telnet", host="127.0.0.99", port=9, username="admin", secret_ref=f"file:{SPARE}")
    # One session each (the budget a site keeps for its people's sessions, at its smallest), so that a second
    # of flexzone's beside it is over budget.
    Router.objects.filter(name__in=WIRING).update(session_budget=1)
    sims, admins = {}, {}
    for name, (platform, transport) in WIRING.items():
        sims[name] = sim_factory(platform, accounts={ADMIN: ADMIN_PASSWORD}, **{transport: ("127.0.0.1", 0)})
        router = Router.objects.get(name=name)
        wire(router, sims[name], secrets_dir, command_timeout=5.0)
        if name in FCIP:
            admins[name] = FabricAdmin(sims[name], platform, ADMIN, ADMIN_PASSWORD)  # an account of its own
            admins[name].seed_production()
    yield sims, admins
    for admin in admins.values():
        admin.close()


class EngineModel(RuleBasedStateMachine):
    """One example: moves on the shared lab, which __init__ brings back to no lock and the values as the
    first example found them."""

    sims: dict = {}
    admins: dict = {}
    zones_made = 0  # the admins' own zones, over every example (names must stay new)
    originals: tuple = ()  # the edited values as the first example found them, which every example starts from
    tally: Counter = Counter()  # the registry edits, deletes and stale slots the moves made, by path and outcome

    def __init__(self) -> None:
        super().__init__()
        self.down: set[str] = set()
        self.enhanced = False
        if self.originals:  # names are free: the routers are found by them below
            for name, pk in self.originals[3].items():
                Router.objects.filter(pk=pk).update(name=name)
        clean_slate(self.sims, self.admins)
        self.foreign = {name: foreign_zoning(self.sims[name]) for name in FCIP}
        if not self.originals:
            EngineModel.originals = (dict(Site.objects.values_list("name", "router_port")),
                                     dict(Site.objects.values_list("name", "data_ip")),
                                     dict(Zone.objects.values_list("pk", "zone_id")),
                                     # The wired routers by their names at the start (the simulators' keys).
                                     dict(Router.objects.filter(name__in=WIRING).values_list("name", "pk")))
        self.ports, self.data_ips, self.zones, self.pks = self.originals
        restore(*self.originals[:3])  # nothing is held now: the database lets every value back

    # --- moves --------------------------------------------------------------------------------
    @rule(site=st.sampled_from(SITES), device=st.sampled_from(DEVICES), lease=st.sampled_from(LEASES))
    def connect(self, site, device, lease):
        self._run("add", {"site": site, "device_description": device, **({"duration": lease} if lease else {})})

    @rule(site=st.sampled_from(SITES), device=st.sampled_from(DEVICES))
    def disconnect(self, site, device):
        self._run("remove", {"site": site, "device_description": device})

    @rule(site=st.sampled_from(tuple(FCIP_HOSTS)), device=st.sampled_from(FCIP_DEVICES),
          hosts=st.sampled_from(((0,), (1,), (0, 1))))
    def connect_hosts_over_fcip(self, site, device, hosts):
        """east-site and west-site share one FCIP link both ways: devices and hosts join and leave it."""
        self._run("add", {"site": site, "device_description": device,
                          "hosts": [FCIP_HOSTS[site][index] for index in hosts]})

    @rule(site=st.sampled_from(tuple(FCIP_HOSTS)), device=st.sampled_from(FCIP_DEVICES))
    def disconnect_over_fcip(self, site, device):
        self._run("remove", {"site": site, "device_description": device})

    @rule(pick=st.integers(min_value=0, max_value=10))
    def expire(self, pick):
        locks = list(Grant.objects.order_by("pk"))
        if not locks:
            return
        lock = locks[pick % len(locks)]
        Grant.objects.filter(pk=lock.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        for pk in expire_leases():
            assert execute(pk).state not in ("queued", "running")
        self._settle()  # what an expiry that failed left of a lapsed lease, the settle takes off

    @rule(site=st.sampled_from(SITES), via=st.sampled_from(VIA))
    def edit_router_port(self, site, via):
        port = self.ports[site]
        self._edit_site(site, "router_port", lambda now: port + 1 if now == port else port, via)

    @rule(site=st.sampled_from(SITES), via=st.sampled_from(VIA))
    def edit_data_ip(self, site, via):
        """The site's gateway address: later links are made with the new one."""
        first, last = self.data_ips[site].rsplit(".", 1)
        self._edit_site(site, "data_ip", lambda now: f"{first}.{int(last) + 100}" if now == self.data_ips[site]
                        else self.data_ips[site], via)

    def _edit_site(self, site: str, field: str, new_value, via: str) -> None:
        """Refused (in_use) exactly while locks or live links are made with the site's values, else saved."""
        row = Site.objects.get(name=site)
        held = (Grant.objects.filter(Q(site=row) | Q(device__owner_site=row)).exists()
                or Link.active().filter(Q(site=row) | Q(device__owner_site=row) | Q(router__site=row)).exists())
        self._edit(row, field, new_value(getattr(row, field)), held=held, via=via, path=f"/api/sites/{row.pk}/")

    @rule(pick=st.integers(min_value=0, max_value=4), via=st.sampled_from(VIA))
    def edit_zone_number(self, pick, via):
        """A zone's number, which the routers carry: refused exactly while its devices are held."""
        zone = Zone.objects.get(pk=sorted(self.zones)[pick])
        devices = Device.objects.filter(zone=zone)
        held = (Grant.objects.filter(device__in=devices).exists()
                or Link.active().filter(device__in=devices).exists())
        original = self.zones[zone.pk]
        self._edit(zone, "zone_id", original + 10 if zone.zone_id == original else original, held=held, via=via,
                   path=f"/api/zones/{zone.pk}/")

    @rule(device=st.sampled_from(DEVICES), via=st.sampled_from(VIA))
    def toggle_shareable(self, device, via):
        """Several sites may hold a shareable device; it stops being shareable only while one site at most
        holds it (refused otherwise: each would keep a hold the device no longer allows)."""
        row = Device.objects.get(description=device)
        holders = ({site for site in Grant.objects.filter(device=row).values_list("site_id", flat=True)}
                   | {site for site in Link.active().filter(device=row).values_list("site_id", flat=True)})
        held = row.shareable and len(holders) > 1  # turning it off
        self._edit(row, "shareable", not row.shareable, held=held, via=via, path=f"/api/devices/{row.pk}/")

    @staticmethod
    def _edit(row, field: str, value, *, held: bool, via: str, path: str) -> None:
        """Set `field` of `row` by `via` (the models, or the REST API at `path`): refused (`in_use`) exactly
        when `held`, by the database too (a queryset update, which skips the models); else saved."""
        setattr(row, field, value)
        EngineModel.tally[f"edit via {via} {'refused' if held else 'saved'}"] += 1
        what = f"{type(row).__name__} {row.pk}'s {field}"
        assert database_refuses(type(row), row.pk, **{field: value}) == held, (what, value, held)
        if via == "api":
            return api_edit(path, {field: value}, refused=held)
        if via == "admin":
            return admin_edit(row, {field: value}, refused=held)
        try:
            row.full_clean()
        except ValidationError as exc:
            assert held == ("in_use" in {e.code for es in exc.error_dict.values() for e in es}), (what, held, exc)
            return
        assert not held, f"{what} changed to {value} while it is held"
        row.save()

    @rule(name=st.sampled_from(tuple(WIRING)), via=st.sampled_from(VIA))
    def rename_router(self, name, via):
        """Names are free: a rename never moves a site's links to another router (remote-site has a spare
        one, first by name)."""
        router = Router.objects.get(pk=self.pks[name])
        router.name = f"{name}-renamed" if router.name == name else name
        if via == "api":
            return api_edit(f"/api/routers/{router.pk}/", {"name": router.name}, refused=False)
        if via == "admin":
            return admin_edit(router, {"name": router.name}, refused=False)
        router.full_clean()
        router.save()

    @rule(site=st.sampled_from(tuple(FCIP_HOSTS)), pick=st.integers(min_value=0, max_value=1),
          what=st.sampled_from(("host", "initiator")), via=st.sampled_from(VIA),
          device=st.one_of(st.none(), st.sampled_from(FCIP_DEVICES)))
    def delete_host(self, site, pick, what, via, device):
        """An FCIP host, or its initiator, deleted (`device`: just after a connect of it to that device):
        refused (in_use) exactly while a grant or a live link of its site zones initiators of its, by every
        path (the models' delete, the API, the admin's delete page); once deleted, it is registered again,
        and joins no grant it was not given."""
        if device is not None:
            self._run("add", {"site": site, "device_description": device, "hosts": [FCIP_HOSTS[site][pick]]})
        host = Host.objects.get(site__name=site, name=FCIP_HOSTS[site][pick])
        wwns = sorted(host.initiators.values_list("wwn", flat=True))
        zoned = {initiator for wants in desired_links(*registry_facts()).values() for want in wants.values()
                 for initiator, _target in want.pairs}
        held = bool(zoned & set(wwns)) or Link.active().filter(site=host.site).exclude(initiators=[]).exists()
        row = host if what == "host" else host.initiators.order_by("pk").first()
        if via == "api" and what == "initiator":
            via = "models"  # the API edits a host's initiators as a list (an edit, made by the edit moves)
        if via == "api":
            answer = api_client().delete(f"/api/hosts/{host.pk}/")
            assert answer.status_code == (409 if held else 204), (site, held, answer.status_code, answer.content)
        elif via == "admin":
            with admin_client() as client:
                admin_delete(client, f"/admin/registry/{what}/{row.pk}/delete/")
        else:
            try:
                row.delete()
            except ValidationError as exc:
                assert held and " holds " in str(exc), (site, what, exc)
        gone = not type(row).objects.filter(pk=row.pk).exists()
        assert gone != held, f"{site}'s {what} {row}: deleted {gone}, while held {held}"
        EngineModel.tally[f"delete via {via} {'done' if gone else 'refused'}"] += 1
        if gone:  # registered again, as a person would after removing it by mistake
            again = Host.objects.get_or_create(site=host.site, name=host.name)[0]
            for wwn in set(wwns) - set(Initiator.objects.filter(wwn__in=wwns).values_list("wwn", flat=True)):
                Initiator.objects.create(host=again, wwn=wwn)

    @rule(name=st.sampled_from(tuple(WIRING)))
    def slot_taken_as_stale(self, name):
        """This process stalls past FLEXZONE_OPS_STALE_AFTER, its session to the router idle in its pool:
        another process takes the slot away as stale, logs in and works there. This process's next beat
        logs its idle session out (one in use would claim again before it is used), so that the router is
        back within its budget of flexzone's sessions (one, here) at once."""
        if name in self.down:
            return
        router = Router.objects.get(pk=self.pks[name])
        assert reconcile(router=router.name).state == "succeeded"  # a report: its session stays in the pool, idle
        assert list(self.sims[name].logged_in.values()).count(USERNAME) == 1
        pool.beat_once()  # a beat has seen the slot's row
        stale = timezone.now() - timedelta(seconds=ops_settings().stale_after + 1)
        RouterSession.objects.filter(router=router).update(heartbeat_at=stale)
        other = SessionPool()
        try:
            with router_lock(router.pk, 10), other.session(router.pk, router_target(router), lambda _driver: None,
                                                           session_budget=budget_of(router)) as lease:
                lease.driver.list_links()
            pool.beat_once()  # this process's next beat
            self.sessions_within_budget()
            assert RouterSession.objects.filter(router=router, holder=pool.holder).count() == 0
            EngineModel.tally["session slot taken as stale"] += 1
        finally:
            other.close_all()

    @rule(pick=st.integers(min_value=0, max_value=10))
    def expiry_during_a_queued_renewal(self, pick):
        """A lease runs out while a renewal of it is queued and not yet run: the sweep asks no expiry of it
        (before, one was asked, waited for the renewal until its time limit and failed, and the lease became
        permanent). The sweep never edits the lease; then the renewal runs. Other leases' expiries, failed
        in an outage, may be asked again meanwhile, with a time limit too short for them to wait."""
        locks = list(Grant.objects.select_related("site", "device").order_by("pk"))
        if not locks:
            return
        lock = locks[pick % len(locks)]
        try:
            renewal = submit("add", {"site": lock.site.name, "device_description": lock.device.description,
                                     "duration": 3600})
        except PlanError:
            return
        Grant.objects.filter(pk=lock.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        with override_settings(FLEXZONE_OPS_TOTAL_TIMEOUT=0.5):
            for pk in expire_leases():  # other leases may be due too (an expiry that failed in an outage)
                op = execute(pk)
                assert op.request.get("grant") != lock.pk, "an expiry was asked while a renewal of it was queued"
                assert op.state not in ("queued", "running")
        assert Grant.objects.get(pk=lock.pk).expires_at is not None, "the sweep edited the lease"
        assert execute(renewal.pk).state not in ("queued", "running")
        self._settle()

    @rule(pick=st.integers(min_value=0, max_value=10))
    def expiry_with_an_internal_error(self, pick):
        """A lease runs out and its expiry fails on an internal error before any router step (a bug, a
        lost database connection): the lease is not made longer; the settle takes its links off."""
        locks = list(Grant.objects.order_by("pk"))
        if not locks:
            return
        lock = locks[pick % len(locks)]
        Grant.objects.filter(pk=lock.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

        def broken(*args, **kwargs):
            raise RuntimeError("an internal error before any router step")

        with mock.patch.object(removing, "logins_possible", broken):
            for pk in expire_leases():
                assert execute(pk).state == "failed"
        assert Grant.objects.get(pk=lock.pk).expires_at <= timezone.now(), "the lease was made longer"
        self._settle()

    @rule(name=st.sampled_from(tuple(WIRING)))
    def outage(self, name):
        self.sims[name].faults = [Fault("refuse_login")]
        pool.close_all()  # the next operation must log in again
        self.down.add(name)

    @precondition(lambda self: self.down)
    @rule(pick=st.integers(min_value=0, max_value=3))
    def recover(self, pick):
        name = sorted(self.down)[pick % len(self.down)]
        self.sims[name].faults = []
        self.down.discard(name)
        self._settle()

    @rule(name=st.sampled_from(FCIP))
    def admin_changes_zoning(self, name):
        """Another admin adds a production zone of their own and puts it in force."""
        admin = self.admins[name]
        EngineModel.zones_made += 1
        made = self.zones_made
        zone, members = f"adm_z{made}", f"10:00:00:90:fa:c7:{made // 256:02x}:{made % 256:02x}"
        if WIRING[name][0] == "brocade_fos":
            assert admin.fos(f'zonecreate "{zone}", "{members}"') == ""
            assert admin.fos(f'cfgadd "PROD", "{zone}"') == ""
            assert "is in effect" in admin.fos_confirmed('cfgenable "PROD"')
        else:
            admin.conn.send_config_set([f"zone name {zone} vsan 1", f"member pwwn {members}",
                                        "zoneset name PROD vsan 1", f"member {zone}",
                                        "zoneset activate name PROD vsan 1",
                                        *(["zone commit vsan 1"] if self.enhanced else [])])
        self.foreign[name] = foreign_zoning(self.sims[name])

    @rule()
    def mds_goes_enhanced(self):
        """The MDS admin switches vsan 1 to enhanced zoning (its zone session lock, commits)."""
        if not self.enhanced:
            self.admins["west-rtr"].enhanced_mode()
            self.enhanced = True
            self.foreign["west-rtr"] = foreign_zoning(self.sims["west-rtr"])

    @rule(name=st.sampled_from(FCIP), site=st.sampled_from(SITES), device=st.sampled_from(DEVICES))
    def connect_while_an_admin_holds_the_zoning(self, name, site, device):
        """Another admin has a zoning edit open (FOS transaction, MDS enhanced-mode lock) for a second:
        flexzone waits for it and never breaks it; the admin then drops the edit."""
        admin = self.admins[name]
        if WIRING[name][0] == "cisco_mds" and not self.enhanced:
            return self.connect(site, device, None)  # basic mode has no lock to hold
        admin.start_edit()
        release = threading.Timer(1.0, admin.abandon_edit)
        release.start()
        try:
            self.connect(site, device, None)
        finally:
            release.join()

    def _run(self, kind: str, request: dict) -> None:
        try:
            op = submit(kind, request)
        except PlanError:
            return  # refused at submit: nothing was recorded
        assert execute(op.pk).state not in ("queued", "running")
        self._settle()

    def _settle(self) -> None:
        """What the settle chore does every round, for the routers that answer."""
        names = dict(Router.objects.values_list("pk", "name"))
        for pk in settle_stranded_links([names[self.pks[name]] for name in WIRING if name not in self.down]):
            execute(pk)

    # --- what must hold after every move ------------------------------------------------------
    @invariant()
    def routers_carry_exactly_what_the_locks_need(self):
        # Two answers to "what must each router carry", which must agree: the pure function of the
        # grants (operations.desired) and the plan a connect of each grant would make.
        desired = {router: set(wants) for router, wants in desired_for().items()}
        planned: dict[int, set[tuple]] = {}
        in_force = Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())  # a lapsed lease needs nothing
        for lock in Grant.objects.filter(in_force).select_related("site", "device"):
            plan = plan_connect(site=lock.site.name, device_description=lock.device.description)
            for step in plan.steps:
                planned.setdefault(step.router_id, set()).add((step.port, step.zone, step.remote_ip))
        assert {r: keys for r, keys in desired.items() if keys} == planned
        assert {r for r, keys in desired.items() if keys} <= set(self.pks.values()), "a link on the spare router"
        # A router that does not answer may still carry what a lapsed lease needed (its expiry could not
        # take it off there): the settle does, once it answers (`recover`).
        lapsed = desired_links(*registry_facts())  # every grant, whatever its lease
        for name, pk in self.pks.items():
            router = Router.objects.get(pk=pk)
            actual, needed = up_keys(self.sims[name]), set(desired.get(router.pk, set()))
            if name in self.down:
                assert needed <= actual <= needed | set(lapsed.get(router.pk, {})), f"{router.name} (down): {actual}"
            else:
                assert actual == needed, f"{router.name}: up {actual}, grants need {desired}"
            recorded = {(link.port, link.zone.zone_id, link.remote_ip)
                        for link in Link.objects.filter(router=router, state="up").select_related("zone")}
            assert recorded == actual, f"{router.name}: registry up {recorded}, router {actual}"
        # An FCIP link zones exactly the union of its grants' (initiator, target) pairs.
        for name in FCIP:
            router = Router.objects.get(pk=self.pks[name])
            zoned = {link.key: set(link.pairs) for link in self.sims[name].links() if link.state == "up"}
            needed = {key: want.pairs for key, want in desired_for([router.pk]).get(router.pk, {}).items()}
            if name in self.down:
                could = {key: want.pairs for key, want in lapsed.get(router.pk, {}).items()}
                assert all(pairs <= zoned.get(key, set()) for key, pairs in needed.items()), (name, zoned, needed)
                assert all(pairs <= could.get(key, set()) for key, pairs in zoned.items()), (name, zoned, could)
                continue
            assert zoned == needed, f"{name}: zones {zoned}, grants need {needed}"

    @invariant()
    def nothing_flexzone_did_not_create_changed(self):
        for name in FCIP:
            assert foreign_zoning(self.sims[name]) == self.foreign[name], name

    @invariant()
    def sessions_within_budget(self):
        """Flexzone's sessions open on each router (the other admin logs in with an account of its own)
        are within the router's budget, and each is counted in the session table."""
        for name, sim in self.sims.items():
            router = Router.objects.get(pk=self.pks[name])
            deadline = time.monotonic() + 2  # a logout reaches the simulator a moment later
            while (open_now := list(sim.logged_in.values()).count(USERNAME)) > budget_of(router) and (
                    time.monotonic() < deadline):
                time.sleep(0.02)
            assert open_now <= budget_of(router), f"{name}: {open_now} sessions open, budget {budget_of(router)}"
            assert RouterSession.objects.filter(router=router).count() <= budget_of(router), name

    @invariant()
    def locks_and_links_are_settled(self):
        assert not Operation.objects.filter(state__in=("queued", "running")).exists()
        # A record left mid-change on a router that does not answer waits for the settle chore.
        down = [self.pks[name] for name in self.down]
        assert not Link.objects.filter(state="configuring").exclude(router__pk__in=down).exists()
        for device in Device.objects.filter(shareable=False):
            assert Grant.objects.filter(device=device).count() <= 1, device.description

def api_client() -> APIClient:
    """The API's views, serializers and error handler, as an admin (in this process, so in the test's
    transaction; the mTLS that names the admin is tested on its own)."""
    client = APIClient()
    client.force_authenticate(PrincipalUser(model_admin()))
    return client


def api_edit(path: str, change: dict, *, refused: bool) -> None:
    """A PATCH through the API: a 409 `in_use` naming the field exactly when `refused`, else a 200 that
    saved it."""
    answer = api_client().patch(path, change, format="json")
    if refused:
        assert answer.status_code == 409, (path, change, answer.status_code, answer.content)
        body = answer.json()
        assert body["code"] == "in_use" and body["errors"][0]["field"] in change, (path, body)
    else:
        assert answer.status_code == 200, (path, change, answer.status_code, answer.content)
        assert all(answer.json()[field] == value for field, value in change.items()), answer.json()


def admin_edit(row, change: dict, *, refused: bool) -> None:
    """The change through the Django admin's change form (its inlines posted back as they were): the
    value kept, with the in_use refusal on the page, exactly when `refused`; else saved."""
    model = type(row)
    with admin_client() as client:
        answer = admin_change(client, f"/admin/registry/{model._meta.model_name}/{row.pk}/change/", change)
        now = model.objects.filter(pk=row.pk).values(*change).get()
        if refused:
            shown = answer if answer.status_code == 200 else client.get(answer["Location"])  # a refused save's message
            page = shown.content.decode()
            assert now != change and " holds " in page, (model.__name__, row.pk, change, answer.status_code)
        else:
            assert answer.status_code == 302 and now == change, (model.__name__, row.pk, change, answer.status_code,
                                                                 now, answer.content[:2000])


def restore(ports: dict, data_ips: dict, zones: dict) -> None:
    """The values the moves edit, as they were."""
    for site, port in ports.items():
        Site.objects.filter(name=site).update(router_port=port, data_ip=data_ips[site])
    for pk, zone_id in sorted(zones.items(), key=lambda item: -item[1]):  # no two alike meanwhile
        Zone.objects.filter(pk=pk).update(zone_id=zone_id)
    Device.objects.update(shareable=False)


def clean_slate(sims: dict, admins: dict) -> None:
    """No fault, no lock, no link, basic zoning mode on the MDS, and nothing of flexzone's on any
    router (whatever an earlier example, failed or shrunk, left), so that every example starts alike."""
    for sim in sims.values():
        sim.faults = []
    if sims["west-rtr"].state().running["zone_modes"].get("1") == "enhanced":
        admins["west-rtr"].conn.send_config_set(["no zone mode enhanced vsan 1"])
    for lock in list(Grant.objects.select_related("site", "device")):
        execute(submit("remove", {"site": lock.site.name, "device_description": lock.device.description}).pk)
    Grant.objects.all().delete()
    Link.objects.all().delete()
    for name in WIRING:
        assert reconcile(repair=True, router=name).state == "succeeded"
    assert all(not up_keys(sim) for sim in sims.values())


@pytest.mark.slow
@pytest.mark.django_db
def test_random_moves_never_break_what_the_locks_promise(model_lab, capsys):
    EngineModel.sims, EngineModel.admins = model_lab
    EngineModel.originals, EngineModel.tally = (), Counter()
    seed = int(os.environ.get("FLEXZONE_MODEL_SEED", random.randrange(2**32)))
    with capsys.disabled():
        print(f"\nmodel seed {seed} (FLEXZONE_MODEL_SEED={seed} replays it)")
    factory = hypothesis.seed(seed)(lambda: EngineModel())
    try:
        run_state_machine_as_test(factory, settings=settings(
            max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, database=None,
            suppress_health_check=list(HealthCheck)))
    except AssertionError as exc:
        raise AssertionError(f"model seed {seed}: {exc}") from exc
    outcomes = Counter(f"{kind} {state}" for kind, state in Operation.objects.values_list("kind", "state"))
    shared = {what: Operation.objects.filter(transcript__contains=text).count()
              for what, text in (("extended", "extended in place"), ("shrunk", "its zoning shrinks"))}
    with capsys.disabled():
        print(f"model seed {seed}: operations {dict(sorted(outcomes.items()))}; shared FCIP links {shared}; "
              f"registry and sessions {dict(sorted(EngineModel.tally.items()))}")


# --- what the model found, as plain tests ---------------------------------------------------------


@pytest.mark.django_db
def test_a_connect_needing_an_fcip_port_that_peers_elsewhere_is_refused_at_submit(model_lab):
    # west-rtr's fcip25 peers with east-site once west-site holds EAST-ARRAY1; NORTH-ARRAY1 (north-site's)
    # would need the same interface to peer with north-site's gateway too.
    assert execute(submit("add", {"site": "west-site", "device_description": "EAST-ARRAY1"}).pk).state == "succeeded"
    with pytest.raises(PlanError, match="west-rtr.*already carries a link to 127.0.0.23"):
        submit("add", {"site": "west-site", "device_description": "NORTH-ARRAY1"})


@pytest.mark.django_db
def test_two_queued_connects_on_one_fcip_port_leave_the_second_rolled_back_and_nothing_configuring(model_lab):
    # Both planned before either ran (seed 3116319813 of the model found the second left `configuring`:
    # its rollback took the first link's zones on the same port for its own remnants).
    sims, _admins = model_lab
    first = submit("add", {"site": "west-site", "device_description": "EAST-ARRAY1"})
    second = submit("add", {"site": "west-site", "device_description": "NORTH-ARRAY1"})
    assert execute(first.pk).state == "succeeded"
    op = execute(second.pk)
    assert op.state == "rolled_back", (op.state, op.error)
    assert "already peers with 127.0.0.23" in op.error
    assert not Link.objects.filter(state="configuring").exists()
    assert not up_keys(sims["north-rtr"])
    assert up_keys(sims["west-rtr"]) == {(25, 4, "127.0.0.23")}
    assert list(Grant.objects.values_list("site__name", "device__description")) == [("west-site", "EAST-ARRAY1")]


@pytest.mark.django_db
def test_an_expiry_that_fails_on_a_router_that_is_down_is_finished_by_the_settle_once_it_answers(model_lab):
    # A lease runs out while west-rtr refuses logins: east-rtr's half comes off, west-rtr's cannot and
    # stays until the router answers again; no path puts east's half back (the lease is over). Once
    # west-rtr answers, the settle takes its half off and the grant goes.
    sims, _admins = model_lab
    assert execute(submit("add", {"site": "west-site", "device_description": "EAST-ARRAY1", "duration": 3600}
                          ).pk).state == "succeeded"
    key = (25, 4, "127.0.0.23")
    assert up_keys(sims["west-rtr"]) == {key}
    sims["west-rtr"].faults = [Fault("refuse_login")]
    pool.close_all()
    Grant.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    [expiry] = expire_leases()
    assert execute(expiry).state == "failed"
    assert not up_keys(sims["east-rtr"]) and up_keys(sims["west-rtr"]) == {key}
    assert settle_stranded_links(["east-rtr"]) == []  # nothing of it is left there
    sims["west-rtr"].faults = []
    settles = settle_stranded_links(["west-rtr"])
    assert [execute(pk).state for pk in settles] == ["succeeded"]
    assert not up_keys(sims["west-rtr"]) and not up_keys(sims["east-rtr"])
    assert not Grant.objects.exists() and not Link.active().exists()


@pytest.mark.django_db
def test_a_renewal_that_fails_leaves_the_lease_as_it_was(model_lab):
    # Seed 1095833162 of the model found it: the run of a connect moved the expiry of a grant the site
    # already held before any router step, so a renewal that then failed (its router down) lengthened the
    # lease all the same, and made a lapsed grant one in force whose path the failure had taken down.
    sims, _admins = model_lab
    first = {"site": "west-site", "device_description": "EAST-ARRAY1", "duration": 60, "hosts": ["west-analysis"]}
    assert execute(submit("add", first).pk).state == "succeeded"
    lease = Grant.objects.get().expires_at
    sims["east-rtr"].faults = [Fault("refuse_login")]
    pool.close_all()
    # Naming another host, the renewal must extend the link's zoning on both switches: east-rtr refuses.
    renewal = execute(submit("add", {**first, "duration": 3600, "hosts": list(FCIP_HOSTS["west-site"])}).pk)
    assert renewal.state in ("failed", "rolled_back"), renewal.state
    assert Grant.objects.get().expires_at == lease, "a renewal that failed moved the lease"
    sims["east-rtr"].faults = []
    renewed = execute(submit("add", {**first, "duration": 3600, "hosts": list(FCIP_HOSTS["west-site"])}).pk)
    assert renewed.state == "succeeded", renewed.error
    assert Grant.objects.get().expires_at > lease + timedelta(minutes=50)

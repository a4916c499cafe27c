"""Operations on FCIP routers (a Brocade FOS switch and a Cisco MDS) whose fabrics carry production zoning.

The demo registry's two sites are rewired: primary-rtr becomes a FOS simulator (VE port 24), remote-rtr an
MDS simulator (fcip 25), both over real SSH, each with PROD set up first by another administrator's
session. Every operation must leave PROD in force and registry and routers in agreement.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest
from django.core.exceptions import ValidationError

from operations import execute, reconcile, submit
from operations.chores import settle_stranded_links
from operations.delta import with_delta
from operations.models import Grant, Link, ZoningLock
from operations.planner import plan_connect, plan_disconnect
from operations.pool import pool
from registry.models import Device, Host, Initiator, Site, Zone
from simulators.admin import FabricAdmin, production_in_force, zones_in_force
from simulators.faults import Fault
from tests.support.registry import behind_the_rules
from tests.support.sims import wire

CONNECT = {"site": "remote-site", "device_description": "XRAID1"}
XRAID1 = "20:00:00:04:53:00:01:a0"


@dataclass
class FcipLab:
    sims: dict
    admins: dict
    routers: dict

    def production_everywhere(self) -> bool:
        return all(production_in_force(self.sims[name], platform) for name, platform in PLATFORMS.items())

    def flexzone_zones(self, name: str) -> dict[str, list[str]]:
        return {zone: members for zone, members in zones_in_force(self.sims[name], PLATFORMS[name]).items()
                if zone.startswith("fz_")}


PLATFORMS = {"primary-rtr": "brocade_fos", "remote-rtr": "cisco_mds"}


def router_keys(sim):
    return {link.key for link in sim.links() if link.state == "up"}


def registry_keys(router):
    return {(link.port, link.zone.zone_id, link.remote_ip) for link in Link.objects.filter(router=router, state="up")}


def assert_agreement(lab: FcipLab) -> None:
    for name, router in lab.routers.items():
        assert registry_keys(router) == router_keys(lab.sims[name]), name


@pytest.fixture
def fcip_lab(demo, ops_settings, sim_factory, secrets_dir):
    Site.objects.filter(name="primary-site").update(router_port=24)
    Site.objects.filter(name="remote-site").update(router_port=25)
    sims, admins, routers = {}, {}, {}
    for key, platform in PLATFORMS.items():
        router = demo["primary_rtr"] if key == "primary-rtr" else demo["remote_rtr"]
        sims[key] = sim_factory(platform, ssh=("127.0.0.1", 0))
        wire(router, sims[key], secrets_dir, command_timeout=5.0)
        admins[key] = FabricAdmin(sims[key], platform)
        admins[key].seed_production()
        routers[key] = router
    yield FcipLab(sims, admins, routers)
    for admin in admins.values():
        admin.close()


@pytest.mark.django_db
def test_connect_zones_the_sites_initiators_with_the_device_and_keeps_production(fcip_lab):
    op = execute(submit("add", CONNECT).pk)
    assert op.state == "succeeded", op.error
    initiators = sorted(Initiator.objects.filter(host__site__name="remote-site").values_list("wwn", flat=True))
    for name in PLATFORMS:
        members = sorted(tuple(sorted(m)) for m in fcip_lab.flexzone_zones(name).values())  # as the switch orders
        assert members == sorted(tuple(sorted((i, XRAID1))) for i in initiators), name
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)
    assert {tuple(link.initiators) for link in Link.objects.filter(state="up")} == {tuple(initiators)}
    op = execute(submit("remove", CONNECT).pk)
    assert op.state == "succeeded", op.error
    assert fcip_lab.production_everywhere()
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert_agreement(fcip_lab)
    assert not Grant.objects.exists()


@pytest.mark.django_db
def test_a_connect_waits_for_another_admins_open_edit_and_succeeds_once_it_is_released(fcip_lab):
    admin = fcip_lab.admins["primary-rtr"]
    admin.start_edit()
    release = threading.Timer(1.5, admin.abandon_edit)
    release.start()
    started = time.monotonic()
    try:
        op = execute(submit("add", CONNECT).pk)
    finally:
        release.join()
    assert op.state == "succeeded", op.error
    assert time.monotonic() - started >= 1.5
    assert "another session holds the fabric's zoning transaction" in op.transcript
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)


@pytest.mark.django_db
def test_a_connect_blocked_until_its_time_limit_fails_with_nothing_half_applied(fcip_lab, settings):
    settings.FLEXZONE_OPS_TOTAL_TIMEOUT = 3.0
    fcip_lab.admins["remote-rtr"].enhanced_mode()
    fcip_lab.admins["remote-rtr"].start_edit()  # the MDS admin holds the enhanced-mode lock and goes home
    op = execute(submit("add", CONNECT).pk)
    assert op.state == "rolled_back", (op.state, op.error)
    assert "time limit" in op.error and "remote-rtr" in op.error
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert fcip_lab.sims["primary-rtr"].state().running["tunnels"] == {}
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)
    assert not Grant.objects.exists()
    assert set(Link.objects.values_list("state", flat=True)) == {"failed"}


@pytest.mark.django_db
def test_a_zoning_lock_a_dead_worker_of_flexzones_left_is_freed_by_the_next_session(fcip_lab):
    # Found by the soak (seed 644392951): a worker SIGKILLed in the middle of an MDS zoning change left
    # flexzone's account holding the enhanced-mode lock, which NX-OS keeps until it is committed or
    # discarded. Only the dead process knew it was flexzone's, so every later change waited for a person.
    # Its record (written before its session sent what took the lock) is what any process reads now.
    dead = fcip_lab.admins["remote-rtr"]  # a session with flexzone's own account, as the worker's was
    dead.enhanced_mode()
    dead.start_edit()
    dead.close()  # the worker dies; the lock stays on the switch
    fcip_lab.admins["remote-rtr"] = FabricAdmin(fcip_lab.sims["remote-rtr"], "cisco_mds")
    ZoningLock.objects.create(router=fcip_lab.routers["remote-rtr"], vsan=1)
    op = execute(submit("add", CONNECT).pk)
    assert op.state == "succeeded", op.error
    assert "freed the zoning lock of vsan 1 that a session of flexzone's left behind" in op.transcript
    assert not ZoningLock.objects.exists()  # freed, then its own lock committed: nothing left recorded
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)


@pytest.mark.django_db
def test_a_refused_step_rolls_the_other_router_back_and_production_stays(fcip_lab):
    fcip_lab.admins["remote-rtr"].stage_change()  # PROD on the MDS holds someone's staged changes
    op = execute(submit("add", CONNECT).pk)
    assert op.state == "rolled_back", (op.state, op.error)
    assert "staged" in op.error
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)


@pytest.mark.django_db
def test_reconcile_reports_and_repairs_changed_zone_members_without_touching_production(fcip_lab):
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    [zone] = fcip_lab.flexzone_zones("primary-rtr")
    admin = fcip_lab.admins["primary-rtr"]
    admin.fos(f'zoneadd "{zone}", "10:00:00:90:fa:c7:43:22"')  # someone adds a stranger to our zone
    admin.fos_confirmed('cfgenable "PROD"')
    report = reconcile().result["routers"]["primary-rtr"]
    assert [(d["port"], d["zone"], d["router"]) for d in report["mismatched"]] == [(24, 1, "down")]
    assert report["extra"] == [] and report["repaired"] == []
    op = reconcile(repair=True)
    assert op.state == "succeeded", op.error
    assert op.result["routers"]["primary-rtr"]["converged"] is True
    assert {name: sorted(m) for name, m in fcip_lab.flexzone_zones("primary-rtr").items()} == {
        zone: sorted([fcip_lab_initiator(), XRAID1])}
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)


def fcip_lab_initiator() -> str:
    return Initiator.objects.get(host__site__name="remote-site").wwn


@pytest.mark.django_db
def test_reconcile_repair_removes_flexzone_leftovers_and_nothing_else(fcip_lab):
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    Link.objects.update(state="down")  # the registry forgot the link and the grant: the switch's zones
    Grant.objects.all().delete()  # are extras now
    report = reconcile(repair=True).result["routers"]
    assert [d["action"] for d in report["primary-rtr"]["repaired"]] == ["removed from router"]
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert fcip_lab.production_everywhere()
    for name, platform in PLATFORMS.items():
        zones = zones_in_force(fcip_lab.sims[name], platform)
        assert list(zones) == ["prod_oradb1_vmax"], name


@pytest.mark.django_db
def test_the_first_link_on_an_empty_fabric_journals_a_warning(demo, ops_settings, sim_factory, secrets_dir):
    Site.objects.filter(name__in=["primary-site", "remote-site"]).update(router_port=24)
    for router in (demo["primary_rtr"], demo["remote_rtr"]):
        wire(router, sim_factory("brocade_fos", ssh=("127.0.0.1", 0)), secrets_dir, command_timeout=5.0)
    op = execute(submit("add", CONNECT).pk)
    assert op.state == "succeeded", op.error
    assert len(op.result["warnings"]) == 2
    assert all("created and enabled fz_cfg" in warning for warning in op.result["warnings"])
    assert "# warning: primary-rtr: no zoning configuration was in effect" in op.transcript


def second_host(wwn: str = "21:00:00:e0:8b:10:3a:77") -> None:
    host = Host.objects.create(site=Site.objects.get(name="remote-site"), name="backup-server")
    Initiator.objects.create(host=host, wwn=wwn)


def pairs_in_force(lab: FcipLab, name: str) -> set[tuple[str, ...]]:
    """flexzone's zones in force on a switch, each as its sorted members."""
    return {tuple(sorted(members)) for members in lab.flexzone_zones(name).values()}


def pairs_of(*pairs: tuple[str, str]) -> set[tuple[str, ...]]:
    return {tuple(sorted(pair)) for pair in pairs}


BACKUP = "21:00:00:e0:8b:10:3a:77"
XRAID4 = "20:00:00:04:53:00:01:a4"


def xraid4() -> Device:
    xraid1 = Device.objects.get(description="XRAID1")
    return Device.objects.create(device_id="xraid4", description="XRAID4", wwn=XRAID4, zone=xraid1.zone,
                                 owner_site=xraid1.owner_site)


@pytest.mark.django_db
def test_more_hosts_on_an_up_fcip_link_extend_its_zoning_in_place(fcip_lab):
    # Failed before: the second connect was refused ("flexzone does not extend an FCIP link's zoning").
    second_host(BACKUP)
    first = execute(submit("add", {**CONNECT, "hosts": ["management-server"]}).pk)
    assert first.state == "succeeded", first.error
    management = Initiator.objects.get(host__name="management-server").wwn
    dry = with_delta(plan_connect(**CONNECT, hosts=["backup-server"]))
    assert [step.delta for step in dry.steps] == ["extend", "extend"] and all(step.commands for step in dry.steps)
    again = execute(submit("add", {**CONNECT, "hosts": ["backup-server"]}).pk)
    assert again.state == "succeeded", again.error
    assert "extended in place" in again.transcript
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == pairs_of((management, XRAID1), (BACKUP, XRAID1)), name
    assert {tuple(link.initiators) for link in Link.objects.filter(state="up")} == {tuple(sorted([management, BACKUP]))}
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)
    assert reconcile_clean()
    # Asking again for hosts the link already zones touches no router, as the dry run says.
    dry = with_delta(plan_connect(**CONNECT, hosts=["backup-server"]))
    assert [(step.delta, step.commands) for step in dry.steps] == [("shared", []), ("shared", [])]
    sent = {name: len(fcip_lab.sims[name].transcript()) for name in PLATFORMS}
    assert execute(submit("add", {**CONNECT, "hosts": ["backup-server"]}).pk).state == "succeeded"
    assert {name: len(fcip_lab.sims[name].transcript()) for name in PLATFORMS} == sent
    assert execute(submit("remove", CONNECT).pk).state == "succeeded"
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert fcip_lab.production_everywhere()


@pytest.mark.django_db
def test_a_second_device_shares_the_up_fcip_link_and_each_disconnect_shrinks_it(fcip_lab):
    # Failed before: the second device was refused ("flexzone does not share an FCIP link between devices").
    xraid4()
    initiator = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    second = execute(submit("add", {"site": "remote-site", "device_description": "XRAID4"}).pk)
    assert second.state == "succeeded", second.error
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == pairs_of((initiator, XRAID1), (initiator, XRAID4)), name
    assert set(Grant.objects.values_list("device__description", flat=True)) == {"XRAID1", "XRAID4"}
    assert_agreement(fcip_lab)
    assert reconcile_clean()
    # Ending the first grant shrinks the links to the second's pairs; the tunnels stay.
    dry = with_delta(plan_disconnect(**CONNECT))
    assert [step.delta for step in dry.steps] == ["shrink", "shrink"]
    assert all("kept for remote-site's hold of XRAID4" in step.notes[-1] for step in dry.steps)
    assert execute(submit("remove", CONNECT).pk).state == "succeeded"
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == pairs_of((initiator, XRAID4)), name
    assert fcip_lab.sims["primary-rtr"].state().running["tunnels"] != {}
    assert set(Link.objects.filter(state="up").values_list("device__description", flat=True)) == {"XRAID4"}
    assert set(Grant.objects.values_list("device__description", flat=True)) == {"XRAID4"}
    assert_agreement(fcip_lab)
    assert reconcile_clean()
    # The tunnel goes with the last grant.
    assert execute(submit("remove", {"site": "remote-site", "device_description": "XRAID4"}).pk).state == "succeeded"
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert fcip_lab.sims["primary-rtr"].state().running["tunnels"] == {}
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)
    assert not Grant.objects.exists()


@pytest.mark.django_db
def test_a_zone_connect_zones_every_device_of_the_zone_on_one_fcip_link(fcip_lab):
    # Failed before: refused at plan ("an FCIP link zones one device").
    xraid4()
    zone = Device.objects.get(description="XRAID1").zone.zone_id
    op = execute(submit("add", {"site": "remote-site", "zone": zone}).pk)
    assert op.state == "succeeded", op.error
    initiator = fcip_lab_initiator()
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == pairs_of((initiator, XRAID1), (initiator, XRAID4)), name
    assert_agreement(fcip_lab)
    assert reconcile_clean()
    assert execute(submit("remove", {"site": "remote-site", "zone": zone}).pk).state == "succeeded"
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert not Grant.objects.exists()
    assert fcip_lab.production_everywhere()


@pytest.mark.django_db
def test_an_extension_that_fails_on_the_far_router_shrinks_back_and_the_first_grant_keeps_its_path(fcip_lab):
    xraid4()
    initiator = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    before = {name: fcip_lab.flexzone_zones(name) for name in PLATFORMS}
    # Someone's staged change on the MDS refuses its step: the FOS side is extended first, then shrunk back.
    fcip_lab.admins["remote-rtr"].stage_change()
    second = execute(submit("add", {"site": "remote-site", "device_description": "XRAID4"}).pk)
    assert second.state == "rolled_back", (second.state, second.error)
    assert "staged" in second.error and "extended in place" in second.transcript
    assert {name: fcip_lab.flexzone_zones(name) for name in PLATFORMS} == before
    assert pairs_in_force(fcip_lab, "primary-rtr") == pairs_of((initiator, XRAID1))
    assert set(Grant.objects.values_list("device__description", flat=True)) == {"XRAID1"}
    assert set(Link.objects.filter(state="up").values_list("device__description", flat=True)) == {"XRAID1"}
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)
    assert reconcile_clean()


@pytest.mark.django_db
def test_two_sites_holding_each_others_devices_share_the_fcip_links_and_each_keeps_its_path(fcip_lab):
    # remote-site holds XRAID1 (primary-site's, zone 1); primary-site holds RAID-R1 (remote-site's,
    # zone 1): one link on each switch serves both grants, its zones the union of their pairs.
    # Failed before: primary-site's connect was refused (the link was made for XRAID1).
    raid_r1 = Device.objects.create(device_id="raid-r1", description="RAID-R1", wwn="21:00:00:e0:8b:0e:95:99",
                                    zone=Device.objects.get(description="XRAID1").zone,
                                    owner_site=Site.objects.get(name="remote-site"))
    segment = sorted(Initiator.objects.filter(host__name="segment-server").values_list("wwn", flat=True))
    management = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    other = {"site": "primary-site", "device_description": "RAID-R1"}
    op = execute(submit("add", other).pk)
    assert op.state == "succeeded", op.error
    both = pairs_of((management, XRAID1), *((i, raid_r1.wwn) for i in segment))
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == both, name
    assert reconcile_clean()
    # primary-site's initiators are zoned through a link recorded under remote-site's hold: an edit of
    # them would leave the switch zoning the old ones, so it is refused while the grant lasts.
    host = Host.objects.get(name="segment-server")
    with pytest.raises(ValidationError) as refused:
        Initiator(host=host, wwn="21:00:00:e0:8b:77:77:77").full_clean()
    assert "in use by live links" in str(refused.value) and "primary-site holds RAID-R1" in str(refused.value)
    # remote-site lets XRAID1 go: primary-site keeps its path, the links shrink to its pairs.
    assert execute(submit("remove", CONNECT).pk).state == "succeeded"
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == pairs_of(*((i, raid_r1.wwn) for i in segment)), name
    assert set(Link.objects.filter(state="up").values_list("site__name", flat=True)) == {"primary-site"}
    assert reconcile_clean()
    assert execute(submit("remove", other).pk).state == "succeeded"
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)
    assert not Grant.objects.exists()


@pytest.mark.django_db
def test_more_hosts_for_a_grant_sharing_another_grants_link_stay_zoned_after_a_settle(fcip_lab):
    # XRAID4's grant shares the link recorded under XRAID1's; a renewal naming another host extends it.
    # Failed before: the grant's hosts were read from its first connect's plan, so reconcile saw the
    # new host's pairs as needed by no grant, and a settle took them off again.
    xraid4()
    second_host(BACKUP)
    management = Initiator.objects.get(host__name="management-server").wwn
    xraid4_connect = {"site": "remote-site", "device_description": "XRAID4"}
    for request in (CONNECT, xraid4_connect, {**xraid4_connect, "hosts": ["backup-server"]}):
        op = execute(submit("add", {"hosts": ["management-server"], **request}).pk)
        assert op.state == "succeeded", op.error
    wanted = pairs_of((management, XRAID1), (management, XRAID4), (BACKUP, XRAID4))
    assert all(pairs_in_force(fcip_lab, name) == wanted for name in PLATFORMS)
    assert reconcile_clean()
    for pk in settle_stranded_links():
        execute(pk)
    assert all(pairs_in_force(fcip_lab, name) == wanted for name in PLATFORMS)
    assert sorted(Grant.objects.get(device__description="XRAID4").initiators) == sorted([management, BACKUP])


def router_down(lab: FcipLab, name: str) -> None:
    lab.sims[name].faults = [Fault("refuse_login")]
    pool.close_all()  # the next step must log in again


@pytest.mark.django_db
def test_a_connect_asked_again_after_its_extension_failed_on_a_router_that_was_down_gets_its_zones(fcip_lab):
    # Failed before: the failed extension's record claimed XRAID4's pairs, so the second connect sent
    # nothing and succeeded with XRAID4 unreachable.
    xraid4()
    initiator = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    router_down(fcip_lab, "primary-rtr")
    xraid4_connect = {"site": "remote-site", "device_description": "XRAID4"}
    failed = execute(submit("add", xraid4_connect).pk)
    assert failed.state == "failed", (failed.state, failed.error)
    assert not Grant.objects.filter(device__description="XRAID4").exists()
    fcip_lab.sims["primary-rtr"].faults = []
    again = execute(submit("add", xraid4_connect).pk)
    assert again.state == "succeeded", again.error
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == pairs_of((initiator, XRAID1), (initiator, XRAID4)), name
    assert reconcile_clean()


@pytest.mark.django_db
def test_a_disconnect_that_fails_after_shrinking_one_router_grows_it_back(fcip_lab):
    # Failed before: the MDS link stayed shrunk while remote-site still held XRAID1.
    xraid4()
    initiator = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    assert execute(submit("add", {"site": "remote-site", "device_description": "XRAID4"}).pk).state == "succeeded"
    router_down(fcip_lab, "primary-rtr")  # the disconnect shrinks remote-rtr's link first, then fails here
    op = execute(submit("remove", CONNECT).pk)
    assert op.state in ("failed", "rolled_back"), (op.state, op.error)
    assert "its zoning put back" in op.transcript
    fcip_lab.sims["primary-rtr"].faults = []
    both = pairs_of((initiator, XRAID1), (initiator, XRAID4))
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == both, name
    assert set(Grant.objects.values_list("device__description", flat=True)) == {"XRAID1", "XRAID4"}
    assert reconcile_clean()


@pytest.mark.django_db
def test_reconcile_policy_router_records_a_shared_fcip_link_with_a_holder_for_each_device(fcip_lab):
    # Failed before: only the first device got a lock, so the next settle took the other's zones off.
    xraid4()
    initiator = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    assert execute(submit("add", {"site": "remote-site", "device_description": "XRAID4"}).pk).state == "succeeded"
    Link.objects.all().delete()  # the registry forgot the links and the grants; the switches still zone them
    Grant.objects.all().delete()
    op = reconcile(repair=True, policy="router")
    assert op.state == "succeeded", op.error
    assert {(lock.device.description, tuple(lock.initiators)) for lock in Grant.objects.all()} == {
        ("XRAID1", (initiator,)), ("XRAID4", (initiator,))}
    for pk in settle_stranded_links():
        execute(pk)
    both = pairs_of((initiator, XRAID1), (initiator, XRAID4))
    assert all(pairs_in_force(fcip_lab, name) == both for name in PLATFORMS)
    assert reconcile_clean()


def reconcile_clean() -> bool:
    op = reconcile()
    routers = op.result["routers"]
    return op.state == "succeeded" and all(
        not report.get(kind) for report in routers.values() for kind in ("missing", "extra", "mismatched"))


@pytest.mark.django_db
def test_a_retry_after_a_connection_lost_before_activation_puts_the_zones_in_force(fcip_lab):
    # The zones are defined in PROD but not active when the reply is lost: the listing shows the link
    # `down`, and the retry must finish it rather than take the key for a link that is up.
    fcip_lab.sims["remote-rtr"].faults = [Fault("drop_before_apply", match="^zoneset activate", count=1)]
    op = execute(submit("add", CONNECT).pk)
    assert op.state == "succeeded", op.error
    initiator = fcip_lab_initiator()
    for name in PLATFORMS:
        assert [sorted(m) for m in fcip_lab.flexzone_zones(name).values()] == [sorted([initiator, XRAID1])], name
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)


@pytest.mark.django_db
def test_a_step_the_switch_would_refuse_is_refused_first_and_what_others_configured_stays(fcip_lab):
    # A customer's tunnel already uses the two sites' addresses: flexzone's circuit would be refused,
    # so nothing of the link is made on that switch; what the other end got is undone; the customer's
    # tunnel stays.
    local = Site.objects.get(name="primary-site").data_ip
    remote = Site.objects.get(name="remote-site").data_ip
    admin = fcip_lab.admins["primary-rtr"]
    admin.fos("portcfg fciptunnel 26 create -d customer")
    admin.fos(f"portcfg fcipcircuit 26 create 0 --local-ip {local} --remote-ip {remote}")
    op = execute(submit("add", CONNECT).pk)
    assert op.state == "rolled_back", (op.state, op.error)
    assert "circuit 0 of VE port 26 already joins" in op.error
    assert set(fcip_lab.sims["primary-rtr"].state().running["tunnels"]) == {"26"}
    assert fcip_lab.production_everywhere()
    assert set(Link.objects.values_list("state", flat=True)) == {"failed"}
    assert not Grant.objects.exists()


@pytest.mark.django_db
def test_repair_by_the_router_never_records_up_a_link_the_switch_lists_down(fcip_lab):
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    [zone] = fcip_lab.flexzone_zones("primary-rtr")
    admin = fcip_lab.admins["primary-rtr"]
    admin.fos(f'cfgremove "PROD", "{zone}"')  # someone takes our zone out of force; it stays defined
    admin.fos_confirmed('cfgenable "PROD"')
    Link.objects.filter(router__name="primary-rtr").update(state="configuring")  # a record left mid-change
    op = reconcile(repair=True, policy="router")
    assert op.state == "succeeded", op.error
    assert Link.objects.get(router__name="primary-rtr").state == "failed"
    assert fcip_lab.production_everywhere()


@pytest.mark.django_db
def test_a_disconnect_never_hands_an_fcip_link_to_another_site_s_queued_connect(fcip_lab):
    # An FCIP link zones one device with one site's initiators: it serves no other hold. Here the
    # other site's connect is queued behind the disconnect (its lock already taken at submit).
    Device.objects.create(device_id="raid-r1", description="RAID-R1", wwn="21:00:00:e0:8b:0e:95:99",
                          zone=Device.objects.get(description="XRAID1").zone,
                          owner_site=Site.objects.get(name="remote-site"))
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    remove = submit("remove", CONNECT)
    reverse = submit("add", {"site": "primary-site", "device_description": "RAID-R1"})
    assert execute(remove.pk).state == "succeeded"
    assert {name: fcip_lab.flexzone_zones(name) for name in PLATFORMS} == {name: {} for name in PLATFORMS}
    execute(reverse.pk)
    held = Grant.objects.exists()
    assert held == Link.objects.filter(state="up").exists(), "a link is up without a holder, or the reverse"
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)


@pytest.mark.django_db
def test_a_connect_converges_the_link_to_every_grant_even_when_a_record_was_lost(fcip_lab):
    # Failed before: an add of a link with no record drove its own plan, so the switches were left
    # zoning XRAID4 only and XRAID1's grant (settled; its records lost, as when the database is
    # restored from a backup older than the link) lost its path. An add converges the link to the grants.
    xraid4()
    initiator = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    Link.objects.all().delete()  # the records are gone; the grant and the switches' zones stay
    done = execute(submit("add", {"site": "remote-site", "device_description": "XRAID4"}).pk)
    assert done.state == "succeeded", done.error
    both = pairs_of((initiator, XRAID1), (initiator, XRAID4))
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == both, name
    assert {frozenset(map(tuple, link.pairs)) for link in Link.objects.filter(state="up")} == {
        frozenset({(initiator, XRAID1), (initiator, XRAID4)})}
    assert fcip_lab.production_everywhere()
    assert_agreement(fcip_lab)
    assert reconcile_clean()


@pytest.mark.django_db
def test_an_add_that_gave_up_after_its_convergence_took_effect_carries_on_with_every_grants_pairs(
        fcip_lab, monkeypatch):
    # Failed before: the look after the failure compared the switch with this step's own pairs, found
    # the converged link (XRAID1's grant's pairs too) "partial", and the rollback took it all off.
    from operations import adding
    from operations.errors import StepFailed

    xraid4()
    initiator = fcip_lab_initiator()
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    Link.objects.all().delete()  # the records are gone; the grant and the switches' zones stay
    real, failed = adding.converge_link, []

    def gives_up_after_it_took_effect(run, router, key, **options):
        pairs = real(run, router, key, **options)
        if not failed:  # the first router's reply is lost, and the retries run into other faults
            failed.append(router.name)
            raise StepFailed(router.name, "gave up after 5 attempts: the reply was lost", permanent=False)
        return pairs

    monkeypatch.setattr(adding, "converge_link", gives_up_after_it_took_effect)
    done = execute(submit("add", {"site": "remote-site", "device_description": "XRAID4"}).pk)
    assert failed and done.state == "succeeded", done.error
    assert "holds it after all" in done.transcript
    for name in PLATFORMS:
        assert pairs_in_force(fcip_lab, name) == pairs_of((initiator, XRAID1), (initiator, XRAID4)), name
    assert_agreement(fcip_lab)
    assert reconcile_clean()


@pytest.mark.django_db
def test_a_disconnect_takes_off_what_was_applied_whatever_the_registry_says_since(fcip_lab):
    """Issue 45, item 1: the link records keep the zone number, VSAN and own address they were configured
    with. Before, a removal was worked out from the registry's current values: with the zone renumbered
    behind every guard (here by the database's superuser, triggers off), the disconnect looked for zones
    that were never there and left the applied ones in force on both switches."""
    assert execute(submit("add", CONNECT).pk).state == "succeeded"
    mds = fcip_lab.routers["remote-rtr"]
    assert {(link.router_id, link.zone_number, link.vsan) for link in Link.objects.all()} == {
        (fcip_lab.routers["primary-rtr"].pk, 1, None), (mds.pk, 1, mds.vsan)}
    assert set(Link.objects.values_list("local_ip", flat=True)) == set(
        Site.objects.filter(name__in=["primary-site", "remote-site"]).values_list("data_ip", flat=True))
    with behind_the_rules():  # the database refuses it otherwise (issue 45, item 4)
        Zone.objects.filter(zone_id=1).update(zone_id=99)
    op = execute(submit("remove", CONNECT).pk)
    assert op.state == "succeeded", op.error
    assert all(fcip_lab.flexzone_zones(name) == {} for name in PLATFORMS)
    assert fcip_lab.sims["primary-rtr"].state().running["tunnels"] == {}
    assert fcip_lab.production_everywhere()
    assert not Grant.objects.exists() and not Link.active().exists()

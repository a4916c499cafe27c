"""The FCIP drivers on a fabric that already carries production zoning, over real SSH to the simulators.

Another administrator (a separate stock netmiko session) sets up PROD first, as every real fabric
has it; flexzone must add its zones to PROD, take them out again, and never replace, disable or edit
anything it did not create, nor break that administrator's open edit.
"""

from __future__ import annotations

import re

import pytest

from routers.drivers.base import (
    CommandRejected,
    LinkAbsent,
    LinkExists,
    LinkSpec,
    RouterConnectError,
    RouterLink,
    ZoningBusy,
)
from routers.drivers.zoning import ACTIVE_ZONESET, EFFECTIVE
from simulators.admin import (
    PROD_ZONE,
    FabricAdmin,
    configuration_in_force,
    production_in_force,
    zones_in_force,
)
from simulators.faults import Fault
from tests.support.fabric import INITIATORS, PORTS, TARGET, flexzone_zones, spec_for

ZONE_PREFIX = {"brocade_fos": "fz_z7_ve24", "cisco_mds": "fz_z7_fcip5"}
CARRIERS = {"brocade_fos": "tunnels", "cisco_mds": "interfaces"}  # what carries a link, in the switch's state
PORT_TAKEN = {"brocade_fos": "already carries a tunnel to 198.18.1.1", "cisco_mds": "already peers with 198.18.1.1"}


@pytest.fixture(params=["brocade_fos", "cisco_mds"])
def platform(request):
    return request.param


@pytest.fixture
def switch(sim_factory, platform):
    return sim_factory(platform, ssh=("127.0.0.1", 0))


@pytest.fixture
def admin(switch, platform):
    session = FabricAdmin(switch, platform)
    yield session
    session.close()


def pair(platform: str, initiator: str) -> str:
    return f"{ZONE_PREFIX[platform]}_{initiator.replace(':', '')}_{TARGET.replace(':', '')}"


def sent_commands(transcript: str, platform: str) -> list[str]:
    """The configuration commands a driver typed, in order, read from its session transcript."""
    if platform == "brocade_fos":
        pattern = r"^\S+:\S+> ((?:portcfg fcip|zone|cfgadd|cfgcreate|cfgenable|cfgremove)\S*.*)$"
    else:
        pattern = r"^\S+\(config[^)]*\)# (.+)$"
    return [match.group(1).strip() for match in re.finditer(pattern, transcript, re.M)
            if match.group(1).strip() not in ("end", "exit")]


def test_production_zoning_stays_in_force_after_add_and_after_remove(switch, admin, driver_for, platform):
    admin.seed_production()
    driver = driver_for(switch)
    spec = spec_for(platform)
    driver.add_link(spec)
    assert production_in_force(switch, platform)
    assert configuration_in_force(switch, platform) == "PROD"
    assert set(flexzone_zones(switch, platform)) == {pair(platform, i) for i in INITIATORS}
    assert driver.list_links() == [RouterLink(spec.port, 7, "198.18.1.1", "up")]
    driver.remove_link(spec)
    assert production_in_force(switch, platform)
    assert flexzone_zones(switch, platform) == {}
    assert driver.list_links() == []


def test_zone_members_are_exactly_one_initiator_and_the_device(switch, admin, driver_for, platform):
    admin.seed_production()
    driver = driver_for(switch)
    driver.add_link(spec_for(platform))
    assert flexzone_zones(switch, platform) == {pair(platform, i): [i, TARGET] for i in INITIATORS}
    [link] = driver.list_links()
    assert (link.initiators, link.targets) == (INITIATORS, (TARGET,))


def test_re_adding_the_link_is_idempotent(switch, admin, driver_for, platform):
    admin.seed_production()
    driver = driver_for(switch)
    driver.add_link(spec_for(platform))
    before = switch.state()
    with pytest.raises(LinkExists):
        driver.add_link(spec_for(platform))
    assert switch.state() == before


def test_another_sessions_open_edit_is_waited_for_and_never_broken(switch, admin, driver_for, platform):
    admin.seed_production()
    admin.enhanced_mode() if platform == "cisco_mds" else None
    admin.start_edit()
    before = switch.state()
    driver = driver_for(switch)
    with pytest.raises(ZoningBusy):
        driver.add_link(spec_for(platform))
    assert switch.state() == before  # not even the tunnel: a busy fabric leaves the switch untouched
    transcript = driver.take_transcript()
    assert "cfgtransabort" not in transcript and "clear zone lock" not in transcript
    admin.abandon_edit()
    driver.add_link(spec_for(platform))
    assert production_in_force(switch, platform)
    assert len(flexzone_zones(switch, platform)) == 2


def test_the_zoning_locked_fault_makes_the_switch_busy_until_it_is_cleared(switch, admin, driver_for, platform):
    admin.seed_production()
    if platform == "cisco_mds":
        admin.enhanced_mode()
    switch.faults = [Fault("zoning_locked")]
    driver = driver_for(switch)
    with pytest.raises(ZoningBusy):
        driver.add_link(spec_for(platform))
    with pytest.raises(ZoningBusy):
        driver.remove_link(spec_for(platform))
    switch.faults = []
    driver.add_link(spec_for(platform))
    assert production_in_force(switch, platform) and len(flexzone_zones(switch, platform)) == 2


def test_staged_changes_of_another_admin_are_never_put_in_force(switch, admin, driver_for, platform):
    admin.seed_production()
    admin.stage_change()
    before = switch.state()
    driver = driver_for(switch)
    with pytest.raises(CommandRejected, match="adm_staged is defined in PROD but not in effect") as refused:
        driver.add_link(spec_for(platform))
    assert not isinstance(refused.value, LinkExists)
    assert switch.state() == before
    assert "adm_staged" not in zones_in_force(switch, platform)


def test_a_failed_add_leaves_production_in_force_and_the_retry_completes(sim_factory, driver_for, platform):
    enable = "^cfgenable" if platform == "brocade_fos" else "^zoneset activate"
    switch = sim_factory(platform, ssh=("127.0.0.1", 0))
    admin = FabricAdmin(switch, platform)
    try:
        admin.seed_production()  # the fault is armed after the admin's own activation
        switch.faults = [Fault("drop_before_apply", match=enable, count=1)]
        with pytest.raises(RouterConnectError):
            driver_for(switch).add_link(spec_for(platform))
        assert production_in_force(switch, platform)
        assert flexzone_zones(switch, platform) == {}
        driver_for(switch).add_link(spec_for(platform))
        assert production_in_force(switch, platform) and len(flexzone_zones(switch, platform)) == 2
    finally:
        admin.close()


def test_removing_some_initiators_takes_only_their_zones_out(switch, admin, driver_for, platform):
    admin.seed_production()
    driver = driver_for(switch)
    driver.add_link(spec_for(platform))
    driver.add_link(spec_for(platform, INITIATORS[:1]))  # the same link, now for one host only
    assert set(flexzone_zones(switch, platform)) == {pair(platform, INITIATORS[0])}
    assert production_in_force(switch, platform)


def test_a_fabric_with_nothing_in_force_gets_flexzones_own_configuration_with_a_warning(switch, driver_for, platform):
    driver = driver_for(switch)
    driver.add_link(spec_for(platform))
    own = "fz_cfg" if platform == "brocade_fos" else "fz_zoneset"
    assert configuration_in_force(switch, platform) == own
    [warning] = driver.take_warnings()
    assert "created and" in warning and own in warning
    driver.remove_link(spec_for(platform))
    assert configuration_in_force(switch, platform) is None  # as flexzone found the fabric
    assert "back to no" in driver.take_warnings()[0]


def test_an_own_named_configuration_holding_other_zones_is_never_put_in_force(switch, admin, driver_for, platform):
    # Nothing is in force, but someone has defined fz_cfg / fz_zoneset with a zone of their own.
    if platform == "brocade_fos":
        admin.fos(f'zonecreate "{PROD_ZONE}", "10:00:00:90:fa:c7:43:10; 50:00:09:73:f0:2c:51:04"')
        admin.fos(f'cfgcreate "fz_cfg", "{PROD_ZONE}"')
        assert "Updating flash" in admin.fos_confirmed("cfgsave")
    else:
        admin.conn.send_config_set([f"zone name {PROD_ZONE} vsan 1", "member pwwn 10:00:00:90:fa:c7:43:10",
                                    "zoneset name fz_zoneset vsan 1", f"member {PROD_ZONE}"])
    before = switch.state()
    with pytest.raises(CommandRejected, match=PROD_ZONE):
        driver_for(switch).add_link(spec_for(platform))
    assert configuration_in_force(switch, platform) is None
    assert switch.state() == before


def test_a_configuration_of_someone_elses_is_never_emptied(switch, admin, driver_for, platform):
    admin.seed_production()
    driver = driver_for(switch)
    driver.add_link(spec_for(platform))
    # The admin takes the production zone out of PROD: flexzone's zones are all that is left in it.
    if platform == "brocade_fos":
        admin.fos(f'cfgremove "PROD", "{PROD_ZONE}"')
        admin.fos_confirmed('cfgenable "PROD"')
    else:
        admin.conn.send_config_set(["zoneset name PROD vsan 1", f"no member {PROD_ZONE}",
                                    "zoneset activate name PROD vsan 1"])
    with pytest.raises(CommandRejected, match="never (disables|deactivates)"):
        driver.remove_link(spec_for(platform))
    assert configuration_in_force(switch, platform) == "PROD"


def test_fos_refuses_to_create_a_configuration_when_the_default_zone_is_all_access(sim_factory, driver_for):
    switch = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(switch, "brocade_fos")
    try:
        admin.fos_confirmed("defzone --allaccess")
        with pytest.raises(CommandRejected, match="All Access"):
            driver_for(switch).add_link(spec_for("brocade_fos"))
        assert configuration_in_force(switch, "brocade_fos") is None
        assert switch.state().running["tunnels"] == {}
    finally:
        admin.close()


def test_the_rendered_commands_are_what_the_driver_sends(switch, admin, driver_for, platform):
    admin.seed_production()
    driver = driver_for(switch)
    spec = spec_for(platform)
    driver.take_transcript()
    driver.add_link(spec)
    placeholder = EFFECTIVE if platform == "brocade_fos" else ACTIVE_ZONESET
    rendered = [line.replace(placeholder, "PROD") for line in driver.render_add(spec)
                if line not in ("configure terminal", "end")]
    assert sent_commands(driver.take_transcript(), platform) == rendered
    driver.remove_link(spec)
    rendered = [line.replace(placeholder, "PROD") for line in driver.render_remove(spec)
                if line not in ("configure terminal", "end")]
    assert sent_commands(driver.take_transcript(), platform) == rendered


def test_zones_to_one_gateway_share_its_tunnel_or_interface_until_the_last_is_removed(switch, driver_for, platform):
    first = spec_for(platform)
    second = LinkSpec(PORTS[platform], 8, "198.18.1.1", "198.18.0.1", "10:00:00:00:c9:aa:bb:02", INITIATORS)
    driver = driver_for(switch)
    driver.add_link(first)
    driver.add_link(second)
    assert [link.key for link in driver.list_links()] == [first.key, second.key]
    assert list(switch.state().running[CARRIERS[platform]]) == [str(PORTS[platform])]
    driver.remove_link(first)
    assert [link.key for link in driver.list_links()] == [second.key]
    assert list(switch.state().running[CARRIERS[platform]]) == [str(PORTS[platform])]
    driver.remove_link(second)
    assert switch.state().running[CARRIERS[platform]] == {}


def test_a_second_gateway_on_a_port_in_use_is_rejected(switch, driver_for, platform):
    driver = driver_for(switch)
    driver.add_link(spec_for(platform))
    elsewhere = LinkSpec(PORTS[platform], 8, "198.18.2.2", "198.18.0.1", "10:00:00:00:c9:aa:bb:02", INITIATORS)
    with pytest.raises(CommandRejected, match=PORT_TAKEN[platform]) as caught:
        driver.add_link(elsewhere)
    assert not isinstance(caught.value, LinkExists)
    assert switch.links() == [RouterLink(PORTS[platform], 7, "198.18.1.1", "up")]


def test_removing_a_link_that_is_not_there_touches_nothing(switch, admin, driver_for, platform):
    admin.seed_production()
    before = switch.state()
    with pytest.raises(LinkAbsent):
        driver_for(switch).remove_link(spec_for(platform))
    assert switch.state() == before


def test_an_add_that_needs_no_initiators_is_refused_before_anything_is_sent(switch, driver_for, platform):
    driver = driver_for(switch)
    driver.take_transcript()
    with pytest.raises(ValueError, match="^initiators:"):
        driver.add_link(spec_for(platform, ()))
    assert driver.take_transcript() == ""


# --- Cisco MDS enhanced zoning mode -----------------------------------------------------------


def test_mds_enhanced_mode_edits_end_with_a_commit_that_frees_the_lock(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.enhanced_mode()
    driver = driver_for(mds)
    driver.add_link(spec_for("cisco_mds"))
    transcript = driver.take_transcript()
    assert "zone commit vsan 1" in transcript
    status = driver.run("show zone status vsan 1")
    assert re.search(r"session:\s+none", status) and "Commit completed" in status
    assert production_in_force(mds, "cisco_mds") and len(flexzone_zones(mds, "cisco_mds")) == 2
    driver.remove_link(spec_for("cisco_mds"))
    assert production_in_force(mds, "cisco_mds") and flexzone_zones(mds, "cisco_mds") == {}


def test_mds_a_lock_our_dead_session_left_is_freed_by_the_next_session(sim_factory, driver_for):
    mds = sim_factory("cisco_mds", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(mds, "cisco_mds")
    try:
        admin.seed_production()
        admin.enhanced_mode()
        mds.faults = [Fault("drop_before_apply", match="^zoneset activate", count=1)]
        with pytest.raises(RouterConnectError):
            driver_for(mds).add_link(spec_for("cisco_mds"))
        assert "session:  none" not in admin.conn.send_command("show zone status vsan 1")  # the switch kept it
        retry = driver_for(mds)
        retry.add_link(spec_for("cisco_mds"))
        assert any("freed the zoning lock" in warning for warning in retry.take_warnings())
        assert production_in_force(mds, "cisco_mds") and len(flexzone_zones(mds, "cisco_mds")) == 2
    finally:
        admin.close()


def test_mds_a_lock_held_by_another_user_is_never_freed(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.enhanced_mode()
    mds.faults = [Fault("zoning_locked")]  # san-admin holds the lock
    driver = driver_for(mds)
    with pytest.raises(ZoningBusy, match="san-admin"):
        driver.add_link(spec_for("cisco_mds"))
    assert "no zone commit" not in driver.take_transcript()


def test_mds_refuses_to_create_a_zoneset_when_the_default_zone_permits_everyone(mds, mds_admin, driver_for):
    mds_admin.conn.send_config_set(["zone default-zone permit vsan 1"])
    before = mds.state()
    driver = driver_for(mds)
    driver.take_transcript()
    with pytest.raises(CommandRejected, match="default zone of vsan 1 is permit") as refused:
        driver.add_link(spec_for("cisco_mds"))
    assert not isinstance(refused.value, LinkExists)
    assert sent_commands(driver.take_transcript(), "cisco_mds") == []
    assert mds.state() == before
    assert configuration_in_force(mds, "cisco_mds") is None


CUSTOMER_FCIP = ["feature fcip", "fcip profile 5", "ip address 198.18.0.77", "interface fcip 9", "use-profile 5",
                 "peer-info ipaddr 198.18.9.9", "no shutdown"]


def test_mds_an_add_on_a_profile_a_customers_interface_uses_is_refused_and_touches_nothing(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.conn.send_config_set(CUSTOMER_FCIP)
    before = mds.state()
    driver = driver_for(mds)
    driver.take_transcript()
    with pytest.raises(CommandRejected, match="fcip profile 5 is used by interface fcip9"):
        driver.add_link(spec_for("cisco_mds"))
    assert sent_commands(driver.take_transcript(), "cisco_mds") == []
    assert mds.state() == before


def test_mds_a_remove_leaves_a_profile_a_customers_interface_shares(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    driver = driver_for(mds)
    driver.add_link(spec_for("cisco_mds"))
    mds_admin.conn.send_config_set(CUSTOMER_FCIP[3:])  # the customer's fcip9 also uses profile 5
    customer = mds.state().running["interfaces"]["9"]
    driver.take_transcript()
    driver.remove_link(spec_for("cisco_mds"))
    assert "no fcip profile 5" not in sent_commands(driver.take_transcript(), "cisco_mds")
    running = mds.state().running
    assert running["interfaces"] == {"9": customer}
    assert running["profiles"] == {"5": {"ip": "198.18.0.1"}}
    assert production_in_force(mds, "cisco_mds") and flexzone_zones(mds, "cisco_mds") == {}


def test_mds_an_existing_interface_without_flexzones_description_is_refused(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.conn.send_config_set(["feature fcip", "interface fcip 5", "peer-info ipaddr 198.18.1.1"])
    before = mds.state()
    driver = driver_for(mds)
    driver.take_transcript()
    with pytest.raises(CommandRejected, match="interface fcip5 was not created by flexzone"):
        driver.add_link(spec_for("cisco_mds"))
    assert sent_commands(driver.take_transcript(), "cisco_mds") == []
    assert mds.state() == before


def test_mds_a_staged_device_alias_change_of_a_production_zone_is_never_put_in_force(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.conn.send_config_set(["zone name prod_alias vsan 1", "member device-alias hostA",
                                "zoneset name PROD vsan 1", "member prod_alias",
                                "zoneset activate name PROD vsan 1"])
    mds_admin.conn.send_config_set(["zone name prod_alias vsan 1", "no member device-alias hostA",
                                "member device-alias hostB"])  # staged: not activated
    before = mds.state()
    assert before.running["active"]["1"]["zones"]["prod_alias"] == ["device-alias hostA"]
    driver = driver_for(mds)
    with pytest.raises(CommandRejected, match="prod_alias has other members defined than in effect"):
        driver.add_link(spec_for("cisco_mds"))
    assert mds.state() == before


def test_mds_a_failure_after_our_own_commit_discards_nothing(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.enhanced_mode()
    driver = driver_for(mds)
    driver.take_transcript()
    with pytest.raises(CommandRejected, match="Invalid command"):
        # Our commit releases the lock, which may be someone else's by the time the next line fails.
        driver.configure(["configure terminal", "zone name fz_probe vsan 1", f"member pwwn {TARGET}",
                          "zone commit vsan 1", "fcip profile 5", "end"])  # feature fcip is off
    assert "no zone commit" not in driver.take_transcript()
    assert mds.state().running["zones"]["1"]["fz_probe"] == [TARGET]


def test_mds_a_discard_the_switch_refuses_leaves_the_lock_remembered(mds, mds_admin, driver_for):
    mds_admin.enhanced_mode()
    mds.faults = [Fault("zoning_locked")]  # san-admin's lock: our `no zone commit` is refused
    driver = driver_for(mds)
    driver._holding.add(1)
    driver.discard_zone_session()
    assert "Lock is currently busy" in driver.take_transcript()
    assert driver._holding == {1}  # still ours to free (or to find gone) in the next session

"""MDS: another administrator's change that lands between flexzone's read and its activation, over real
SSH to the simulator.

Activating a zoneset puts the whole full zoneset in force, so a change someone staged after flexzone
read the fabric would go live with flexzone's zones. In enhanced mode flexzone takes the zone session
lock first and reads again under it (nobody can commit while it holds the lock); in basic mode, which
has no lock, it reads again right before activating and refuses on any change but its own, taking its
own edits back. A leftover lock is freed only when this process saw its own session take it.
"""

from __future__ import annotations

import re
import time

import pytest

from routers.drivers.base import CommandRejected, LinkSpec, RouterConnectError, RouterTimeout, ZoningBusy
from simulators.admin import FabricAdmin, production_in_force, zones_in_force
from simulators.faults import Fault
from tests.support.fabric import flexzone_zones, spec_for

SPEC = spec_for("cisco_mds")
OTHER = LinkSpec(6, 8, "198.18.1.2", "198.18.0.2", "50:00:09:72:08:1a:f1:05", ("10:00:00:10:9b:5e:b0:03",))


def stage_before_first_edit(driver, admin: FabricAdmin, enhanced: bool) -> None:
    """The other admin stages a change to PROD just before the driver's first configure session, after
    the driver has read the fabric (in enhanced mode under a lock of their own, committed, not activated)."""
    configure, staged = driver.configure, []

    def racing(lines, **kwargs):
        if not staged:
            staged.append(True)
            admin.stage_change()
            if enhanced:
                assert "Commit operation initiated" in admin.conn.send_config_set(["zone commit vsan 1"])
        return configure(lines, **kwargs)

    driver.configure = racing


def full_zoneset(mds, name="PROD") -> list[str]:
    return mds.state().running["zonesets"]["1"][name]


@pytest.mark.parametrize("mode", ["basic", "enhanced"])
def test_mds_an_add_never_activates_a_change_staged_after_its_read(mds, mds_admin, driver_for, mode):
    mds_admin.seed_production()
    if mode == "enhanced":
        mds_admin.enhanced_mode()
    driver = driver_for(mds)
    stage_before_first_edit(driver, mds_admin, mode == "enhanced")
    with pytest.raises(CommandRejected, match="adm_staged is defined in PROD but not in effect"):
        driver.add_link(SPEC)
    assert "adm_staged" not in zones_in_force(mds, "cisco_mds") and production_in_force(mds, "cisco_mds")
    assert flexzone_zones(mds, "cisco_mds") == {}
    # The admin's staged change is theirs to activate, and flexzone left nothing of its own beside it.
    assert sorted(full_zoneset(mds)) == ["adm_staged", "prod_oradb1_vmax"]
    assert not [name for name in mds.state().running["zones"]["1"] if name.startswith("fz_")]
    assert re.search(r"session:\s+none", mds_admin.conn.send_command("show zone status vsan 1"))


@pytest.mark.parametrize("mode", ["basic", "enhanced"])
def test_mds_a_remove_never_activates_a_change_staged_after_its_read(mds, mds_admin, driver_for, mode):
    mds_admin.seed_production()
    if mode == "enhanced":
        mds_admin.enhanced_mode()
    driver_for(mds).add_link(SPEC)
    ours = flexzone_zones(mds, "cisco_mds")
    driver = driver_for(mds)
    stage_before_first_edit(driver, mds_admin, mode == "enhanced")
    with pytest.raises(CommandRejected, match="adm_staged is defined in PROD but not in effect"):
        driver.remove_link(SPEC)
    assert "adm_staged" not in zones_in_force(mds, "cisco_mds") and production_in_force(mds, "cisco_mds")
    assert flexzone_zones(mds, "cisco_mds") == ours  # the link stays whole: in force and defined
    assert sorted(full_zoneset(mds)) == sorted(["adm_staged", "prod_oradb1_vmax", *ours])
    assert re.search(r"session:\s+none", mds_admin.conn.send_command("show zone status vsan 1"))


def test_mds_basic_mode_reads_again_right_before_activating(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    driver = driver_for(mds)
    driver.take_transcript()
    driver.add_link(SPEC)
    commands = re.findall(r"^\S+# (.+)$", driver.take_transcript(), re.M)
    activation = next(i for i, line in enumerate(commands) if line.startswith("zoneset activate"))
    last_edit = max(i for i, line in enumerate(commands[:activation]) if line.startswith(("zone name", "member")))
    assert any(line.startswith("show zoneset") for line in commands[last_edit:activation])


def test_mds_enhanced_mode_takes_the_lock_before_the_read_it_edits_from(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.enhanced_mode()
    driver = driver_for(mds)
    driver.take_transcript()
    driver.add_link(SPEC)
    transcript = driver.take_transcript()
    created = transcript.index("Enhanced zone session has been created")
    first_zone = transcript.index("zone name fz_")
    assert "show zoneset active vsan 1" in transcript[created:first_zone]


def test_mds_a_staged_fcalias_change_of_a_production_zone_is_never_put_in_force(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    mds_admin.conn.send_config_set(["fcalias name arrayA vsan 1", "member pwwn 50:00:09:73:f0:2c:51:05",
                                "zone name prod_fcalias vsan 1", "member fcalias arrayA",
                                "member pwwn 10:00:00:90:fa:c7:43:11",
                                "zoneset name PROD vsan 1", "member prod_fcalias",
                                "zoneset activate name PROD vsan 1"])
    mds_admin.conn.send_config_set(["fcalias name arrayA vsan 1", "member pwwn 50:00:09:73:f0:2c:51:06"])  # staged
    before = mds.state()
    with pytest.raises(CommandRejected, match="prod_fcalias has other members defined than in effect"):
        driver_for(mds).add_link(SPEC)
    assert mds.state() == before


def test_mds_a_lock_flexzone_never_saw_itself_take_is_never_freed(mds, mds_admin, driver_for):
    """flexzone's session dies before its first zoning edit reaches the switch; a person using the same
    account then takes the lock. The next flexzone session waits for it rather than discarding their work."""
    mds_admin.seed_production()
    mds_admin.enhanced_mode()
    mds.faults = [Fault("drop_before_apply", match=r"^(?:zone|zoneset) name", count=1)]
    with pytest.raises(RouterConnectError):
        driver_for(mds).add_link(SPEC)
    assert re.search(r"session:\s+none", mds_admin.conn.send_command("show zone status vsan 1"))
    mds_admin.start_edit()  # same username as flexzone's
    driver = driver_for(mds)
    with pytest.raises(ZoningBusy):
        driver.add_link(SPEC)
    assert "no zone commit" not in driver.take_transcript()
    # Their pending edit survived: they can still commit it.
    assert "Commit operation initiated" in mds_admin.conn.send_config_set(["zone commit vsan 1"])
    assert "adm_pending" in mds.state().running["zones"]["1"]


def test_mds_a_lock_taken_as_the_time_limit_ran_out_is_freed_when_the_session_closes(mds, mds_admin, driver_for):
    """The operation's time limit passes right after the driver took the lock: the read under it stops,
    and the lock must not outlive the operation (the pool closes the session after a timeout)."""
    mds_admin.seed_production()
    mds_admin.enhanced_mode()
    driver = driver_for(mds)
    read, reads = driver.zoning, []

    def zoning(**kwargs):
        reads.append(1)
        if len(reads) == 2:  # the read under the lock
            driver.deadline = time.monotonic() - 1
        return read(**kwargs)

    driver.zoning = zoning
    with pytest.raises(RouterTimeout):
        driver.add_link(SPEC)
    driver.deadline = None
    driver.close()
    assert re.search(r"session:\s+none", mds_admin.conn.send_command("show zone status vsan 1"))
    driver_for(mds).add_link(SPEC)
    assert len(flexzone_zones(mds, "cisco_mds")) == 2


def test_mds_enhanced_mode_says_each_warning_once(mds, mds_admin, driver_for):
    mds_admin.enhanced_mode()
    driver = driver_for(mds)
    driver.add_link(SPEC)  # no zoneset active: flexzone creates fz_zoneset
    assert len(driver.take_warnings()) == 1
    driver.remove_link(SPEC)  # its last zone: fz_zoneset is deactivated again
    assert len(driver.take_warnings()) == 1


@pytest.mark.parametrize("mode", ["basic", "enhanced"])
def test_mds_what_differed_before_the_read_is_no_race(mds, mds_admin, driver_for, mode):
    """An fz_zoneset someone deactivated still lists another link's zones: the add goes ahead in both modes."""
    if mode == "enhanced":
        mds_admin.enhanced_mode()
    driver = driver_for(mds)
    driver.add_link(OTHER)
    mds_admin.conn.send_config_set(["no zoneset activate name fz_zoneset vsan 1",
                                *(["zone commit vsan 1"] if mode == "enhanced" else [])])
    driver.add_link(SPEC)
    assert len(flexzone_zones(mds, "cisco_mds")) == 3


def test_mds_basic_mode_never_leaves_behind_a_zoneset_an_admin_deleted_meanwhile(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    driver = driver_for(mds)
    configure, raced = driver.configure, []

    def racing(lines, **kwargs):
        if not raced:
            raced.append(mds_admin.conn.send_config_set(["no zoneset name PROD vsan 1"]))
        return configure(lines, **kwargs)

    driver.configure = racing
    with pytest.raises(CommandRejected, match="changed while flexzone edited it"):
        driver.add_link(SPEC)
    assert "PROD" not in mds.state().running["zonesets"]["1"]
    assert production_in_force(mds, "cisco_mds") and flexzone_zones(mds, "cisco_mds") == {}


def test_mds_basic_mode_leaves_configuration_mode_when_journaling_the_activation_fails(mds, mds_admin, driver_for):
    mds_admin.seed_production()
    driver = driver_for(mds)

    def journal_fails(before):
        raise RuntimeError("journal unavailable")

    driver.zoning_changed = journal_fails  # the before-image cannot be taken, in configuration mode
    with pytest.raises(RuntimeError):
        driver.add_link(SPEC)
    assert "(config" not in driver.conn.find_prompt()
    assert flexzone_zones(mds, "cisco_mds") == {}  # nothing activated

"""The FCIP drivers on fabrics as real switches hold them, over real SSH to the simulators: the
defects issue 20 found when real switch output was fed to the drivers, one test each.

* an MDS running-config carries NX-OS's default ``rmon ... owner PMON@FATAL`` lines (the driver no
  longer reads the whole of it);
* a FOS tunnel block says ``Oper State : Enabled`` and has no ``Description`` (ownership no longer
  rests on it);
* FOS aliases are zone members, and the effective configuration lists each WWN once;
* an MDS VSAN zoned with fcalias (and device-alias) members, shown expanded in the active zoneset;
* an MDS VSAN in basic mode with ``distribute: active only`` and an empty full zone database;
* fabrics of a real size (``--fabric-size``).
"""

from __future__ import annotations

import pytest

from routers.drivers.base import CommandRejected, LinkSpec, RouterLink
from simulators.admin import FabricAdmin, zones_in_force

TARGET = "50:00:09:72:08:1a:f1:04"
HOST = "10:00:00:10:9b:5e:b0:01"
FOS = LinkSpec(24, 7, "198.18.1.1", "198.18.0.1", TARGET, (HOST,))
MDS = LinkSpec(5, 7, "198.18.1.1", "198.18.0.1", TARGET, (HOST,))


def up(spec: LinkSpec) -> list[RouterLink]:
    return [RouterLink(spec.port, spec.zone, spec.remote_ip, "up")]


@pytest.fixture
def fos(sim_factory):
    return sim_factory("brocade_fos", ssh=("127.0.0.1", 0))


@pytest.fixture
def admin_of():
    sessions = []

    def open_for(sim, platform):
        session = FabricAdmin(sim, platform)
        sessions.append(session)
        return session

    yield open_for
    for session in sessions:
        session.close()


def test_an_mds_whose_running_config_has_the_default_rmon_lines_is_read_and_changed(mds, driver_for):
    driver = driver_for(mds)
    assert "owner PMON@FATAL" in driver.run("show running-config")
    driver.take_transcript()
    driver.add_link(MDS)
    assert driver.list_links() == up(MDS)
    driver.remove_link(MDS)
    assert driver.list_links() == []
    sent = [line.split("# ", 1)[1] for line in driver.take_transcript().splitlines() if "# show " in line]
    assert "show running-config fcip" in sent and "show running-config" not in sent  # never the whole of it


def test_on_a_fos_that_prints_no_tunnel_description_a_link_is_read_removed_and_its_tunnel_deleted(fos, driver_for):
    driver = driver_for(fos)
    driver.add_link(FOS)
    detail = driver.run("portcfgshow fciptunnel 24")
    assert "Oper State           : Enabled" in detail and "Description" not in detail
    [link] = driver.list_links()
    assert (link.key, link.state, link.oper) == (FOS.key, "up", "Up")
    driver.remove_link(FOS)  # flexzone's zones named VE 24, so the tunnel was flexzone's to delete
    assert fos.state().running["tunnels"] == {}


def test_a_tunnel_no_flexzone_zone_names_is_someone_elses_and_is_left_alone(fos, driver_for, admin_of):
    admin = admin_of(fos, "brocade_fos")
    assert "Operation Succeeded" in admin.fos("portcfg fciptunnel 24 create")
    driver = driver_for(fos)
    with pytest.raises(CommandRejected, match="flexzone did not create"):
        driver.add_link(FOS)
    assert list(fos.state().running["tunnels"]) == ["24"] and fos.links() == []


def test_fos_alias_members_and_a_wwn_shared_by_two_aliases_are_not_staged_changes(fos, driver_for, admin_of):
    """The effective configuration resolves aliases and lists each WWN once: 4 aliases, 3 WWNs."""
    admin = admin_of(fos, "brocade_fos")
    for alias, wwn in (("SRDF_R1_1_8", "50:00:09:73:98:06:C8:08"), ("SRDF_R1_3_8", "50:00:09:73:98:06:C8:88"),
                       ("SRDF_R1_5_8", "50:00:09:73:98:06:C8:09"), ("SRDF_R1_7_8", "50:00:09:73:98:06:C8:88")):
        assert admin.fos(f'alicreate "{alias}", "{wwn}"') == ""
    assert admin.fos('zonecreate "REPL_SRDF", "SRDF_R1_1_8; SRDF_R1_3_8; SRDF_R1_5_8; SRDF_R1_7_8"') == ""
    assert admin.fos('cfgcreate "REPL", "REPL_SRDF"') == ""
    assert "is in effect" in admin.fos_confirmed('cfgenable "REPL"')
    assert len(zones_in_force(fos, "brocade_fos")["REPL_SRDF"]) == 3
    driver = driver_for(fos)
    driver.add_link(FOS)
    in_force = zones_in_force(fos, "brocade_fos")
    assert len(in_force["REPL_SRDF"]) == 3 and len(in_force) == 2
    driver.remove_link(FOS)
    assert list(zones_in_force(fos, "brocade_fos")) == ["REPL_SRDF"]


def test_an_mds_vsan_zoned_with_fcalias_and_device_alias_members_takes_a_link(mds, driver_for, admin_of):
    admin = admin_of(mds, "cisco_mds")
    admin.conn.send_config_set([
        "device-alias database", "device-alias name ora1_hba0 pwwn 10:00:00:90:fa:c7:43:10", "device-alias commit",
        "fcalias name vmax_fa1 vsan 1", "member pwwn 50:00:09:73:f0:2c:51:04", "member pwwn 50:00:09:73:f0:2c:51:05",
        "zone name prod_ora1_vmax vsan 1", "member device-alias ora1_hba0", "member fcalias vmax_fa1",
        "zoneset name PROD vsan 1", "member prod_ora1_vmax", "zoneset activate name PROD vsan 1"])
    driver = driver_for(mds)
    driver.add_link(MDS)
    in_force = zones_in_force(mds, "cisco_mds")
    assert "prod_ora1_vmax" in in_force and len(in_force) == 2
    driver.take_read_stats()
    assert driver.list_links() == up(MDS)
    # Both views name the device-alias alike: nothing to resolve, so the database is not read.
    assert "show device-alias database" not in driver.take_read_stats().commands
    admin.conn.send_config_set(["device-alias database", "device-alias name ora1_hba0 pwwn 10:00:00:90:fa:c7:43:11",
                                "device-alias commit"])
    driver.remove_link(MDS)
    assert list(zones_in_force(mds, "cisco_mds")) == ["prod_ora1_vmax"]


def test_active_only_distribution_with_an_empty_full_database_is_refused_saying_how_to_fix_it(mds, driver_for,
                                                                                               admin_of):
    admin = admin_of(mds, "cisco_mds")
    admin.seed_production()
    admin.conn.send_command("clear zone database vsan 1")  # what a switch that joined the fabric holds
    assert "distribute: active only" in admin.conn.send_command("show zone status vsan 1")
    before = mds.state()
    driver = driver_for(mds)
    with pytest.raises(CommandRejected, match=r"zone copy active-zoneset full-zoneset vsan 1") as refused:
        driver.add_link(MDS)
    assert "does not hold the active zoneset PROD" in str(refused.value)
    assert mds.state() == before  # nothing was sent
    admin.conn.send_command("zone copy active-zoneset full-zoneset vsan 1")
    driver.add_link(MDS)
    assert "prod_oradb1_vmax" in zones_in_force(mds, "cisco_mds") and driver.list_links() == up(MDS)


@pytest.mark.parametrize("platform, spec", [("brocade_fos", FOS), ("cisco_mds", MDS)], ids=["fos", "mds"])
def test_a_fabric_of_real_size_takes_and_gives_back_a_link_leaving_every_other_zone(sim_factory, driver_for,
                                                                                     platform, spec):
    switch = sim_factory(platform, ssh=("127.0.0.1", 0), fabric_size=300)
    before = zones_in_force(switch, platform)
    assert len(before) >= 300
    driver = driver_for(switch)
    driver.add_link(spec)
    assert driver.list_links() == up(spec)
    driver.remove_link(spec)
    assert zones_in_force(switch, platform) == before

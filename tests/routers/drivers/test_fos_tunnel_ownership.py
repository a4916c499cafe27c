"""Whose tunnel is it? The FOS driver, over real SSH to the simulator, against what another admin does
on the same switch: a tunnel is flexzone's only while flexzone's zones in force name its VE port and it
is shaped as flexzone makes them (circuit 0 to the link's gateway, no other circuit). Every other
tunnel is left alone, and the link's own zones still go on remove."""

from __future__ import annotations

import pytest

from routers.drivers.base import CommandRejected, LinkAbsent, LinkSpec, RouterConnectError, RouterLink
from simulators.admin import FabricAdmin, production_in_force, zones_in_force
from simulators.faults import Fault

TARGET = "50:00:09:72:08:1a:f1:04"
HOST = "10:00:00:10:9b:5e:b0:01"
SPEC = LinkSpec(24, 7, "198.18.1.1", "198.18.0.1", TARGET, (HOST,))
ZONE = "fz_z7_ve24_100000109b5eb001_50000972081af104"


@pytest.fixture
def fos(sim_factory):
    return sim_factory("brocade_fos", ssh=("127.0.0.1", 0))


@pytest.fixture
def admin(fos):
    session = FabricAdmin(fos, "brocade_fos")
    session.seed_production()
    yield session
    session.close()


def tunnels(fos):
    return fos.state().running["tunnels"]


def test_a_tunnel_made_by_someone_between_flexzones_read_and_its_create_is_left_alone(fos, admin, driver_for):
    driver = driver_for(fos, "ssh")
    read = driver.tunnels

    def read_then_someone_creates_the_tunnel():
        seen = read()
        if not seen:
            assert "Operation Succeeded" in admin.fos("portcfg fciptunnel 24 create -d theirs")
        return seen

    driver.tunnels = read_then_someone_creates_the_tunnel
    with pytest.raises(CommandRejected, match="appeared there after flexzone read the switch"):
        driver.add_link(SPEC)
    assert tunnels(fos)["24"]["circuits"] == {}  # nothing of flexzone's went into their tunnel
    del driver.tunnels
    driver.remove_link(SPEC)  # what a rollback does: the zones flexzone put in force go, the tunnel stays
    assert ZONE not in zones_in_force(fos, "brocade_fos") and "24" in tunnels(fos)
    assert any("has no circuit 0" in warning for warning in driver.take_warnings())
    assert production_in_force(fos, "brocade_fos")


def test_zones_left_defined_by_someones_backup_cfg_do_not_make_a_later_tunnel_flexzones(fos, admin, driver_for):
    driver = driver_for(fos, "ssh")
    driver.add_link(SPEC)
    assert admin.fos(f'cfgcreate "PROD_backup", "{ZONE}"') == ""
    assert "Updating flash" in admin.fos_confirmed("cfgsave")
    driver.remove_link(SPEC)
    assert ZONE not in zones_in_force(fos, "brocade_fos") and tunnels(fos) == {}
    # The zone stays defined (PROD_backup lists it); then an admin builds VE 24 for their own use.
    assert "Operation Succeeded" in admin.fos("portcfg fciptunnel 24 create")
    assert "Operation Succeeded" in admin.fos(
        "portcfg fcipcircuit 24 create 0 --local-ip 198.18.0.9 --remote-ip 198.18.1.9")
    with pytest.raises(LinkAbsent):  # a repeated remove (a retry, a drift repair): that is another link's port
        driver.remove_link(SPEC)
    assert tunnels(fos)["24"]["circuits"]["0"]["remote_ip"] == "198.18.1.9"
    with pytest.raises(CommandRejected, match="flexzone did not create"):
        driver.add_link(SPEC)
    assert tunnels(fos)["24"]["circuits"]["0"]["remote_ip"] == "198.18.1.9"
    assert "Operation Succeeded" in admin.fos("portcfg fcipcircuit 24 delete 0")
    driver.remove_link(SPEC)  # the admin's tunnel, empty for now: no zone in force names it, so it stays
    assert "24" in tunnels(fos)


def test_a_remove_cut_off_after_the_tunnel_left_zones_the_engine_still_sees_and_a_retry_takes(fos, admin,
                                                                                              driver_for):
    driver_for(fos, "ssh").add_link(SPEC)
    fos.faults = [Fault("drop_before_apply", match="^cfgremove", count=1)]
    with pytest.raises(RouterConnectError):
        driver_for(fos, "ssh").remove_link(SPEC)
    assert tunnels(fos) == {} and ZONE in zones_in_force(fos, "brocade_fos")
    again = driver_for(fos, "ssh")
    assert again.list_links() == []  # no tunnel: not a link any more
    assert again.remnants(SPEC)  # but its zones still grant access
    again.remove_link(SPEC)
    assert not again.remnants(SPEC) and ZONE not in zones_in_force(fos, "brocade_fos")


def test_an_address_pair_another_circuit_uses_is_refused_before_any_zone_is_made(fos, admin, driver_for):
    assert "Operation Succeeded" in admin.fos("portcfg fciptunnel 30 create")
    assert "Operation Succeeded" in admin.fos(
        "portcfg fcipcircuit 30 create 0 --local-ip 198.18.0.1 --remote-ip 198.18.1.1")
    before = fos.state()
    with pytest.raises(CommandRejected, match="circuit 0 of VE port 30 already joins"):
        driver_for(fos, "ssh").add_link(SPEC)
    assert fos.state() == before


def test_an_ipv6_circuit_of_someone_else_does_not_stop_flexzone(fos, admin, driver_for):
    assert "Operation Succeeded" in admin.fos("portcfg fciptunnel 31 create")
    assert "Operation Succeeded" in admin.fos(
        "portcfg fcipcircuit 31 create 0 --local-ip fd00:18::1 --remote-ip fd00:19::1")
    driver = driver_for(fos, "ssh")
    driver.add_link(SPEC)
    assert driver.list_links() == [RouterLink(24, 7, "198.18.1.1", "up")]


def test_a_tunnel_someone_gave_more_circuits_stays_and_the_links_zones_go(fos, admin, driver_for):
    driver = driver_for(fos, "ssh")
    driver.add_link(SPEC)
    assert "Operation Succeeded" in admin.fos(
        "portcfg fcipcircuit 24 create 1 --local-ip 198.18.0.2 --remote-ip 198.18.1.2")
    driver.remove_link(SPEC)
    assert set(tunnels(fos)["24"]["circuits"]) == {"0", "1"}
    assert not [name for name in zones_in_force(fos, "brocade_fos") if name.startswith("fz_")]
    assert any("carries circuits flexzone does not make (1)" in warning for warning in driver.take_warnings())
    assert production_in_force(fos, "brocade_fos")

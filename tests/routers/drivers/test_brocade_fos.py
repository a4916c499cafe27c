"""The Brocade FOS driver against the FOS simulator over real SSH and telnet sessions: what FOS asks
and answers beyond the driver contract (test_contract.py)."""

from __future__ import annotations

import re
import socket
import time

import pytest
from netmiko import ConnectHandler

from routers.drivers.base import (
    CommandRejected,
    LinkSpec,
    RouterConnectError,
    RouterLink,
    ZoningBusy,
    ZoningChanged,
)
from routers.drivers.brocade_fos import BrocadeFosDriver
from simulators.admin import FabricAdmin, production_in_force
from simulators.faults import Fault
from tests.support.sims import PASSWORD, USERNAME

WWN = "50:00:09:73:98:06:c8:08"
HOST = "10:00:00:10:9b:5e:b0:01"
SPEC = LinkSpec(port=24, zone=7, remote_ip="198.18.1.1", local_ip="198.18.0.1", wwn=WWN, initiators=(HOST,))
ZONE = "fz_z7_ve24_100000109b5eb001_500009739806c808"


@pytest.fixture(params=["ssh", "telnet"])
def transport(request):
    return request.param


@pytest.fixture
def fos(sim_factory):
    return sim_factory("brocade_fos")


def test_rendering_zones_each_initiator_with_the_target_in_the_cfg_in_effect():
    two = LinkSpec(24, 7, "198.18.1.1", "198.18.0.1", WWN, (HOST, "10:00:00:10:9b:5e:b0:02"))
    assert BrocadeFosDriver.render_add(two) == [
        f'zonecreate "{ZONE}", "{HOST}; {WWN}"',
        f'zonecreate "fz_z7_ve24_100000109b5eb002_500009739806c808", "10:00:00:10:9b:5e:b0:02; {WWN}"',
        f'cfgadd "<effective cfg>", "{ZONE}; fz_z7_ve24_100000109b5eb002_500009739806c808"',
        'cfgenable "<effective cfg>"',
        "portcfg fciptunnel 24 create -d flexzone",
        "portcfg fcipcircuit 24 create 0 --local-ip 198.18.0.1 --remote-ip 198.18.1.1",
    ]
    assert any("never replaces or disables it" in note for note in BrocadeFosDriver.render_notes("add", SPEC))


def test_an_add_answers_the_switchs_questions_and_a_remove_leaves_no_tunnel_and_no_zoning(fos, driver_for,
                                                                                          transport):
    driver = driver_for(fos, transport)
    driver.add_link(SPEC)
    transcript = driver.take_transcript()
    assert "Operation Succeeded." in transcript
    assert "(yes, y, no, n): [no] y" in transcript
    driver.remove_link(SPEC)
    state = fos.state().running
    assert state["tunnels"] == {}
    assert state["zoning"]["defined"] == {"cfgs": {}, "zones": {}, "aliases": {}}
    assert state["zoning"]["effective"] is None


def test_a_device_error_becomes_command_rejected_with_the_router_message(fos, driver_for):
    driver = driver_for(fos)
    with pytest.raises(CommandRejected) as caught:
        driver.extension("portcfg fciptunnel 24 delete")
    assert "Unable to locate tunnel 24." in caught.value.router_message


def test_any_output_from_a_zoning_edit_that_is_silent_on_success_is_an_error(fos, driver_for):
    driver = driver_for(fos)
    driver.zoning_edit('zonecreate "fz_probe", "10:00:00:10:9b:5e:c0:01"')  # silent: accepted
    with pytest.raises(CommandRejected) as caught:
        driver.zoning_edit('zoneadd "no_such_zone", "10:00:00:10:9b:5e:c0:02"')
    assert caught.value.router_message == '"no_such_zone" not found'
    with pytest.raises(CommandRejected):
        driver.zoning_edit('zonecreate "fz_probe", "10:00:00:10:9b:5e:c0:03"')  # duplicate name
    driver.close()


def race_before_first_edit(driver, admin_step) -> None:
    """Let another administrator act between the driver's reads and its first zoning edit."""
    first_edit = driver.zoning_edit

    def admin_acts_first(command: str, reads: list[str] | None = None) -> None:
        driver.zoning_edit = first_edit
        admin_step()
        first_edit(command, reads)

    driver.zoning_edit = admin_acts_first


def test_a_transaction_another_session_opens_after_the_check_is_never_aborted(sim_factory, driver_for):
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(fos, "brocade_fos")
    try:
        admin.seed_production()
        driver = driver_for(fos)
        race_before_first_edit(driver, admin.start_edit)  # between our cfgtransshow and our first edit
        with pytest.raises(ZoningBusy):
            driver.add_link(SPEC)
        assert "cfgtransabort" not in driver.take_transcript()
        assert "token" in admin.fos("cfgtransshow")  # the admin's transaction is still open, theirs to finish
        admin.abandon_edit()
        driver.add_link(SPEC)
        assert production_in_force(fos, "brocade_fos")
    finally:
        admin.close()


@pytest.mark.parametrize("change", ["stage", "enable_other"])
def test_zoning_changed_by_someone_else_after_the_read_is_never_put_in_force(sim_factory, driver_for, change):
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(fos, "brocade_fos")
    try:
        admin.seed_production()

        def enable_other() -> None:  # another admin puts a cfg of their own in effect
            admin.fos('cfgcreate "PROD2", "prod_oradb1_vmax"')
            admin.fos_confirmed('cfgenable "PROD2"')

        driver = driver_for(fos)
        race_before_first_edit(driver, admin.stage_change if change == "stage" else enable_other)
        with pytest.raises(CommandRejected if change == "stage" else ZoningChanged):
            driver.add_link(SPEC)
        active = admin.fos("cfgactvshow")
        assert "fz_" not in active and "adm_staged" not in active
        assert ("cfg:\tPROD2" in active) == (change == "enable_other")
        assert "token" not in admin.fos("cfgtransshow")  # our own transaction was dropped
        if change == "enable_other":  # the retry works on what is in effect now
            driver.add_link(SPEC)
            active = admin.fos("cfgactvshow")
            assert "cfg:\tPROD2" in active and ZONE in active
    finally:
        admin.close()


def test_a_zone_named_like_flexzones_but_not_written_by_it_is_never_touched(sim_factory, driver_for):
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(fos, "brocade_fos")
    lookalike = "fz_z07_ve24_100000109b5eb0ff_500009739806c808"  # flexzone never writes a leading zero
    try:
        admin.seed_production()
        admin.fos(f'zonecreate "{lookalike}", "10:00:00:10:9b:5e:b0:ff; {WWN}"')
        admin.fos(f'cfgadd "PROD", "{lookalike}"')
        admin.fos_confirmed('cfgenable "PROD"')
        driver = driver_for(fos)
        driver.add_link(SPEC)
        assert lookalike in admin.fos("cfgactvshow")
        driver.remove_link(SPEC)
        assert lookalike in admin.fos("cfgactvshow") and production_in_force(fos, "brocade_fos")
    finally:
        admin.close()


@pytest.mark.parametrize("transport, pages", [("telnet", True), ("ssh", False)])
def test_listing_reads_long_output_through_the_pager_of_a_telnet_session(sim_factory, driver_for, transport, pages):
    """The older telnet CLI pages long output; FOS 9 SSH sessions print a 70-line cfgshow unpaged."""
    fos = sim_factory("brocade_fos")
    driver = driver_for(fos, transport)
    specs = [LinkSpec(ve, ve, f"198.18.1.{ve}", "198.18.0.1", f"10:00:00:00:c9:aa:bb:{ve:02x}", (HOST,))
             for ve in range(24, 30)]
    for spec in specs:
        driver.add_link(spec)
    driver.take_transcript()
    assert [link.key for link in driver.list_links()] == [spec.key for spec in specs]
    assert (driver.take_transcript().count("Type <CR> to continue, Q<CR> to stop:") >= 3) == pages


def test_a_pager_that_never_ends_is_left_and_the_session_stays_usable(fos, driver_for):
    from routers.drivers.base import GarbledOutput

    driver = driver_for(fos, "telnet")
    driver.add_link(SPEC)
    with pytest.raises(GarbledOutput, match="more than 0 pages"):
        driver.run_paged("portcfgshow fciptunnel all -c", max_pages=0)
    assert driver.list_links() == [RouterLink(24, 7, "198.18.1.1", "up")]


def test_save_config_saves_only_a_transaction_of_its_own(fos, driver_for):
    driver = driver_for(fos)
    driver.zoning_edit('zonecreate "manual", "10:00:00:00:c9:aa:bb:03"')
    assert "manual" not in fos.state().saved["zoning"]["defined"]["zones"]
    driver.save_config()
    assert "manual" in fos.state().saved["zoning"]["defined"]["zones"]
    driver.take_transcript()
    driver.save_config()  # nothing of ours is open: nothing is sent (another session's edit is theirs)
    assert "cfgsave" not in driver.take_transcript()


def test_an_add_cut_off_inside_its_zoning_transaction_leaves_no_zone_and_the_retry_completes(
        sim_factory, driver_for, transport):
    fos = sim_factory("brocade_fos", faults=[Fault("drop_after_apply", match="^zonecreate", count=1)])
    with pytest.raises(RouterConnectError):
        driver_for(fos, transport).add_link(SPEC)
    # The switch dropped the session's open transaction with the session: nothing half-done is kept.
    assert fos.state().running["zoning"]["defined"]["zones"] == {}
    assert fos.links() == []
    driver_for(fos).add_link(SPEC)
    assert fos.links() == [RouterLink(24, 7, "198.18.1.1", "up")]


def test_a_remove_whose_reply_was_lost_is_finished_by_the_retry(sim_factory, driver_for):
    fos = sim_factory("brocade_fos")
    driver_for(fos).add_link(SPEC)
    fos.faults = [Fault("drop_after_apply", match="^cfgdisable", count=1)]
    with pytest.raises(RouterConnectError):
        driver_for(fos).remove_link(SPEC)
    # The tunnel went first, while the link's zones still showed it was flexzone's; the zones wait.
    assert fos.state().running["tunnels"] == {}
    assert ZONE in fos.state().running["zoning"]["defined"]["zones"]
    driver_for(fos).remove_link(SPEC)
    assert fos.state().running["tunnels"] == {}
    assert fos.state().running["zoning"]["defined"] == {"cfgs": {}, "zones": {}, "aliases": {}}


def test_stock_netmiko_brocade_fos_runs_switchshow(fos):
    host, port = fos.addresses["ssh"]
    conn = ConnectHandler(device_type="brocade_fos", host=host, port=port, username=USERNAME, password=PASSWORD,
                          allow_agent=False, use_keys=False, ssh_config_file=None, conn_timeout=10)
    try:
        assert conn.base_prompt == "fos-ext1:admin"
        output = conn.send_command("switchshow")
        assert output.startswith("switchName:fos-ext1\nswitchType:148.0\n")
        assert re.search(r"^\s+24\s+24\s+011800\s+--\s+--\s+Offline\s+VE$", output, re.M)
        assert conn.send_command("frobnicate") == "rbash: frobnicate: command not found"
    finally:
        conn.disconnect()


def test_an_online_tunnel_shows_its_ve_port_online_in_switchshow(fos, driver_for):
    driver = driver_for(fos)
    driver.add_link(SPEC)
    output = driver.run("switchshow")
    assert re.search(r'^\s+24\s+24\s+011800\s+--\s+--\s+Online\s+VE\s+VE-Port\s+\S+ "ext-198-18-1-1"$', output, re.M)


def test_telnet_login_shows_the_fabric_os_banner_and_the_named_login_prompt(fos):
    host, port = fos.addresses["telnet"]
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.settimeout(5)
        data = b""
        deadline = time.monotonic() + 5
        while b"login: " not in data and time.monotonic() < deadline:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    text = re.sub(rb"\xff[\xfb-\xfe].|\xff[^\xfb-\xfe]", b"", data).decode(errors="replace")
    assert "Fabric OS (fos-ext1)" in text
    assert text.rstrip(" ").endswith("fos-ext1 login:")


def test_the_ssh_session_opens_with_the_attention_banner(fos, driver_for):
    driver = driver_for(fos)
    transcript = driver.take_transcript()
    assert "ATTENTION" in transcript
    assert "It is recommended that you change the default passwords" in transcript



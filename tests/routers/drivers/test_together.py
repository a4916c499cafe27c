"""Lines sent together (routers/drivers/together.py): one round trip, each reply its own, never a stale one."""

from __future__ import annotations

import time

import pytest

from routers.drivers.base import RouterConnectError, RouterTimeout, ZoningBusy
from routers.drivers.brocade_fos import LISTING
from routers.drivers.brocade_fos_show import parse_cfgshow, parse_tunnel_table
from routers.drivers.together import one_operation, strip_echo
from simulators.admin import FabricAdmin
from simulators.roundtrips import turns_between
from tests.support.fabric import spec_for
from tests.support.real_layouts import body_of

CFGSHOW = body_of("fos/cfgshow__fos9_aliases_wrapped.txt")
TUNNELS = body_of("fos/portshow_fciptunnel_all_c__7840.txt")
BATCH = ["cfgshow", "portshow fciptunnel all -c"]


def test_a_line_sent_ahead_echoed_inside_the_previous_reply_is_no_part_of_it():
    # The terminal echoes input as it arrives, so on a real switch the second line's echo can land in
    # the middle of the first line's output; each reply still parses as the switch printed it.
    lines = CFGSHOW.replace("\r\n", "\n").split("\n")
    middle = len(lines) // 2
    interleaved = "\r\n".join(["cfgshow", *lines[:middle], BATCH[1], *lines[middle:]])
    assert parse_cfgshow(strip_echo(interleaved, BATCH[0], BATCH)) == parse_cfgshow(CFGSHOW)
    assert parse_tunnel_table(strip_echo(f" {BATCH[1]}\r\n{TUNNELS}", BATCH[1], BATCH)) == parse_tunnel_table(TUNNELS)


def test_a_long_echo_wrapped_with_a_bare_carriage_return_is_taken_off_whole():
    command = "portcfg fcipcircuit 24 create 0 --local-ip 198.18.0.1 --remote-ip 198.18.1.1"
    wrapped = f"{command[:60]}\r{command[60:]}\r\nOperation Succeeded.\r\n"
    assert strip_echo(wrapped, command, [command, "cfgshow"]) == "Operation Succeeded."


def test_reads_sent_together_take_one_round_trip_and_each_gets_its_own_reply(sim_factory, driver_for):
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0), production_zoning=True)
    driver = driver_for(fos)
    one_by_one = driver.zoning(), driver.tunnels()
    before = fos.round_trips()
    with one_operation(driver):
        driver.together(None, BATCH)
        together = driver.zoning(), driver.tunnels()
    assert turns_between(before, fos.round_trips())["commands"] == 1
    assert together == one_by_one and together[0].in_effect == "PROD"


def test_a_reply_read_ahead_is_forgotten_once_anything_else_is_sent(sim_factory, driver_for):
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(fos, "brocade_fos")
    try:
        admin.seed_production()
        driver = driver_for(fos)
        before = driver.zoning()
        driver.together(None, ["cfgshow"])  # read ahead, then the fabric changes
        admin.stage_change()
        driver.run("cfgtransshow")
        assert driver.zoning().configs != before.configs  # read again, not the reply taken before the change
    finally:
        admin.close()


def test_a_paged_fos_session_sends_one_line_at_a_time(sim_factory, driver_for):
    # Over telnet FOS pages long output, and the pager would take a line sent ahead as its answer.
    fos = sim_factory("brocade_fos", telnet=("127.0.0.1", 0), production_zoning=True)
    driver = driver_for(fos)
    before = fos.round_trips()
    links = driver.list_links()
    assert turns_between(before, fos.round_trips())["commands"] >= len(BATCH)
    assert links == []


def test_replies_read_ahead_for_an_add_that_found_the_fabric_busy_never_answer_a_later_read(sim_factory, driver_for):
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(fos, "brocade_fos")
    try:
        admin.seed_production()
        admin.start_edit()
        driver = driver_for(fos)
        with pytest.raises(ZoningBusy):
            driver.add_link(spec_for("brocade_fos"))  # cfgshow and the tunnels were read with cfgtransshow
        admin.abandon_edit()
        admin.stage_change()
        assert "adm_staged" in driver.zoning().configs["PROD"]  # the pooled session reads the switch again
    finally:
        admin.close()


def test_an_mds_listing_after_a_remove_that_waited_for_the_lock_shows_the_switch_as_it_is(mds, mds_admin, driver_for):
    spec = spec_for("cisco_mds")
    mds_admin.seed_production()
    mds_admin.enhanced_mode()
    driver = driver_for(mds)
    driver.add_link(spec)
    mds_admin.start_edit()
    with pytest.raises(ZoningBusy):
        driver.remove_link(spec)  # the fcip configuration and the zoning were read with the zone status
    mds_admin.abandon_edit()
    driver_for(mds).remove_link(spec)  # another flexzone session
    assert spec.key not in {link.key for link in driver.list_links()}


def test_lines_sent_together_share_one_command_timeout(sim_factory, driver_for):
    # Each reply comes within the timeout, all three together do not: the send fails at the timeout.
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    driver = driver_for(fos, command_timeout=1.0)
    fos.timing.command, fos.scale = 0.7, 1.0
    started = time.monotonic()
    with pytest.raises(RouterTimeout):
        driver.together(None, LISTING)
    assert time.monotonic() - started < 2.0  # one at a time, the three reads would take 2.1 s


def test_a_fos_question_while_lines_are_queued_stops_the_send_at_once(sim_factory, driver_for):
    # The line queued behind would go to the question as its answer: the session is dropped instead.
    fos = sim_factory("brocade_fos", ssh=("127.0.0.1", 0))
    admin = FabricAdmin(fos, "brocade_fos")
    try:
        admin.seed_production()
        driver = driver_for(fos)
        started = time.monotonic()
        with pytest.raises(RouterConnectError, match="asked"):
            driver.together('cfgenable "PROD"', ["cfgshow"])
        assert time.monotonic() - started < driver.target.command_timeout
    finally:
        admin.close()

"""An SSH session's set-up as the round trips count it (simulators.roundtrips.SetUp), without sockets; the
drivers' sessions over real SSH are in tests/routers/drivers/test_round_trips.py."""

from __future__ import annotations

from simulators.cisco_mds.personality import MdsPersonality
from simulators.roundtrips import RoundTripBook, SetUp
from simulators.server.terminal import Terminal


def nx_os() -> SetUp:
    return SetUp(MdsPersonality.session_preparation)


def test_empty_lines_and_the_terminal_settings_leave_the_set_up_going():
    set_up = nx_os()
    for sent in ("\n", "terminal width 511\n", "terminal length 0\r\n", "\r", " terminal dont-ask \n\0"):
        set_up.hear(sent, new_turn=True)
    assert not set_up.over


def test_a_line_is_judged_once_its_end_has_arrived_even_in_pieces():
    set_up = nx_os()
    set_up.hear("terminal len", new_turn=True)
    set_up.hear("gth 0\nshow", new_turn=False)
    assert not set_up.over  # `show` may yet be the start of anything
    set_up.hear(" clock\n", new_turn=False)
    assert set_up.over


def test_a_real_command_sent_with_preparation_ends_the_set_up_and_nothing_brings_it_back():
    set_up = nx_os()
    set_up.hear("\nshow clock\n", new_turn=True)
    assert set_up.over
    set_up.hear("terminal length 0\n", new_turn=True)
    assert set_up.over


def test_a_set_up_turn_moved_to_the_commands_leaves_the_totals_whole(tmp_path):
    book = RoundTripBook(tmp_path)
    book.count(1, login=True)
    book.count(1, login=True)
    book.move_to_commands(1)
    assert book.snapshot() == {"login": 1, "commands": 1, "sessions": 1,
                               "per_session": {"1": {"login": 1, "commands": 1}}}
    assert (tmp_path / "roundtrips.json").read_text().startswith('{"login": 1, "commands": 1')


def terminal(book: RoundTripBook) -> Terminal:
    """A logged-in terminal whose output goes nowhere (no event loop: nothing is fragmented)."""
    term = Terminal("ssh", write=lambda _text: None, abort=lambda: None, close=lambda: None,
                    log_line=lambda _line: None, session_id=1, turns=book)
    term.logged_in = True
    term.write("sw# ")
    return term


def test_a_last_line_the_client_closed_after_without_waiting_is_booked_with_the_login(tmp_path):
    book = RoundTripBook(tmp_path)
    term = terminal(book)
    term.feed("show clock\n")
    term.write("10:00\nsw# ")
    term.feed("exit\n")  # the client closes before the router has run it (and so before any answer)
    term.feed(None)
    assert book.snapshot()["per_session"] == {"1": {"login": 1, "commands": 1}}


def test_a_last_turn_the_router_answered_or_of_several_lines_stays_a_command_turn(tmp_path):
    book = RoundTripBook(tmp_path)
    answered = terminal(book)
    answered.feed("show clock\n")
    answered.write("10:00\nsw# ")  # the client may have waited for this
    answered.feed(None)
    assert book.snapshot()["per_session"] == {"1": {"login": 0, "commands": 1}}
    book = RoundTripBook(tmp_path)
    several = terminal(book)
    several.feed("copy running-config startup-config\nexit\n")
    several.feed(None)
    assert book.snapshot()["per_session"] == {"1": {"login": 0, "commands": 1}}

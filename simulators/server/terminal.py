"""What a CLI user sees of a simulated router, whatever the transport: echo, newlines, the prompt, paging,
and the command loop with its timing and command faults.

``Terminal`` is one client connection: characters in, text out. ``SimConsole`` is the ``Console`` a
personality talks to during one command (simulators.personality). ``CommandLoop`` runs a logged-in
session: the stall a fault may put before the first prompt, the message of the day, then prompt, read,
think, run, until the session ends.
"""

from __future__ import annotations

import asyncio
import collections
import random
from collections.abc import Callable
from typing import Protocol

from simulators.faults import FaultBook
from simulators.personality import Personality, Session, TimingProfile
from simulators.roundtrips import RoundTripBook, SetUp


class SessionRouter(Protocol):
    """What a session needs of the router it runs on (a SimRouter, which imports this module): its
    personality, timing, faults and randomness, a timing-scaled pause, and a word when the state changed."""

    personality: Personality
    timing: TimingProfile
    faults_book: FaultBook
    rng: random.Random
    idle_timeout: float | None

    async def pause(self, base: float) -> None: ...

    def state_changed(self) -> None: ...


class SessionEnded(Exception):
    """The client went away (EOF) or the framework ended the session."""


class DropConnection(Exception):
    """A fault fired: cut the connection now, without a goodbye."""


def garble(text: str, rng: random.Random) -> str:
    """Corrupt output as a bad line would: flipped characters and a lost chunk, line breaks kept."""
    chars = list(text)
    for index in range(len(chars)):
        if chars[index] not in "\r\n" and rng.random() < 0.3:
            chars[index] = rng.choice("$&*@~^?!")
    if len(chars) > 8:
        start = rng.randrange(len(chars) // 2)
        del chars[start : start + len(chars) // 4]
    return "".join(chars)


LOGOUT_TEXT = 64  # characters of a turn kept to tell a logout sent alone


class Terminal:
    """One client connection, transport-neutral: a character queue in, text out, newline folding.

    A pump task moves whatever the client sends into a queue; reading lines consumes it and echoes.
    Typeahead sent while the device is "busy" (login delays) can be flushed, as the device discards it.
    """

    def __init__(self, transport: str, write: Callable[[str], None], abort: Callable[[], None],
                 close: Callable[[], None], log_line: Callable[[str], None], session_id: int = 0,
                 turns: RoundTripBook | None = None, set_up: SetUp | None = None) -> None:
        self.transport = transport
        self.session_id = session_id
        self._write = write
        self._abort = abort
        self._close = close
        self._log = log_line
        self._chars: asyncio.Queue[str | None] = asyncio.Queue()
        self._after_cr = False
        self.closed = asyncio.Event()
        self.garbler: random.Random | None = None
        self.fragmenter: random.Random | None = None
        self._send_at = 0.0  # loop time of the last output piece scheduled by fragmentation
        self._pending: collections.deque[tuple[float, str]] = collections.deque()
        self._drainer: asyncio.TimerHandle | None = None
        self._close_when_drained = False
        # Round trips (simulators.roundtrips): the device spoke since the client's last input; the
        # client's next input is then a turn of its own, the login's until `logged_in` and, over SSH,
        # while the session sets up.
        self._turns = turns
        self._set_up = set_up
        self._spoke = False
        self._login_turn = False  # the current turn is booked as the login's
        self._turn_text = ""  # what the client sent in the current turn (the first LOGOUT_TEXT characters)
        self.logged_in = False

    def feed(self, data: str | None) -> None:
        if data is None:
            self._left_unanswered()
            self._chars.put_nowait(None)
            self.closed.set()
            return
        # A NUL alone is netmiko's SSH keepalive (is_alive): it waits for nothing, so it is no turn.
        if data.strip("\0"):
            self._book_turn(data)
        for char in data:
            self._chars.put_nowait(char)

    def _book_turn(self, data: str) -> None:
        """Book input that starts a turn; a set-up turn that turns out to carry a real command is moved to
        the commands."""
        new_turn, self._spoke = self._spoke, False
        self._turn_text = (data if new_turn else self._turn_text + data)[:LOGOUT_TEXT]
        ends_set_up = False
        if self.logged_in and self._set_up is not None and not self._set_up.over:
            self._set_up.hear(data, new_turn)
            ends_set_up = self._set_up.over
        if self._turns is None:
            return
        if new_turn:
            self._login_turn = not self.logged_in or (self._set_up is not None and not self._set_up.over)
            self._turns.count(self.session_id, self._login_turn)
        elif self._login_turn and ends_set_up:
            self._login_turn = False
            self._turns.move_to_commands(self.session_id)

    def ended_by(self, line: str) -> None:
        """The command `line` ended the session: if the turn that carried it sent nothing else, it is the
        session's logout, booked with its login (simulators.roundtrips)."""
        if self._turns is not None and not self._login_turn and self._turn_text.strip() == line:
            self._login_turn = True
            self._turns.move_to_login(self.session_id)

    def _left_unanswered(self) -> None:
        """The client closed the session: a last turn of one line that the router has not answered (a
        logout whose command has not run yet) was waited on by nobody, and is booked with the login."""
        text = self._turn_text.strip()
        if (self._turns is not None and not self._login_turn and not self._spoke and text
                and not any(end in text for end in "\r\n")):
            self._login_turn = True
            self._turns.move_to_login(self.session_id)

    def flush_input(self) -> None:
        while not self._chars.empty():
            if self._chars.get_nowait() is None:
                self._chars.put_nowait(None)
                return
        self._after_cr = False

    def write(self, text: str) -> None:
        if self.closed.is_set() or not text:
            return
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        if self.garbler is not None:
            text = garble(text, self.garbler)
        self._log("> " + text)
        self._spoke = True  # echo (write_raw) is not an answer: the client does not wait for it to send more
        try:
            self._send(text)
        except Exception as exc:  # noqa: BLE001 - a write to a dead peer ends the session
            raise SessionEnded(str(exc)) from exc

    def write_raw(self, text: str) -> None:
        """Echo: not logged, not garbled."""
        if not self.closed.is_set():
            self._send(text)

    def _send(self, text: str) -> None:
        """Write now, or (fragment fault) as 1-6 character pieces 5 ms apart, in order."""
        if self.fragmenter is None and not self._pending:
            self._write(text)
            return
        loop = asyncio.get_running_loop()
        pieces, gap = [text], 0.0
        if self.fragmenter is not None:
            pieces, gap, rest = [], 0.005, text
            while rest:
                size = self.fragmenter.randint(1, 6)
                pieces.append(rest[:size])
                rest = rest[size:]
        for piece in pieces:
            self._send_at = max(self._send_at, loop.time()) + gap
            self._pending.append((self._send_at, piece))
        if self._drainer is None:
            self._drainer = loop.call_at(self._pending[0][0], self._drain)

    def _drain(self) -> None:
        """Write every due piece in FIFO order (timer handles with equal times are not ordered)."""
        loop = asyncio.get_running_loop()
        self._drainer = None
        while self._pending and self._pending[0][0] <= loop.time() + 0.001:
            _, piece = self._pending.popleft()
            try:
                self._write(piece)
            except Exception:  # noqa: BLE001 - the peer went away meanwhile
                self._pending.clear()
        if self._pending:
            self._drainer = loop.call_at(self._pending[0][0], self._drain)
        elif self._close_when_drained:
            self._close()

    async def read_line(self, echo: bool = True, secret: bool = False) -> str:
        """One line; CR LF, CR NUL, CR and LF each end it once. Raises SessionEnded on EOF."""
        line: list[str] = []
        while True:
            char = await self._chars.get()
            if char is None:
                self._chars.put_nowait(None)
                raise SessionEnded("EOF")
            if self._after_cr:
                self._after_cr = False
                if char in "\n\0":
                    continue
            if char in "\r\n":
                self._after_cr = char == "\r"
                self.write_raw("\r\n")
                text = "".join(line)
                self._log("< " + ("*" * 8 if secret else text))
                return text
            if char in "\x08\x7f":
                if line:
                    line.pop()
                    if echo:
                        self.write_raw("\b \b")
                continue
            if char == "\x03":  # ^C abandons the line, as a shell does
                self.write_raw("^C\r\n")
                return ""
            if char < " " and char != "\t":
                continue
            line.append(char)
            if echo:
                self.write_raw(char)

    async def wait_closed(self) -> None:
        await self.closed.wait()

    def abort(self) -> None:
        self.closed.set()
        self._pending.clear()
        if self._drainer is not None:
            self._drainer.cancel()
            self._drainer = None
        self._abort()

    def close(self) -> None:
        """Close gracefully, after any output still queued by fragmentation."""
        if self._pending:
            self._close_when_drained = True
        else:
            self._close()
        self.closed.set()


class SimConsole:
    """The ``Console`` a personality talks to during one command (see simulators.personality)."""

    def __init__(self, router: SessionRouter, terminal: Terminal, session: Session, line: str = "",
                 mutating: bool = False) -> None:
        self.router = router
        self.terminal = terminal
        self.session = session
        self.line = line
        self.mutating = mutating
        self.drop_after_apply = False

    def write(self, text: str) -> None:
        self.terminal.write(text)

    async def ask(self, question: str) -> str:
        self.terminal.write(question)
        return (await self.terminal.read_line()).strip()

    async def page(self, text: str) -> None:
        personality = self.router.personality
        lines = text.splitlines(keepends=True)
        size = max(1, personality.page_lines - 1)
        if not self.session.paging or len(lines) <= size:
            self.write(text)
            return
        for start in range(0, len(lines), size):
            self.write("".join(lines[start : start + size]))
            if start + size >= len(lines):
                break
            self.terminal.write(personality.pager_prompt)
            answer = await self.terminal.read_line(echo=False)
            if answer.strip().lower().startswith("q"):
                break

    async def applied(self) -> None:
        self.router.state_changed()
        if self.drop_after_apply and self.router.faults_book.take(("drop_after_apply",), self.line, self.mutating):
            raise DropConnection("drop_after_apply")

    async def delay(self, seconds: float) -> None:
        """Extra device think time inside a command (e.g. after a confirmation), timing-scaled."""
        await self.router.pause(seconds)


class CommandLoop:
    """A logged-in session: its first prompt, then one command after another until the session ends."""

    def __init__(self, router: SessionRouter, terminal: Terminal, session: Session) -> None:
        self.router = router
        self.terminal = terminal
        self.session = session

    async def run(self) -> None:
        """Raises SessionEnded or DropConnection when the session ends otherwise than by a command."""
        await self._first_prompt_delay()
        self.terminal.logged_in = True
        self.terminal.write(self.router.personality.motd(self.session))
        while True:
            self.terminal.write(self.router.personality.prompt(self.session))
            self.terminal.fragmenter = None
            line = (await self._read_command()).strip()
            if line and not await self._run(line):
                self.terminal.ended_by(line)
                self.terminal.close()
                return

    async def _first_prompt_delay(self) -> None:
        """The device's login time, and a stall_before_prompt fault; typeahead meanwhile is discarded."""
        router = self.router
        await router.pause(router.timing.after_password)
        stall = router.faults_book.take(("stall_before_prompt",))
        if stall is not None:
            if stall.seconds is None:
                await self.terminal.wait_closed()
                raise SessionEnded("stalled")
            await asyncio.sleep(stall.seconds)
        self.terminal.flush_input()

    async def _read_command(self) -> str:
        router = self.router
        if router.idle_timeout is None:
            return await self.terminal.read_line()
        try:
            return await asyncio.wait_for(self.terminal.read_line(), router.idle_timeout)
        except TimeoutError:
            self.terminal.write("\n" + router.personality.idle_message() + "\n")
            raise SessionEnded("idle timeout") from None

    async def _run(self, line: str) -> bool:
        """Think, let the command faults fire, run the command; False when it ended the session."""
        router, terminal, faults = self.router, self.terminal, self.router.faults_book
        mutating = router.personality.is_mutating(self.session, line)
        await router.pause(router.timing.mutating_command if mutating else router.timing.command)
        if faults.take(("drop_before_apply",), line, mutating):
            raise DropConnection("drop_before_apply")
        if faults.take(("stall_command",), line, mutating):
            await terminal.wait_closed()
            raise SessionEnded("stalled mid-command")
        console = SimConsole(router, terminal, self.session, line, mutating)
        console.drop_after_apply = faults.peek("drop_after_apply", line, mutating)
        if faults.take(("garble",), line, mutating):
            terminal.garbler = router.rng
        if faults.take(("fragment",), line, mutating):
            terminal.fragmenter = router.rng  # until the next prompt has been written
        try:
            return await router.personality.execute(self.session, console, line)
        finally:
            terminal.garbler = None
            router.state_changed()

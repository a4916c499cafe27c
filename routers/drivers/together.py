"""Lines sent together: several commands in one send, one WAN round trip, their replies split at the prompts.

A CLI reads its input in order, so lines that need no answer in between can go in one write: the
reads an operation needs before deciding anything, a read after the change it checks, ``end`` after
the last configuration line. The client then waits once, for as many prompts as lines, and gives
each line the text between its echo and the next prompt. What may go together is the driver's
decision (a change whose failure must stop the next line goes alone); this module only sends and
splits.

A reply read ahead is kept only until the next command goes to the router (``NetmikoDriver.show``
takes it; any other exchange forgets it), so a read sent with a change is never taken for a read
made after a later one; and never beyond the public driver operation that sent it (``@operation``):
one ended by an exception (ZoningBusy, say) leaves nothing for the next operation of a pooled session.

The lines of one send share one wait: each line's read gets only the time left of it, so a batch
never outlasts the command timeout (or the operation's time limit) however many lines it holds.

Paging would swallow the next line sent ahead as its answer, so only sessions that do not page send
together (``sends_together``); the others send one line at a time, as before.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from netmiko.base_connection import BaseConnection
from netmiko.exceptions import ReadTimeout

Method = TypeVar("Method", bound=Callable[..., Any])


class ReadsAhead(Protocol):
    _ahead: dict[str, str]
    _operations: int


@contextmanager
def one_operation(driver: ReadsAhead) -> Iterator[None]:
    """A public driver operation: it starts with no reply read ahead and leaves none, however it ends.
    Operations called inside another (add_link reading zoning()) share the outer one's replies."""
    outer = driver._operations == 0
    if outer:
        driver._ahead.clear()
    driver._operations += 1
    try:
        yield
    finally:
        driver._operations -= 1
        if outer:
            driver._ahead.clear()


def operation(method: Method) -> Method:
    """Mark a public driver operation (list_links, add_link, zoning, ...): see one_operation."""
    @functools.wraps(method)
    def wrapper(self: ReadsAhead, *args: Any, **kwargs: Any) -> Any:
        with one_operation(self):
            return method(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


def prompt_at_line_start(base_prompt: str) -> str:
    """The device prompt (any mode: ``sw:admin>``, ``switch(config-zone)#``) where a line starts."""
    return rf"^{re.escape(base_prompt)}\S*[#>]"  # with re.MULTILINE (netmiko wraps patterns: no inline flag)


def strip_echo(reply: str, command: str, batch: Sequence[str]) -> str:
    """A line's reply without its echo. FOS wraps a long echo with a bare CR, and a shell may echo a
    line sent ahead inside the previous reply (the terminal echoes input as it arrives), so whole lines
    repeating a later line of the batch are echo too."""
    text = reply.replace("\r\n", "\n").replace("\n\r", "\n")
    unwrapped = text.replace("\r", "").lstrip(" ")
    if unwrapped.startswith(command):
        text = unwrapped[len(command):]
    else:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    later = {line.strip() for line in batch}
    lines = [line for line in text.split("\n") if line.strip() not in later or not line.strip()]
    return "\n".join(lines).strip("\n")


def send_and_split(conn: BaseConnection, commands: Sequence[str], read_timeout: float,
                   stop: str | None = None) -> tuple[list[str], str]:
    """Write `commands` in one send; read one prompt per line; return each line's reply (echo and prompt
    stripped) and the last prompt. All the lines are read within `read_timeout` (ReadTimeout when it
    runs out). `stop` (a pattern, e.g. a pager or a question) seen before the last prompt raises
    ValueError: the lines still queued went to whatever asked."""
    deadline = time.monotonic() + read_timeout
    conn.write_channel("".join(command + conn.RETURN for command in commands))
    prompt = prompt_at_line_start(conn.base_prompt)
    either = prompt if stop is None else rf"(?:{prompt})|(?:{stop})"
    replies, last = [], ""
    for command in commands:
        left = deadline - time.monotonic()
        if left <= 0:  # netmiko reads for ever when given 0
            raise ReadTimeout(f"{command!r}: no prompt within {read_timeout:g}s of sending {len(commands)} lines")
        text = str(conn.read_until_pattern(pattern=either, read_timeout=left, re_flags=re.M))
        found = re.search(prompt, text, re.M)
        if found is None:
            raise ValueError(f"{command!r}: the device asked {text.strip().splitlines()[-1][:80]!r} while lines "
                             "sent together were queued")
        last = found.group(0)
        replies.append(strip_echo(text[:found.start()], command, commands))
    return replies, last

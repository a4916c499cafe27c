"""How Cisco MDS NX-OS reads a command line: keywords abbreviated to any unambiguous prefix (``conf t``,
``sh int br``), the ``% Invalid command at '^' marker.`` errors with the caret under the word at fault,
and the output pipes ``| no-more``, ``| include X``, ``| exclude X``.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal, overload

from simulators.personality import Console

FCIP_IDS = range(1, 256)
VSAN_IDS = range(1, 4095)
RESERVED_VSANS = (4079, 4094)
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_$^-]{0,63}$")


class CliError(Exception):
    """A parse error: `kind` is Invalid/Incomplete/Invalid number, `position` indexes the command line."""

    def __init__(self, kind: str, position: int) -> None:
        super().__init__(kind)
        self.kind = kind
        self.position = position


class Words:
    """The tokens of one command line with their column positions (for the '^' marker)."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.items = [(m.group(), m.start()) for m in re.finditer(r"\S+", line)]
        self.index = 0

    def more(self) -> bool:
        return self.index < len(self.items)

    def peek(self) -> str | None:
        return self.items[self.index][0] if self.more() else None

    def position(self) -> int:
        return self.items[self.index][1] if self.more() else len(self.line.rstrip()) + 1

    @overload
    def keyword(self, *choices: str, optional: Literal[False] = False) -> str: ...
    @overload
    def keyword(self, *choices: str, optional: bool) -> str | None: ...

    def keyword(self, *choices: str, optional: bool = False) -> str | None:
        """Consume one keyword, accepting any unambiguous prefix (NX-OS parser behaviour)."""
        if not self.more():
            if optional:
                return None
            raise CliError("Incomplete command", self.position())
        word = self.items[self.index][0].lower()
        matches = [c for c in choices if c == word] or [c for c in choices if c.startswith(word)]
        if len(matches) != 1:
            if optional:
                return None
            raise CliError("Invalid command" if not matches else "Ambiguous command", self.position())
        self.index += 1
        return matches[0]

    def value(self) -> str:
        if not self.more():
            raise CliError("Incomplete command", self.position())
        word = self.items[self.index][0]
        self.index += 1
        return word

    def number(self, valid: range) -> int:
        position = self.position()
        word = self.value()
        if not word.isdigit() or int(word) not in valid:
            raise CliError("Invalid number" if word.isdigit() else "Invalid command", position)
        return int(word)

    def address(self) -> str:
        position = self.position()
        word = self.value()
        try:
            return str(ipaddress.IPv4Address(word))
        except ValueError:
            raise CliError("Invalid ip address", position) from None

    def name(self) -> str:
        position = self.position()
        word = self.value()
        if not NAME_RE.match(word):
            raise CliError("Invalid command", position)
        return word

    def rest(self) -> str:
        if not self.more():
            raise CliError("Incomplete command", self.position())
        start = self.items[self.index][1]
        self.index = len(self.items)
        return self.line[start:].strip()

    def end(self) -> None:
        if self.more():
            raise CliError("Invalid command", self.position())


def fcip_interface(words: Words, enabled: bool) -> int:
    """An fcip interface written ``fcip5`` or ``fcip 5`` (any prefix of ``fcip``); with the feature off
    the keyword does not exist."""
    position = words.position()
    word = words.value().lower()
    if not enabled or not "fcip".startswith(re.sub(r"\d+$", "", word) or "x"):
        raise CliError("Invalid interface format" if enabled else "Invalid command", position)
    digits = re.sub(r"^[a-z]+", "", word)
    if not digits:
        return words.number(FCIP_IDS)
    if not digits.isdigit() or int(digits) not in FCIP_IDS:
        raise CliError("Invalid interface format", position)
    return int(digits)


class Sink:
    """Collects a command's output so pipes (`| include`, `| no-more`) can filter it before paging."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.parts: list[str] = []
        self.changed = False

    def write(self, text: str) -> None:
        self.parts.append(text)

    async def ask(self, question: str) -> str:
        """A confirmation question: what the command said so far must reach the screen before it."""
        self.console.write(self.text)
        self.parts.clear()
        return await self.console.ask(question)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def split_pipes(line: str) -> tuple[str, list[str]]:
    command, *pipes = line.split("|")
    return command, [pipe.strip().lower() if pipe.strip().lower().startswith("no") else pipe.strip()
                     for pipe in pipes]


def apply_pipes(text: str, pipes: list[str]) -> str:
    for pipe in pipes:
        word, _, argument = pipe.partition(" ")
        if "include".startswith(word.lower()) or word.lower() == "grep":
            text = "".join(line for line in text.splitlines(keepends=True) if argument.strip() in line)
        elif "exclude".startswith(word.lower()):
            text = "".join(line for line in text.splitlines(keepends=True) if argument.strip() not in line)
    return text

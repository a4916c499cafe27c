"""The router platforms flexzone drives, the transports it reaches them over, and the WWN rule.

Defined once, here, in plain Python (``routers`` never imports Django): the registry stores a
platform's and a transport's value and shows its label (``choices()`` gives a model field's
choices), and validates WWNs with the same pattern the drivers check before anything reaches a
router command line.
"""

from __future__ import annotations

import re
from enum import StrEnum


class LabelledEnum(StrEnum):
    """A str enum whose members carry a human label beside the value the registry stores."""

    label: str

    # Every member names its label; the default only lets a type checker read `Platform(value)` as what it
    # is, the lookup of a member by its stored value (which the enum's metaclass does without this method).
    def __new__(cls, value: str, label: str = "") -> LabelledEnum:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label
        return member


class Platform(LabelledEnum):
    """A router family flexzone has a driver (routers/drivers/) and a simulator (simulators/) for."""

    MCDATA_ECLIPSE = "mcdata_eclipse", "McData Eclipse (iFCP, telnet)"
    NISHAN_IPS3000 = "nishan_ips3000", "Nishan IPS 3000 (iFCP, telnet)"
    BROCADE_FOS = "brocade_fos", "Brocade FOS (FCIP, SSH)"
    CISCO_MDS = "cisco_mds", "Cisco MDS (FCIP, SSH)"


class Transport(LabelledEnum):
    """How flexzone reaches a router's management CLI."""

    TELNET = "telnet", "telnet"
    SSH = "ssh", "SSH"


def choices(kind: type[LabelledEnum]) -> list[tuple[str, str]]:
    """(value, label) pairs, as a Django field's ``choices`` takes them."""
    return [(member.value, member.label) for member in kind]


# A WWN (a Fibre Channel port's World Wide Name) is stored and sent in one form: eight lower-case
# hex bytes joined by colons. The pattern is also the registry's database check.
WWN_PATTERN = r"^[0-9a-f]{2}(:[0-9a-f]{2}){7}$"
WWN_RE = re.compile(WWN_PATTERN)
WWN_MESSAGE = "A WWN is eight lower-case colon-separated hex bytes, e.g. 21:00:00:e0:8b:0e:95:17."
# What a switch CLI accepts as a WWN (either letter case); the simulators parse members with it.
WWN_ANY_CASE_RE = re.compile(WWN_PATTERN, re.IGNORECASE | re.ASCII)
WWN_ANY_CASE_PATTERN = r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){7}$"  # the same, as a schema states it


def normalize_wwn(value: str) -> str:
    """The canonical (lower-case) form of a WWN typed in any letter case; ValueError naming the rule."""
    text = (value or "").strip()
    if not WWN_ANY_CASE_RE.fullmatch(text):
        raise ValueError(f"A WWN is eight colon-separated hex bytes, e.g. 21:00:00:e0:8b:0e:95:17; got {value!r}.")
    return text.lower()

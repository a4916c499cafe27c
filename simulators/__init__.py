"""CLI simulators of storage routers: real telnet/SSH servers with platform personalities.

``PERSONALITIES`` maps a platform name (routers.platforms.Platform) to its Personality class. Each
platform lives in a module of its own and is imported on first use, so one platform's missing or
broken module never stops the others from running, and importing this package (say, for
simulators.loop) costs nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from routers.platforms import Platform

if TYPE_CHECKING:
    from simulators.personality import Personality

PLATFORM_MODULES: dict[str, str] = {
    Platform.MCDATA_ECLIPSE.value: "simulators.mcdata_eclipse",
    Platform.NISHAN_IPS3000.value: "simulators.nishan_ips3000",
    Platform.BROCADE_FOS.value: "simulators.brocade_fos",
    Platform.CISCO_MDS.value: "simulators.cisco_mds",
}


def personality_class(platform: str) -> type[Personality]:
    """Import the platform's module and return the Personality subclass whose `platform` matches."""
    from simulators.personality import Personality

    try:
        module_name = PLATFORM_MODULES[platform]
    except KeyError:
        raise ValueError(f"platform: must be one of {', '.join(PLATFORM_MODULES)}, got {platform!r}") from None
    module = importlib.import_module(module_name)
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Personality) and getattr(value, "platform", None) == platform:
            return value
    raise LookupError(f"{module_name} defines no Personality with platform = {platform!r}")


class _LazyPersonalities(Mapping[str, "type[Personality]"]):
    """Platform name -> Personality class, importing each module only when asked for."""

    def __getitem__(self, platform: str) -> type[Personality]:
        if platform not in PLATFORM_MODULES:
            raise KeyError(platform)
        return personality_class(platform)

    def __iter__(self) -> Iterator[str]:
        return iter(PLATFORM_MODULES)

    def __len__(self) -> int:
        return len(PLATFORM_MODULES)


PERSONALITIES: Mapping[str, type[Personality]] = _LazyPersonalities()


def available_platforms() -> list[str]:
    """The platforms whose personality module imports cleanly right now."""
    found = []
    for platform in PLATFORM_MODULES:
        try:
            personality_class(platform)
        except (ImportError, LookupError):
            continue
        found.append(platform)
    return found

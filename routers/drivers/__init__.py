"""Router drivers, one module per platform, and the dispatch map from platform name to class.

``DRIVERS`` holds every platform whose module imports; ``get_driver(target)`` returns a driver for
a RouterTarget. The FOS and MDS modules are imported if present, so the map is complete once they
exist and still usable before.
"""

from __future__ import annotations

import importlib
import logging

from routers.drivers.base import Platform, RouterDriver, RouterTarget

log = logging.getLogger(__name__)

DRIVER_MODULES: dict[Platform, str] = {
    Platform.MCDATA_ECLIPSE: "routers.drivers.mcdata_eclipse",
    Platform.NISHAN_IPS3000: "routers.drivers.nishan_ips3000",
    Platform.BROCADE_FOS: "routers.drivers.brocade_fos",
    Platform.CISCO_MDS: "routers.drivers.cisco_mds",
}


def _driver_class(platform: Platform, module_name: str) -> type[RouterDriver] | None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        return None
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, RouterDriver)
            and value.__module__ == module_name
            and getattr(value, "platform", None) == platform
        ):
            return value
    log.warning("%s defines no RouterDriver for %s", module_name, platform)
    return None


DRIVERS: dict[Platform, type[RouterDriver]] = {
    platform: cls
    for platform, module_name in DRIVER_MODULES.items()
    if (cls := _driver_class(platform, module_name)) is not None
}


def get_driver(target: RouterTarget) -> RouterDriver:
    """A driver (not yet connected) for the target's platform."""
    try:
        cls = DRIVERS[Platform(target.platform)]
    except (KeyError, ValueError):
        raise ValueError(f"platform: no driver for {target.platform!r} (have {', '.join(DRIVERS)})") from None
    return cls(target)

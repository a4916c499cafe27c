"""Router drivers, one module per platform, and the dispatch map from platform to driver class.

``DRIVERS`` names the driver of every platform in routers.platforms; ``get_driver(target)`` returns
one (not yet connected) for a RouterTarget. The contract they all keep is routers/drivers/base.py.
"""

from __future__ import annotations

from routers.drivers.base import RouterDriver, RouterTarget
from routers.drivers.brocade_fos import BrocadeFosDriver
from routers.drivers.cisco_mds import CiscoMdsDriver
from routers.drivers.mcdata_eclipse import EclipseDriver
from routers.drivers.nishan_ips3000 import NishanDriver
from routers.platforms import Platform

DRIVERS: dict[str, type[RouterDriver]] = {  # keyed by Platform, whose members are the stored strings
    Platform.MCDATA_ECLIPSE: EclipseDriver,
    Platform.NISHAN_IPS3000: NishanDriver,
    Platform.BROCADE_FOS: BrocadeFosDriver,
    Platform.CISCO_MDS: CiscoMdsDriver,
}


def get_driver(target: RouterTarget) -> RouterDriver:
    """A driver (not yet connected) for the target's platform."""
    try:
        cls = DRIVERS[target.platform]
    except KeyError:
        raise ValueError(f"platform: no driver for {target.platform!r} (have {', '.join(DRIVERS)})") from None
    return cls(target)

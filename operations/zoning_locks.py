"""Cisco MDS enhanced-mode zone locks a session of flexzone's may hold, recorded in the database.

The MDS driver frees a leftover lock only when it knows the lock is flexzone's own: a session of ours
was seen to take it, or may have (cisco_mds_guard). That knowledge was one process's; a worker that
died in the middle of a zoning change left a lock that no other process knew was flexzone's, so every
later change, flexzone's and the fabric's other admins', waited for a person to clear it. Recording
the lock here (before the session sends what may take it) lets the next session of any process free
it, still only when the switch names flexzone's account as its holder.
"""

from __future__ import annotations

from functools import partial

from operations.models import ZoningLock
from registry.models import Router
from routers.drivers.base import RouterDriver
from routers.drivers.cisco_mds_guard import ZoneLocks


def bind(driver: RouterDriver, router: Router) -> None:
    """Before a step: tell an MDS session which locks flexzone recorded on this switch, and record
    what it takes and frees from now on."""
    if not isinstance(driver, ZoneLocks):
        return
    for vsan in ZoningLock.objects.filter(router_id=router.pk).values_list("vsan", flat=True):
        driver.adopt_left_lock(vsan)
    driver.on_lock_record = partial(_record, router.pk)


def _record(router_id: int, vsan: int, holding: bool) -> None:
    if holding:
        ZoningLock.objects.get_or_create(router_id=router_id, vsan=vsan)
    else:
        ZoningLock.objects.filter(router_id=router_id, vsan=vsan).delete()

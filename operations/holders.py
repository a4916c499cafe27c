"""Who holds what: a site's locks on devices, and the links those locks need.

A link is up on the routers while at least one lock of its site needs it (a device of the link's
zone and owner). Locks are taken at submit and again when an add runs (a remove queued before it
may have released them), renewed by a repeated add, and released by the remove that ends the last
link of a device for its site.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from operations.errors import DeviceBusy
from operations.models import Operation
from registry.models import Device, DeviceLock, Link, Site


class LockableDevice(NamedTuple):
    pk: int
    description: str
    shareable: bool


def lockable_devices(plan: dict[str, Any], expires_at=None) -> list[LockableDevice]:
    """Row-lock the plan's devices and return those the requesting site must still lock.

    Raises DeviceBusy if another site holds one exclusively (or any lock on a device that is not
    shareable). A lock the site already holds is kept, its expiry moved to `expires_at` if given.
    """
    ids = plan_ids(plan)  # a V1 addifcp too: its link serves the inferred site, which holds the device
    site_id = ids["site"]
    device_ids = sorted(pk for pk, _zone_id in ids["devices"].values())
    in_list = ", ".join(["%s"] * len(device_ids))
    # Two statements, in this order: the device rows must be locked before their locks are read (a
    # statement sees the rows committed when it started). Plain SQL because both run on every add.
    for_update = " FOR UPDATE" if connection.features.has_select_for_update else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, description, shareable FROM registry_device WHERE id IN ({in_list}) ORDER BY id{for_update}",
            device_ids,
        )
        devices = [LockableDevice(*row) for row in cursor.fetchall()]
        cursor.execute(
            "SELECT held.id, held.device_id, held.site_id, held.exclusive, site.name"
            " FROM registry_devicelock AS held JOIN registry_site AS site ON site.id = held.site_id"
            f" WHERE held.device_id IN ({in_list}) ORDER BY held.id",
            device_ids,
        )
        held: dict[int, list[tuple]] = {}
        for lock in cursor.fetchall():
            held.setdefault(lock[1], []).append(lock)
    wanted = []
    for device in devices:
        locks = held.get(device.pk, [])
        mine = [lock_id for lock_id, _device, holder, _exclusive, _name in locks if holder == site_id]
        others = [(name, exclusive) for _id, _device, holder, exclusive, name in locks if holder != site_id]
        if mine:
            if expires_at is not None:
                DeviceLock.objects.filter(pk=mine[0]).update(expires_at=expires_at)
            continue
        if others and (not device.shareable or any(exclusive for _name, exclusive in others)):
            raise DeviceBusy("device", f"{device.description} is locked by {others[0][0]}; disconnect it there first.")
        wanted.append(device)
    return wanted


def plan_ids(plan: dict[str, Any]) -> dict[str, Any]:
    """The row ids the planner resolved; plans journaled before it recorded them are resolved by name."""
    if plan.get("ids"):
        return plan["ids"]
    devices = Device.objects.filter(description__in=plan["devices"])
    plan["ids"] = {
        "site": Site.objects.get(name=plan["site"]).pk,
        "devices": {device.description: [device.pk, device.zone_id] for device in devices},
    }
    return plan["ids"]


def lock_devices(op: Operation, plan: dict[str, Any], devices: list[LockableDevice], expires_at=None) -> None:
    """Write the requesting site's locks on `devices` (already row-locked by `lockable_devices`)."""
    if not devices:
        return
    site_id = plan_ids(plan)["site"]
    locks = [
        DeviceLock(
            device_id=device.pk,
            site_id=site_id,
            exclusive=not device.shareable,
            expires_at=expires_at,
            operation=op,
            reason=f"operation {op.pk}",
        )
        for device in devices
    ]
    try:
        DeviceLock.objects.bulk_create(locks)
    except IntegrityError:  # the database's own rule, should the row lock ever be bypassed
        raise DeviceBusy("device", f"{devices[0].description} is locked by another site.") from None


def take_locks(op: Operation, plan: dict[str, Any], expires_at=None) -> None:
    """Lock each planned device for the requesting site; refuse if another site holds it exclusively."""
    with transaction.atomic():
        lock_devices(op, plan, lockable_devices(plan, expires_at), expires_at)


_OTHER_HOLDER_SQL = """
    SELECT held.device_id FROM registry_devicelock AS held JOIN registry_device AS device ON device.id = held.device_id
     WHERE held.site_id = %s AND device.zone_id = %s AND device.owner_site_id = %s AND NOT held.device_id = ANY(%s)
     ORDER BY held.device_id LIMIT 1
"""


def other_holder(link: Link, site_id: int, leaving: list[int]) -> int | None:
    """A device the site still holds a lock on that this link serves (same zone and owner), if any.
    Plain SQL on PostgreSQL: every remove asks (see `python -m bench ops`)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_OTHER_HOLDER_SQL, [site_id, link.zone_id, link.device.owner_site_id, list(leaving)])
            row = cursor.fetchone()
        return row[0] if row else None
    return (
        DeviceLock.objects.filter(site_id=site_id, device__zone_id=link.zone_id,
                                  device__owner_site_id=link.device.owner_site_id)
        .exclude(device_id__in=leaving)
        .order_by("device_id")
        .values_list("device_id", flat=True)
        .first()
    )


def holders_expiries(site_id: int, zone_id: int, owner_site_id: int, excluding: list[int]) -> list[datetime | None]:
    """The lease expiries of the site's other locks that one link serves (same zone and owner)."""
    return list(
        DeviceLock.objects.filter(site_id=site_id, device__zone_id=zone_id, device__owner_site_id=owner_site_id)
        .exclude(device_id__in=excluding)
        .values_list("expires_at", flat=True)
    )


def link_lease(expiries: list[datetime | None]) -> datetime | None:
    """A link shared by several holders lasts as long as the longest of them: none if any holds it
    without a lease, else the latest expiry."""
    if not expiries or any(expiry is None for expiry in expiries):
        return None
    return max(expiries)


def mark_down(link_ids: list[int], now: datetime | None = None) -> None:
    now = now or timezone.now()
    Link.objects.filter(pk__in=link_ids).update(state=Link.State.DOWN, down_at=now, updated_at=now)

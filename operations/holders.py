"""Who holds what: a site's locks on devices, and the links those locks need.

A link is up on the routers while at least one lock needs it: a hold of a device of the link's zone
between the link's two sites (the one that asked and the device's owner), whichever of them asked.
Locks are taken at submit and again when an add runs (a remove queued before it may have released
them), renewed by a repeated add, and released by the remove that ends the last link of a device
for its site.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from operations.desired import desired_links, plan_initiators, registry_facts
from operations.errors import DeviceBusy
from operations.models import Grant, Link, Operation
from operations.planner import PlanError, plan_request
from registry import in_use
from registry.models import Device, Host, Initiator, Site

# Plain SQL names its tables from the models: each app owns its tables.
LOCK, DEVICE, SITE = (model._meta.db_table for model in (Grant, Device, Site))

class LockableDevice(NamedTuple):
    pk: int
    description: str
    shareable: bool


def lockable_devices(plan: dict[str, Any]) -> list[LockableDevice]:
    """Row-lock the plan's devices and return those the requesting site must still lock.

    Raises DeviceBusy if another site holds one exclusively (or any lock on a device that is not
    shareable). A lock the site already holds is kept as it is: a renewal's new expiry is written in
    the commit that ends the add, and only if the add succeeded (journal.finish), never before a router
    step, so that a renewal that fails leaves the lease as it was.
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
            f"SELECT id, description, shareable FROM {DEVICE} WHERE id IN ({in_list}) ORDER BY id{for_update}",
            device_ids,
        )
        devices = [LockableDevice(*row) for row in cursor.fetchall()]
        cursor.execute(
            "SELECT held.id, held.device_id, held.site_id, held.exclusive, site.name"
            f" FROM {LOCK} AS held JOIN {SITE} AS site ON site.id = held.site_id"
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
        Grant(
            device_id=device.pk,
            site_id=site_id,
            exclusive=not device.shareable,
            expires_at=expires_at,
            operation=op,
            reason=f"operation {op.pk}",
            initiators=plan_initiators(plan),
        )
        for device in devices
    ]
    try:
        Grant.objects.bulk_create(locks)
    except IntegrityError:  # the database's own rule, should the row lock ever be bypassed
        raise DeviceBusy("device", f"{devices[0].description} is locked by another site.") from None


def registry_held_still() -> None:
    """`in_use.held_still` for a request about to plan and take grants, in its transaction and before any
    device row is locked (an edit takes the same lock first, then the row); DeviceBusy if an edit's
    transaction keeps the registry longer than that waits."""
    if not in_use.held_still(connection):
        raise DeviceBusy("site", "The registry is being edited (a transaction holds values this request is "
                                 "planned with); nothing was sent to any router: try again in a moment.")


def take_locks(op: Operation, plan: dict[str, Any], expires_at=None) -> None:
    """Lock each planned device for the requesting site at run time; refuse (DeviceBusy) if another site
    holds it exclusively. A lock to take again (a remove queued before this add released it) is taken
    as a submit takes one (`in_use.held_still`), and only if the registry still plans the same links: while
    nobody held the device its values could be edited, and the links must not be made with old ones."""
    with transaction.atomic():
        registry_held_still()
        devices = lockable_devices(plan)
        if devices and _planned_otherwise(op, plan):
            raise DeviceBusy("site", "The registry changed since this connect was planned (a value its links "
                                     "would be made with was edited while no site held the device); nothing was "
                                     "sent to any router: submit it again.")
        lock_devices(op, plan, devices, expires_at)


def _planned_otherwise(op: Operation, plan: dict[str, Any]) -> bool:
    """Whether the request, planned again now, names other links than `plan` (or cannot be planned)."""
    try:
        again = plan_request(op.kind, op.request)
    except PlanError:
        return True

    def links(planned: dict[str, Any]) -> list[tuple]:
        return [(step["router_id"], step["port"], step["zone"], step["remote_ip"], step["local_ip"],
                 step.get("vsan"), tuple(step.get("initiators", []))) for step in planned["steps"]]

    return links(again) != links(plan)


def between(one: int, other: int) -> Q:
    """Locks or links whose site and device owner are these two sites, either way round."""
    return Q(site_id=one, device__owner_site_id=other) | Q(site_id=other, device__owner_site_id=one)


def _served_by(link: Link, site_id: int, leaving: list[int]):
    """The settled locks, other than `site_id`'s on `leaving`, whose holds `link` serves (same zone,
    same two sites)."""
    return (
        Grant.objects.filter(between(link.site_id, link.device.owner_site_id), device__zone_id=link.zone_id)
        .exclude(site_id=site_id, device_id__in=leaving)
        .exclude(operation__state__in=(Operation.State.QUEUED, Operation.State.RUNNING))
    )


def holders_expiries(link: Link, site_id: int, excluding: list[int]) -> list[datetime | None]:
    """The lease expiries of the other holds this link serves (all but `site_id`'s on `excluding`)."""
    return list(_served_by(link, site_id, excluding).values_list("expires_at", flat=True))


def link_lease(expiries: list[datetime | None]) -> datetime | None:
    """A link shared by several holders lasts as long as the longest of them: none if any holds it
    without a lease, else the latest expiry."""
    known = [expiry for expiry in expiries if expiry is not None]
    if not known or len(known) < len(expiries):
        return None
    return max(known)


def mark_down(link_ids: list[int], now: datetime | None = None) -> None:
    now = now or timezone.now()
    Link.objects.filter(pk__in=link_ids).update(state=Link.State.DOWN, down_at=now, updated_at=now)


def renewed_since(op: Operation) -> str | None:
    """Why an expiry finds its lease renewed (None: it does not, and the expiry goes ahead).

    Renewed is an add of the expiry's site and device that ended after the expiry was queued (it gave
    the site a new lease, or none), or a lock of theirs that now expires later than the lease the
    expiry was queued for (which also covers a renewal whose end was being written as the sweep ran).
    """
    devices = set(op.plan.get("devices", []))
    renewals = Operation.objects.filter(kind=Operation.Kind.ADD, state=Operation.State.SUCCEEDED,
                                        finished_at__gt=op.created_at, plan__site=op.plan.get("site"))
    for pk, plan in renewals.order_by("-finished_at").values_list("pk", "plan"):
        if devices & set(plan.get("devices", [])):
            return f"renewed by operation {pk}"
    ids, expired_at = plan_ids(op.plan), op.request.get("lease_expired_at")
    if not expired_at:  # not queued by the lease sweep for a lease that ran out
        return None
    later = Grant.objects.filter(site_id=ids["site"], device_id__in=[pk for pk, _ in ids["devices"].values()],
                                      expires_at__gt=expired_at)
    until = later.order_by("-expires_at").values_list("expires_at", flat=True).first()
    return f"renewed until {until.isoformat()}" if until else None


def _locks_zoning(hosts: Sequence[int]) -> list[int]:
    """The locks of the hosts' sites whose FCIP links zone one of the hosts' initiators."""
    wwns = set(Initiator.objects.filter(host__in=hosts).values_list("wwn", flat=True))
    site_ids = set(Host.objects.filter(pk__in=hosts).values_list("site_id", flat=True))
    if not wwns:
        return []
    zoning = {(site, device) for wants in desired_links(*registry_facts(site_ids)).values() for want in wants.values()
              if any(initiator in wwns for initiator, _target in want.pairs) for site, device in want.grants}
    held = Grant.objects.filter(site__in=site_ids).values_list("pk", "site_id", "device_id")
    return [pk for pk, site, device in held if (site, device) in zoning]


def holding_through(subject: in_use.Subject, *, sites: Sequence[int] = (), hosts: Sequence[int] = (),
                    routers: Sequence[int] = (), devices: Sequence[int] = ()) -> list[str]:
    """"<site> holds <device>" for each lock and each active link made with a registry value of the
    subject (the registry's `in_use` rule asks before an edit of such a value is saved)."""
    Subject = in_use.Subject
    if subject == Subject.SITE:
        locks = Grant.objects.filter(Q(site__in=sites) | Q(device__owner_site__in=sites))
        links = Link.active().filter(Q(site__in=sites) | Q(device__owner_site__in=sites) | Q(router__site__in=sites))
    elif subject == Subject.HOST:
        # The active FCIP links of the host's site zone its initiators (an iFCP gateway zones by
        # itself, and a queued connect zones the initiators its plan took), and so do the links its
        # site's grants share with other grants (recorded under another site's hold).
        locks = Grant.objects.filter(pk__in=_locks_zoning(hosts))
        links = Link.active().filter(site__hosts__in=hosts).exclude(initiators=[])
    elif subject == Subject.ROUTER:
        locks = Grant.objects.filter(Q(site__in=sites) | Q(device__owner_site__in=sites))
        links = Link.active().filter(Q(router__site__in=sites) | Q(router__in=routers))
    else:
        locks = Grant.objects.filter(device__in=devices)
        links = Link.active().filter(device__in=devices)
    pairs = set(locks.values_list("site__name", "device__description"))
    pairs |= set(links.values_list("site__name", "device__description"))
    return [f"{site} holds {device}" for site, device in sorted(pairs)]

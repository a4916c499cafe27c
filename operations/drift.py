"""Drift between the registry and a router, and its repair.

Runs while the router is held (no operation can be mid-step on it). Links whose operation is still
queued or running (with a live heartbeat) are left alone: they are in flight, not drift.

- missing: the registry says `up`, the router does not have it;
- extra: the router has it, no active registry record;
- mismatched: both have it but the router reports it not up, or (FCIP) its zones hold other
  initiators or targets than the registry configured, or the record is stuck in
  `configuring`/`removing` with no live operation behind it.

The routers' side is what their drivers list: flexzone's own links and zones only. Zoning that
flexzone did not create is never reported, changed or removed here, by a check or a repair.

Repair with policy "registry" (the default) makes the router match the registry: re-add missing and
mismatched links (the drivers converge a link's zones), remove extras, finish stuck records by
rolling back (`configuring` -> removed, `failed`) or completing (`removing` -> removed, `down`).
Policy "router" makes the registry match the router.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from operations.conf import ops_settings
from operations.converge import link_pairs, record_pairs
from operations.desired import Want, desired_settled_and_pending, holds_text, needed_pairs
from operations.holders import between
from operations.journal import Run
from operations.models import Grant, Link, Operation
from operations.planner import router_vsan
from operations.pool import Lease
from operations.steps import change
from registry.models import Device, Router, Site, Zone
from routers.drivers import DRIVERS
from routers.drivers.base import LinkSpec, RouterLink, pairs_spec


def _key(link: Link) -> tuple[int, int, str]:
    return link.key


def _applied(router: Router, key: tuple[int, int, str]) -> dict[str, Any]:
    """The applied values of a link on `router` with `key` as the router lists it (a record written from
    what the router carries)."""
    return {"zone_number": key[1], "local_ip": router.site.data_ip, "vsan": router_vsan(router)}


def _in_flight(link: Link) -> bool:
    op = link.operation
    if op is None or op.state not in (Operation.State.QUEUED, Operation.State.RUNNING):
        return False
    if op.state == Operation.State.QUEUED:
        return True
    stale = timezone.now() - timedelta(seconds=ops_settings().stale_after)
    return op.heartbeat_at is not None and op.heartbeat_at >= stale


def _spec(router: Router, key: tuple[int, int, str], link: Link | None,
          pairs: set[tuple[str, str]] | None = None) -> LinkSpec:
    """The link as the driver takes it: on FCIP zoning `pairs`, else what its record says was applied
    (its own address and VSAN; the router's now where the record has none)."""
    port, zone, remote_ip = key
    pairs = pairs or (link_pairs(link) if link is not None else set())
    local_ip = (link.local_ip if link is not None else None) or router.site.data_ip
    vsan = (link.vsan if link is not None else None) or router_vsan(router) or 1
    if pairs and DRIVERS[router.platform].zones_initiators:
        return pairs_spec(port, zone, remote_ip, local_ip=local_ip, pairs=pairs, vsan=vsan)
    return LinkSpec(port=port, zone=zone, remote_ip=remote_ip, local_ip=local_ip,
                    wwn=link.device.wwn if link is not None else None, vsan=vsan)


def _members(row: Link, found: RouterLink, zoning: bool) -> dict[str, Any]:
    if not zoning:
        return {}
    return {"registry_pairs": sorted(map(list, link_pairs(row))), "router_pairs": [list(p) for p in found.pairs],
            "router_initiators": list(found.initiators), "router_targets": list(found.targets)}


def _members_differ(row: Link, found: RouterLink) -> bool:
    """FCIP: whether the switch zones other (initiator, target) pairs with this link than flexzone applied."""
    return link_pairs(row) != set(found.pairs)


def _describe(key: tuple[int, int, str], **extra: Any) -> dict[str, Any]:
    return {"port": key[0], "zone": key[1], "remote_ip": key[2], **extra}


def reconcile_router(run: Run, router: Router, lease: Lease, repair: bool, policy: str,
                     settle_only: bool = False, ending: Ending | None = None) -> dict[str, Any]:
    """Compare the router with the registry and, with `repair`, converge it (see the module's doc).
    `ending`: an operation that failed and is ending (`settle_routers`), whose records are settled as if
    it had ended, as if the grants it names had ended too; the grants are its to end or keep."""
    driver = lease.driver
    actual = {link.key: link for link in driver.list_links()}
    rows = list(
        Link.objects.filter(router=router, state__in=Link.ACTIVE_STATES).select_related("zone", "operation", "device")
    )
    # The settle chore leaves every queued or running operation's records alone, heartbeat or not
    # (a stall is the reaper's to find); a person's reconcile takes over a stalled one's.
    live = (Operation.State.QUEUED, Operation.State.RUNNING)
    in_flight = {_key(row) for row in rows if (ending is None or row.operation_id != ending.op) and (
        _in_flight(row) or (settle_only and row.operation is not None and row.operation.state in live))}
    settled = [row for row in rows if _key(row) not in in_flight]
    recorded = {_key(row) for row in rows}
    up = {_key(row): row for row in settled if row.state == Link.State.UP}
    stuck = [row for row in settled if row.state != Link.State.UP]

    zoning = DRIVERS[router.platform].zones_initiators
    # What the grants need here (operations.desired), beside what the records say was applied.
    # Settled grants decide what goes up; every grant, a pending one too, keeps what is there.
    without = ending.grants if ending is not None else None
    settled_wants, pending_wants = desired_settled_and_pending([router.pk], without=without)
    wanted = {key: want for key, want in settled_wants.get(router.pk, {}).items() if key not in in_flight}
    pending = pending_wants.get(router.pk, {})

    def granted(key, row: Link, among=wanted) -> bool:
        return key in among and (not zoning or row.device.wwn in among[key].targets)

    def target(key, found: RouterLink | None) -> set[tuple[str, str]]:
        """FCIP: what the link must zone (`needed_pairs`, the rule every converge decides by)."""
        return needed_pairs(wanted.get(key), pending.get(key), found.pairs if found is not None else ())

    # Up with no grant that needs it, and no hold of any kind that it serves (a link a hold serves on
    # a port or router the desired state does not name, adopted from the router or older than the
    # port rule, is reported, never taken off).
    ungranted = [key for key, row in up.items() if not granted(key, row, pending) and not _held(row, zoning, without)]
    unheld_elsewhere = [key for key, row in up.items() if not granted(key, row, pending) and key not in ungranted]
    # A V1 addifcp/rmifcp is literal (one link on one router): a grant only V1 made needs no more
    # than the links V1 made, so the half of its path V1 never made is not missing.
    unrecorded = [key for key, want in wanted.items() if key not in recorded and key not in actual and not want.literal]
    missing = [key for key in up if key not in actual and key not in ungranted and key not in unheld_elsewhere]
    extra = [key for key in actual if key not in recorded]
    differ = [
        key for key in up
        if key in actual and key not in ungranted and key not in unheld_elsewhere
        and (actual[key].state != "up" or (zoning and (_members_differ(up[key], actual[key])
                                                       or set(actual[key].pairs) != target(key, actual[key]))))
    ]
    mismatched = [_describe(key, registry="up", router=actual[key].state, **_members(up[key], actual[key], zoning))
                  for key in differ]
    mismatched += [_describe(key, registry="up", router=actual[key].state if key in actual else "absent",
                             reason="no grant needs it") for key in ungranted]
    mismatched += [_describe(key, registry="up", router=actual[key].state if key in actual else "absent",
                             reason="held, but not where its grant's links would be made") for key in unheld_elsewhere]
    mismatched += [
        _describe(_key(row), registry=row.state, router="present" if _key(row) in actual else "absent") for row in stuck
    ]
    report: dict[str, Any] = {
        "missing": [_describe(key, link=up[key].pk) for key in missing]
        + [_describe(key, granted=holds_text(wanted[key])) for key in unrecorded],
        "extra": [_describe(key, **({"granted": holds_text(wanted[key])} if key in wanted else {})) for key in extra],
        "mismatched": mismatched,
        "in_flight": [_describe(key) for key in sorted(in_flight)],
        "repaired": [],
        "unresolved": [],
    }
    if not repair:
        return report
    now = timezone.now()

    def router_add(key, link, action) -> bool:
        """Put the link `key` on the router as the grants need it (FCIP: its target pairs) and record
        what was applied; False (reported unresolved) when it cannot be configured."""
        pairs = target(key, actual.get(key)) if zoning else set()
        if zoning and not pairs:
            report["unresolved"].append(_describe(key, reason="no grant's initiators to zone on it"))
            return False
        try:
            change(lease, _spec(router, key, link, pairs), "add")
        except ValueError as exc:  # a registry value the platform refuses (a VE port range, say)
            report["unresolved"].append(_describe(key, reason=f"cannot be configured from the registry: {exc}"))
            return False
        if pairs:
            record_pairs(link, pairs)
        report["repaired"].append(_describe(key, action=action))
        return True

    def converge_pairs(key) -> None:
        """FCIP: the up link `key` zones its target pairs, and its record says so."""
        found, row, pairs = actual[key], up[key], target(key, actual[key])
        if set(found.pairs) != pairs:
            router_add(key, row, "converged on router: the pairs its grants need")
        elif link_pairs(row) != pairs:
            record_pairs(row, pairs)
            report["repaired"].append(_describe(key, action="registry: the pairs the router zones recorded"))

    def router_remove(key, link=None):
        change(lease, _spec(router, key, link), "remove")

    def settle_stuck(row):
        """A record an ended operation left mid-change goes where the grants say (`desired_links`): up
        on its router while a settled grant needs it (a removal that failed, an add another hold
        shares), else off."""
        key = _key(row)
        want = wanted.get(key)
        if want is not None and (not zoning or row.device.wwn in want.targets):
            found = actual.get(key)
            if found is not None and found.state == "up" and not (
                    zoning and set(found.pairs) != target(key, found)):
                report["repaired"].append(_describe(key, action=f"{row.state} -> up: still held, on the router"))
                if zoning:
                    record_pairs(row, set(found.pairs))
                put = True
            else:
                put = router_add(key, row, f"{row.state} -> up: still held, put on the router")
            if put:
                Link.objects.filter(pk=row.pk).update(state=Link.State.UP, up_at=now, updated_at=now)
            return  # a grant needs it: never taken off (what could not be put up is reported unresolved)
        if granted(key, row, pending):
            return  # needed by a grant whose operation is still under way: that operation's to settle
        if key in actual:
            router_remove(key, row)
        final = Link.State.FAILED if row.state in (Link.State.CONFIGURING, Link.State.REQUESTED) else Link.State.DOWN
        Link.objects.filter(pk=row.pk).update(state=final, down_at=now, updated_at=now)
        report["repaired"].append(_describe(key, action=f"{row.state} -> {final}"))

    def take_down_ungranted():
        for key in ungranted:
            if key in actual:
                router_remove(key, up[key])
            Link.objects.filter(pk=up[key].pk).update(state=Link.State.DOWN, down_at=now, updated_at=now)
            report["repaired"].append(_describe(key, action="up -> down: no grant needs it"))

    if policy == "registry" and settle_only:
        # The settle chore takes off what flexzone applied and no grant needs, and finishes what failed
        # operations left stuck, and nothing else: what an admin added by hand (an extra iFCP
        # session) is reported, never removed, without a person asking.
        take_down_ungranted()
        for key in differ:
            # An FCIP link shared by several grants zones what they need: pairs no grant needs (a failed
            # connect's extension) come off, a failed remove's shrink is undone, the record follows.
            if zoning and actual[key].state == "up":
                converge_pairs(key)
        if zoning and ending is None:
            # Links whose last change failed have been read: this settle is their last change.
            Link.objects.filter(pk__in=[row.pk for key, row in up.items() if key in actual and key not in ungranted],
                                operation__state__in=(Operation.State.FAILED, Operation.State.ROLLED_BACK)
                                ).update(operation=run.op)
        for row in stuck:
            settle_stuck(row)
    elif policy == "registry":
        # Converge: what the grants need is put on the router and recorded; what was applied but no
        # grant needs any more comes off; stuck records go where the grants say.
        take_down_ungranted()
        for key in missing:
            router_add(key, up[key], "added to router")
        for key in differ:
            if zoning and actual[key].state == "up":
                converge_pairs(key)
            else:
                router_add(key, up[key], "converged on router")
        for key in extra:
            if key not in wanted:
                router_remove(key)
                report["repaired"].append(_describe(key, action="removed from router"))
            elif (found := actual[key]).state == "up" and not (zoning and _want_differs(wanted[key], found)):
                report["repaired"].append(_describe(key, action=_record_granted(router, key, wanted[key], now)))
            elif (spec := _want_spec(router, key, wanted[key], zoning, report)) and _put(lease, spec):
                report["repaired"].append(_describe(key, action=_record_granted(router, key, wanted[key], now)))
        for key in unrecorded:
            if (spec := _want_spec(router, key, wanted[key], zoning, report)) and _put(lease, spec):
                report["repaired"].append(_describe(key, action="added to router; "
                                                    + _record_granted(router, key, wanted[key], now)))
        for row in stuck:
            settle_stuck(row)
    else:
        for key in missing:
            Link.objects.filter(pk=up[key].pk).update(state=Link.State.DOWN, down_at=now, updated_at=now)
            report["repaired"].append(_describe(key, action="registry: up -> down"))
        for key in differ:
            found = actual[key]
            if found.state != "up":
                Link.objects.filter(pk=up[key].pk).update(state=Link.State.DOWN, down_at=now, updated_at=now)
                report["repaired"].append(_describe(key, action="registry: up -> down"))
            elif up[key].device.wwn not in found.targets:  # it zones other devices: not this record's link
                Link.objects.filter(pk=up[key].pk).update(state=Link.State.DOWN, down_at=now, updated_at=now)
                report["repaired"].append(_describe(key, action="registry: up -> down (the router zones "
                                                    f"{', '.join(found.targets) or 'no target'})"))
            else:
                record_pairs(up[key], set(found.pairs))
                report["repaired"].append(_describe(key, action="registry: zoned pairs taken from the router"))
        for key in extra:
            if actual[key].state != "up":
                report["unresolved"].append(_describe(key, reason="the router lists this link down; nothing recorded"))
                continue
            link, refusal = _record_from_router(router, key, actual[key], zoning)
            if refusal:  # a device it zones that the registry cannot give a holder
                report["unresolved"].append(_describe(key, reason=refusal))
            if link is not None:
                action = f"registry: recorded as link {link.pk}, held by {link.site.name}'s lock on {link.device}"
                report["repaired"].append(_describe(key, action=action))
        for row in stuck:
            listed = actual.get(_key(row))
            final = (
                Link.State.UP
                if listed is not None and listed.state == "up" and not (zoning and _members_differ(row, listed))
                else (
                    Link.State.FAILED
                    if row.state in (Link.State.CONFIGURING, Link.State.REQUESTED)
                    else Link.State.DOWN
                )
            )
            # Its holder zones the initiators the router pairs with its device (an FCIP link), as a link
            # recorded from the router does: a grant zones only what it was given.
            mine = sorted(i for i, target in listed.pairs if target == row.device.wwn) if listed and zoning else []
            if final == Link.State.UP and (refused := _hold_for(row.site, row.device, operation=None,
                                                                initiators=mine)):
                final = Link.State.FAILED  # up on the router, but the registry cannot give it a holder
                report["unresolved"].append(_describe(_key(row), reason=refused))
            Link.objects.filter(pk=row.pk).update(state=final, updated_at=now)
            report["repaired"].append(_describe(_key(row), action=f"registry: {row.state} -> {final}"))
    if report["repaired"] and ending is None:  # an ending operation's grants are its own to end or keep
        _release_unheld_locks(settled, report)
    if report["repaired"] and policy == "registry":
        after = {link.key: link for link in driver.list_links()}
        now_up = {_key(row): row for row in Link.objects.filter(router=router, state=Link.State.UP)
                  .select_related("zone", "device")}
        report["converged"] = set(after) - in_flight == set(now_up) - in_flight and all(
            key in after and after[key].state == "up" and not (zoning and _members_differ(row, after[key]))
            for key, row in now_up.items() if key not in in_flight
        )
    return report


def _held(row: Link, zoning: bool, without: tuple[int, list[int]] | None = None) -> bool:
    """Whether any grant in force, of any operation, is a hold this up link serves (FCIP: its own site
    and device; iFCP: a device of its zone between its two sites). A grant past its lease holds nothing."""
    in_force = Grant.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
    if without is not None:
        in_force = in_force.exclude(site_id=without[0], device_id__in=without[1])
    if zoning:
        return in_force.filter(site_id=row.site_id, device_id=row.device_id).exists()
    return in_force.filter(between(row.site_id, row.device.owner_site_id), device__zone_id=row.zone_id).exists()


def _want_differs(want: Want, found: RouterLink) -> bool:
    return want.pairs != set(found.pairs)


def _want_spec(router: Router, key: tuple[int, int, str], want: Want, zoning: bool,
               report: dict[str, Any]) -> LinkSpec | None:
    """The link the grants need, as the driver takes it (None, reported unresolved, if it cannot be
    made: an FCIP link whose grants have no initiators)."""
    if zoning and not want.pairs:
        report["unresolved"].append(_describe(key, reason=f"the grants ({holds_text(want)}) zone no initiator"))
        return None
    return _spec(router, key, None, want.pairs if zoning else None)


def _put(lease: Lease, spec: LinkSpec) -> bool:
    change(lease, spec, "add")
    return True


def _record_granted(router: Router, key: tuple[int, int, str], want: Want, now) -> str:
    """Record a link a grant needs and the router carries, attributed to one of its grants."""
    site_id, device_id = min(want.grants)
    device = Device.objects.get(pk=device_id)
    link = Link.objects.create(site_id=site_id, device=device, router=router, port=key[0], zone_id=device.zone_id,
                               remote_ip=key[2], state=Link.State.UP, up_at=now, **_applied(router, key))
    if DRIVERS[router.platform].zones_initiators:
        record_pairs(link, want.pairs)
    return f"recorded as link {link.pk}: {holds_text(want)}"


def _release_unheld_locks(rows: list[Link], report: dict[str, Any]) -> None:
    """After a repair: a site's locks that no active link serves any more are released.

    A lock is what keeps another site off a device; once repair has ended every link through which
    the site reached it (same zone, between the same two sites), keeping the lock would hold the device
    for nobody.
    Locks of operations still queued or running are theirs to settle.
    """
    # A link serves the holds of its zone between its two sites, whichever of them asked.
    groups = {(*sorted((row.site_id, row.device.owner_site_id)), row.zone_id) for row in rows}
    for one, other, zone_id in sorted(groups):
        if Link.objects.filter(between(one, other), zone_id=zone_id, state__in=Link.ACTIVE_STATES).exists():
            continue
        locks = Grant.objects.filter(between(one, other), device__zone_id=zone_id).exclude(
            operation__state__in=(Operation.State.QUEUED, Operation.State.RUNNING))
        for lock in locks.select_related("device", "site"):
            report["repaired"].append({"action": f"registry: lock of {lock.device.description} for "
                                                 f"{lock.site.name} released (no link serves it any more)"})
        locks.delete()


def _hold_for(site: Site, device: Device, operation: Operation | None, initiators: Sequence[str] = ()) -> str | None:
    """Give `site` its lock on `device` for a link the registry now records up (policy "router"): every
    up link has a holder. Returns why it cannot (another site holds the device exclusively, or the
    device is not shareable and another site holds it), or None when the site holds it."""
    with transaction.atomic():
        # The same row lock a connect takes, and the device as it is now (an edit may have committed since).
        device = Device.objects.select_for_update().get(pk=device.pk)
        held = list(Grant.objects.filter(device=device).select_related("site"))
        if any(lock.site_id == site.pk for lock in held):
            return None
        others = [lock for lock in held if lock.site_id != site.pk]
        if others and (not device.shareable or any(lock.exclusive for lock in others)):
            return (f"{device.description} is locked by {others[0].site.name}; the registry cannot record "
                    f"{site.name} holding it too (remove the link on the router, or free the device there)")
        Grant.objects.create(device=device, site=site, exclusive=not device.shareable, operation=operation,
                                  reason="recorded from the router by reconcile", initiators=list(initiators))
    return None


def _record_from_router(router: Router, key: tuple[int, int, str], found: RouterLink,
                        zoning: bool) -> tuple[Link | None, str]:
    """Create the registry record for a link found only on the router (policy "router"), with its
    holder's lock; or (None, why not)."""
    port, zone_id, remote_ip = key
    remote = Site.objects.filter(data_ip=remote_ip).first()
    zone = Zone.objects.filter(zone_id=zone_id).first()
    unmatched = "no registered site/device matches this link"
    if remote is None or zone is None:
        return None, unmatched
    query = Device.objects.filter(zone=zone, owner_site__in=[router.site, remote]).order_by("description")
    if zoning:  # an FCIP link names its devices: the targets its zones hold
        if not found.pairs:
            return None, unmatched
        query = query.filter(wwn__in=found.targets)
    devices = list(query)
    if not devices:
        return None, unmatched
    # Each device it zones is held by the site on the other side of its owner (on FCIP, with the
    # initiators zoned with it); the record is the first held one's.
    link, refusals = None, []
    for device in devices:
        requester = remote if device.owner_site_id == router.site_id else router.site
        initiators = sorted(i for i, target in found.pairs if target == device.wwn)
        if refusal := _hold_for(requester, device, operation=None, initiators=initiators):
            refusals.append(refusal)
        elif link is None:
            link = Link.objects.create(site=requester, device=device, router=router, port=port, zone=zone,
                                       remote_ip=remote_ip, state=Link.State.UP, up_at=timezone.now(),
                                       initiators=initiators, pairs=[list(pair) for pair in found.pairs],
                                       **_applied(router, key))
        if not zoning:
            break  # an iFCP link serves its zone: one holder is its record
    return link, "; ".join(refusals)


@dataclass(frozen=True)
class Ending:
    """An operation that failed part-way and is ending (`settle_routers`): its id, and the grants it
    took, as (site, devices), which the converge counts as ended (None: it took none)."""

    op: int
    grants: tuple[int, list[int]] | None = None

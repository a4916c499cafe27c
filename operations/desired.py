"""What each router must carry: a pure function of the grants and the registry.

A grant is a site's hold on a device (a `Grant` record): site S may reach device D, which site O
owns in zone Z. It needs two links, one on each side's router: on O's router, for zone Z, towards
S's data-path address on O's FC port; on S's router, towards O's address on S's port. A link is
needed while any grant needs it, so holds of several devices of one zone between the same two
sites (whichever of them asked) share it. An FCIP link zones targets with initiators: its pairs are
the union of its grants' (the device's WWN with each of the requesting site's initiators it was
granted), so a grant that joins an up FCIP link extends its zoning in place and one that ends shrinks
it (operations/converge.py).

A grant taken by a V1 `addifcp` is literal: V1 commands make one link on one router each, so such a
grant's wants are marked `literal` (the half of its path V1 never made is not missing).

`desired_links` takes plain data and does no I/O, so that it can be checked on its own and used by
everything that asks what a router should carry: the settle of stuck records, the model-based test
and the soak. `registry_facts` reads its inputs from the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from operations.models import Grant, Link, Operation
from registry import lookups
from registry.models import Device, Router, Site
from routers.drivers import DRIVERS

Key = tuple[int, int, str]  # (FC port, zone number, remote gateway address), as routers list a link


@dataclass(frozen=True)
class SiteFacts:
    data_ip: str
    router_port: int
    router: int | None  # the router links of this site are made on (`site_routers`), if any


@dataclass(frozen=True)
class DeviceFacts:
    zone: int  # the zone number routers use
    owner: int  # the owning site's id
    wwn: str


@dataclass(frozen=True)
class GrantFacts:
    site: int
    device: int
    initiators: tuple[str, ...] = ()  # FCIP: the requesting site's initiator WWNs this grant zones
    literal: bool = False  # taken by a V1 addifcp: it needs only the links V1 commands made
    settled: bool = True  # False: taken by an operation still queued or running
    expires_at: datetime | None = None  # the lease's end; None: until ended


@dataclass
class Want:
    """One link a router must carry: for FCIP, the (initiator, target) pairs its zones hold, and the
    targets and initiators among them."""

    targets: set[str] = field(default_factory=set)
    initiators: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)
    grants: set[tuple[int, int]] = field(default_factory=set)  # (site, device) of each grant that needs it
    literal: bool = True  # every grant that needs it is a V1 one (which may lack half its path)


def desired_links(grants: Iterable[GrantFacts], sites: dict[int, SiteFacts], devices: dict[int, DeviceFacts],
                  zoning: dict[int, bool], at: datetime | None = None) -> dict[int, dict[Key, Want]]:
    """Per router id, the links it must carry for `grants` at the time `at`. `zoning[router]` says
    whether the router zones initiators (FCIP); only those links carry targets and initiators. A grant
    whose lease has ended by `at` needs nothing (None: every grant counts, whatever its lease), nor
    does a grant of a site's own device, or one whose sites have no router."""
    wanted: dict[int, dict[Key, Want]] = {}
    for grant in grants:
        if at is not None and grant.expires_at is not None and grant.expires_at <= at:
            continue
        device = devices[grant.device]
        requester, owner = sites[grant.site], sites[device.owner]
        if grant.site == device.owner or requester.router is None or owner.router is None:
            continue
        for router, local, remote in ((owner.router, owner, requester), (requester.router, requester, owner)):
            want = wanted.setdefault(router, {}).setdefault((local.router_port, device.zone, remote.data_ip), Want())
            want.grants.add((grant.site, grant.device))
            want.literal = want.literal and grant.literal
            if zoning.get(router):
                want.targets.add(device.wwn)
                want.initiators.update(grant.initiators)
                want.pairs.update((initiator, device.wwn) for initiator in grant.initiators)
    return wanted


def needed_pairs(settled: Want | None, pending: Want | None, found: Iterable[tuple[str, str]],
                 joining: Iterable[tuple[str, str]] = ()) -> set[tuple[str, str]]:
    """What one FCIP link must zone now, the one rule every converge of a link decides by (an operation's
    step, reconcile's repair, the settle, the end of a failed operation): the pairs of the settled grants
    that need it; of the pairs of grants whose operation is still under way, those already on the router
    (`found`: that operation adds the rest itself, or withdraws them); and `joining`, the pairs of the
    operation asking."""
    pairs = set(settled.pairs) if settled is not None else set()
    if pending is not None:
        pairs |= set(found) & pending.pairs
    return pairs | set(joining)


def _by_site(query) -> dict[int, Router]:
    """Each site's router among the routers `query` finds: the one that already carries the site's live
    links, by id (whatever it is named now, and whichever a release that took routers by name chose),
    else the first registered. Never by name, so a rename moves nothing."""
    carrying = Exists(Link.active().filter(router=OuterRef("pk")))
    chosen: dict[int, Router] = {}
    for router in query.annotate(carrying=carrying).order_by(F("carrying").desc(), "pk"):
        chosen.setdefault(router.site_id, router)
    return chosen


def site_routers(sites: list[Site]) -> dict[int, Router]:
    """The router each site's links are made on (`_by_site`), in one query; QueryError for a site with none."""
    chosen = _by_site(Router.objects.filter(site__in=[site.pk for site in sites]))
    for site in sites:
        if site.pk not in chosen:
            raise lookups.QueryError("site", f"site {site.name} has no router registered.")
    return chosen


def registry_facts(site_ids: Iterable[int] | None = None, *, settled: bool = False, pairs: bool = True) -> tuple[
        list[GrantFacts], dict[int, SiteFacts], dict[int, DeviceFacts], dict[int, bool]]:
    """The inputs of `desired_links` as the database holds them now: every grant (of `site_ids` and
    the owners of their devices only, when given); with `settled`, not those an operation still
    queued or running took (they are that operation's to settle, and may yet be withdrawn).

    An FCIP grant zones the initiators it records (those its connect took, and those a renewal added);
    a grant recorded without them (taken from a router by reconcile) the snapshot on its links, else
    its plan's; one with none of those zones nothing: a grant never widens to initiators it was not
    given (not to its site's, which a host registered later would join). Without `pairs`, grants carry no
    initiators (which links are needed, not what they zone: two queries fewer). A grant that a connect
    still queued or running renews is pending, whatever its lease says: its lease is that connect's.
    """
    query = Grant.objects.select_related("device__zone", "operation").defer(
        "operation__transcript", "operation__result", "operation__request", "operation__error")
    if site_ids is not None:
        ids = list(site_ids)
        query = query.filter(Q(site__in=ids) | Q(device__owner_site__in=ids))
    live = (Operation.State.QUEUED, Operation.State.RUNNING)
    locks = [lock for lock in query if not settled or lock.operation is None or lock.operation.state not in live]
    site_pks = {lock.site_id for lock in locks} | {lock.device.owner_site_id for lock in locks}
    routers = _by_site(Router.objects.filter(site__in=site_pks))  # as the planner picks them
    sites = {site.pk: SiteFacts(site.data_ip, site.router_port, routers[site.pk].pk if site.pk in routers else None)
             for site in Site.objects.filter(pk__in=site_pks)}
    devices = {lock.device_id: DeviceFacts(lock.device.zone.zone_id, lock.device.owner_site_id, lock.device.wwn)
               for lock in locks}
    zoning = {router.pk: DRIVERS[router.platform].zones_initiators for router in routers.values()}
    snapshots = _snapshots(site_pks) if pairs else {}
    renewing = _renewing() if any(lock.expires_at is not None for lock in locks) else set()
    grants = [GrantFacts(lock.site_id, lock.device_id,
                    tuple(sorted(lock.initiators or snapshots.get((lock.site_id, lock.device_id))
                                 or plan_initiators(lock.operation.plan if lock.operation else {}))) if pairs else (),
                    literal=bool(lock.operation is not None and lock.operation.plan.get("raw")),
                    settled=(lock.operation is None or lock.operation.state not in live)
                    and (lock.site_id, lock.device_id) not in renewing,
                    expires_at=None if (lock.site_id, lock.device_id) in renewing else lock.expires_at)
              for lock in locks]
    return grants, sites, devices, zoning


def _renewing() -> set[tuple[int, int]]:
    """(site, device) of every connect queued or running: a grant it renews is that connect's to settle,
    pending rather than lapsed (a settle must not take its links off under it)."""
    live = (Operation.State.QUEUED, Operation.State.RUNNING)
    plans = Operation.objects.filter(kind=Operation.Kind.ADD, state__in=live).values_list("plan", flat=True)
    return {(plan["ids"]["site"], device) for plan in plans if (plan or {}).get("ids")
            for device, _zone in plan["ids"].get("devices", {}).values()}


def _snapshots(site_pks: set[int]) -> dict[tuple[int, int], set[str]]:
    """The initiators the sites' active links record per (site, device)."""
    snapshots: dict[tuple[int, int], set[str]] = {}
    for site_id, device_id, initiators in Link.active().filter(site__in=site_pks).exclude(initiators=[]).values_list(
            "site_id", "device_id", "initiators"):
        snapshots.setdefault((site_id, device_id), set()).update(initiators)
    return snapshots


def plan_initiators(plan: dict) -> list[str]:
    """The FCIP initiators a connect's plan zones (those of the hosts it named, or all of its site's),
    so that a grant never widens to hosts it was not given."""
    return sorted({wwn for step in plan.get("steps", []) for wwn in step.get("initiators", [])})


def desired_for(router_ids: Iterable[int] | None = None, *, settled: bool = False,
                without: tuple[int, Iterable[int]] | None = None, pairs: bool = True) -> dict[int, dict[Key, Want]]:
    """`desired_links` from the database as it is now, for the given routers (all when None), of the
    grants in force now; `without` (site, devices): as if that site's grants of those devices had ended;
    without `pairs`, which links only (FCIP links' wants carry no pairs)."""
    grants, sites, devices, zoning = _facts_for(router_ids, settled, without, pairs)
    return desired_links(grants, sites, devices, zoning, timezone.now())


def desired_settled_and_pending(router_ids: Iterable[int], *, without: tuple[int, Iterable[int]] | None = None
                                ) -> tuple[dict[int, dict[Key, Want]], dict[int, dict[Key, Want]]]:
    """`desired_for(router_ids, settled=True)` and `desired_for(router_ids)`, from one read."""
    grants, sites, devices, zoning = _facts_for(router_ids, False, without)
    now = timezone.now()
    return (desired_links([grant for grant in grants if grant.settled], sites, devices, zoning, now),
            desired_links(grants, sites, devices, zoning, now))


def _facts_for(router_ids: Iterable[int] | None, settled: bool, without: tuple[int, Iterable[int]] | None,
               pairs: bool = True):
    site_ids = None
    if router_ids is not None:
        site_ids = set(Router.objects.filter(pk__in=list(router_ids)).values_list("site_id", flat=True))
    grants, sites, devices, zoning = registry_facts(site_ids, settled=settled, pairs=pairs)
    if without is not None:
        site, leaving = without[0], set(without[1])
        grants = [grant for grant in grants if not (grant.site == site and grant.device in leaving)]
    return grants, sites, devices, zoning


def holds_text(want: Want) -> str:
    """"<site> holds <device>" for each grant that needs the link, in name order."""
    sites = dict(Site.objects.filter(pk__in=[site for site, _device in want.grants]).values_list("pk", "name"))
    devices = dict(Device.objects.filter(pk__in=[device for _site, device in want.grants])
                   .values_list("pk", "description"))
    return ", ".join(sorted(f"{sites[site]} holds {devices[device]}" for site, device in want.grants))


def keepers(router_ids: Iterable[int], site: int, leaving: Iterable[int]) -> dict[tuple[int, Key], tuple[int, int]]:
    """The links that stay when `site`'s grants of `leaving` end: per (router, key) the desired state
    still names, the (site, device) of one settled grant that needs it (the site's own first, then
    the lowest device: the record is handed to it). A grant taken by an operation still queued or
    running does not keep a link: that operation runs after the one asking (requests of one zone
    between two sites run in submission order), finds the link gone and makes it again, and if it
    fails it leaves nothing that no grant needs."""
    wanted = desired_for(router_ids, settled=True, without=(site, leaving), pairs=False)
    return {(router, key): min(want.grants, key=lambda grant: (grant[0] != site, grant[1]))
            for router, wants in wanted.items() for key, want in wants.items()}

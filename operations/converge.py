"""A shared FCIP link converged to what its grants need: extended in place, shrunk, never widened.

An FCIP link (a tunnel and its pair zones, on one router, for one zone towards one gateway) serves
every grant of its zone between its two sites (operations.desired). Its zones are the union of those
grants' (initiator, target) pairs. A connect whose grant joins an up link (a second device of the
zone, or more hosts) extends that union on the switch; a disconnect that ends one grant while others
still need the link shrinks it; the tunnel goes with the last grant (an ordinary remove).

What the link must carry is worked out on the router's hold, from the router's own listing and the
grants as they are then (`target_pairs`), with the rule the reconcile uses: settled grants decide
what is put on the router; the grant of an operation still under way only keeps pairs that are
already there (that operation adds its own). Pairs no grant needs come off, and only flexzone's own
pair zones of that link are ever touched (the drivers' rule).
"""

from __future__ import annotations

from collections.abc import Iterable

from operations.desired import Key, desired_settled_and_pending, needed_pairs
from operations.errors import StepFailed
from operations.journal import Run
from operations.models import Link, Operation
from operations.planner import PlanStep, router_vsan
from operations.steps import converge_to
from registry.models import Router
from routers.drivers import DRIVERS
from routers.drivers.base import LinkSpec, RouterLink, pairs_spec

Pair = tuple[str, str]


def link_pairs(link: Link) -> set[Pair]:
    """The pairs flexzone last applied for an FCIP link (a record older than shared links: its device
    with its initiators)."""
    if link.pairs:
        return {(initiator, target) for initiator, target in link.pairs}
    return {(initiator, link.device.wwn) for initiator in link.initiators}


def target_pairs(router: Router, key: Key, found: Iterable[Pair], *, joining: Iterable[Pair] = (),
                 leaving: tuple[int, list[int]] | None = None) -> set[Pair]:
    """What the link at `key` must zone: the settled grants' pairs, the pending grants' pairs that are
    already on the router (`found`), and `joining` (the pairs of the operation asking); `leaving`
    (site, devices): grants ending now, left out."""
    settled_wants, pending_wants = desired_settled_and_pending([router.pk], without=leaving)
    return needed_pairs(settled_wants.get(router.pk, {}).get(key), pending_wants.get(router.pk, {}).get(key), found,
                        joining)


def converge_link(run: Run, router: Router, key: Key, *, joining: Iterable[Pair] = (),
                  leaving: tuple[int, list[int]] | None = None, applied: LinkSpec | None = None,
                  read: bool = True, decided: list[LinkSpec] | None = None) -> set[Pair]:
    """Holding the router: make the FCIP link at `key` zone exactly `target_pairs`, verified by
    reading back. Returns the pairs it zones now. Empty: no grant needs any, and the link comes off
    (`applied`: what flexzone put there) or, without `applied`, nothing is sent.

    `read`: the router is listed first, so that pending grants keep the pairs already there (a link
    others share); a link only this operation is making is decided from the grants alone. `decided`
    receives the spec the last attempt set out to apply (what to look for should it fail)."""
    applied_pairs: set[Pair] = set()

    def want(listing: list[RouterLink] | None) -> LinkSpec | None:
        found = next((link.pairs for link in listing or () if link.key == key), ())
        pairs = target_pairs(router, key, found, joining=joining, leaving=leaving)
        applied_pairs.clear()  # each attempt decides afresh: only what the last one applied is returned
        applied_pairs.update(pairs)
        if not pairs:
            return None
        try:
            spec = pairs_spec(*key, local_ip=router.site.data_ip, pairs=pairs, vsan=router_vsan(router) or 1)
        except ValueError as exc:  # a registry value the platform refuses: nothing was sent
            raise StepFailed(router.name, f"cannot be configured from the registry: {exc}", permanent=True,
                             untouched=True) from None
        if decided is not None:
            decided[:] = [spec]
        return spec

    try:
        converge_to(run, router, want, applied=applied, read=read)
    except ValueError as exc:  # the driver's own checks (a VE port range, a VSAN), before anything is sent
        raise StepFailed(router.name, f"cannot be configured from the registry: {exc}", permanent=True,
                         untouched=True) from None
    return applied_pairs


def record_pairs(link: Link, pairs: set[Pair]) -> None:
    """Write what the link zones now on its record; its initiators are those paired with its own
    device (the snapshot its grant is read from)."""
    initiators = sorted(initiator for initiator, target in pairs if target == link.device.wwn)
    Link.objects.filter(pk=link.pk).update(pairs=[list(pair) for pair in sorted(pairs)], initiators=initiators)


def lacks_pairs(link: Link, step: PlanStep) -> bool:
    """Whether an up FCIP link another grant made lacks pairs this step's grant needs (a second device
    of the zone, more hosts): then its zoning is extended in place. An iFCP link serves every device
    of its zone as it is (the gateway zones them)."""
    if not DRIVERS[link.router.platform].zones_initiators:
        return False
    if link.operation is not None and link.operation.state in (Operation.State.FAILED, Operation.State.ROLLED_BACK):
        return True  # its last change failed part-way: what the router zones is read, not trusted
    return not set(step.spec.all_pairs()) <= link_pairs(link)


def claims_more(link: Link, router: Router, step: PlanStep) -> str | None:
    """Why a record an ended operation left mid-change cannot be taken over by this step (None: it
    can): on FCIP, it stands for pairs this step would not put back (another grant's), and adding the
    step's own link there would drop them. The settle chore finishes such a record first."""
    if not DRIVERS[router.platform].zones_initiators or link_pairs(link) <= set(step.spec.all_pairs()):
        return None
    return (f"link {link} was left {link.state} by operation {link.operation_id}, and it zones pairs of other "
            "grants as well; the settle chore finishes it within FLEXZONE_OPS_SETTLE_EVERY seconds. Nothing was "
            "sent: connect again then.")

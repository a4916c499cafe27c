"""The soak's invariants (a) to (e), (g) and (h), checked after every step (bench/soak.py says what each
means), and how a step's operations and a broken invariant are reported."""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Q
from django.utils import timezone

from bench.soak_cast import USERNAME, Cast
from operations import ledger
from operations.budget import budget_of
from operations.desired import desired_for
from operations.holders import between
from operations.models import Grant, Link, Operation, ZoningImage
from operations.runner import reconcile
from simulators.admin import foreign_zoning

OWN_ZONE = re.compile(r"fz_z\d+_(?:ve|fcip)\d+")  # flexzone's zones on FOS and MDS, as the drivers name them

LIVE = (Operation.State.QUEUED, Operation.State.RUNNING)
FCIP_PLATFORMS = ("brocade_fos", "cisco_mds")


def registry_matches_routers(cast: Cast) -> list[str]:
    problems = []
    for router in cast.routers:
        report: dict[str, Any] = {}
        for _attempt in range(3):  # a pooled session a fault left half-dead is replaced; try again
            op = reconcile(repair=False, router=router.name)
            report = op.result.get("routers", {}).get(router.name, {})
            if op.state == Operation.State.SUCCEEDED:
                break
        if "error" in report:
            problems.append(f"(a) reconcile could not read {router.name}: {report['error']}")
            continue
        for key in ("missing", "extra", "mismatched", "in_flight"):
            if report.get(key):
                problems.append(f"(a) reconcile of {router.name}: {key} {report[key]}")
        recorded = {link.key: pairs_of(link.pairs)
                    for link in Link.objects.filter(router=router, state=Link.State.UP).select_related("zone")}
        actual = {link.key: pairs_of(link.pairs) for link in cast.sim_of(router).links()}
        if set(recorded) != set(actual):
            problems.append(f"(a) {router.name}: registry up {sorted(recorded)} != router {sorted(actual)}")
        elif router.platform in FCIP_PLATFORMS and recorded != actual:
            problems.append(f"(a) {router.name}: the records' pairs {recorded} != the router's {actual}")
    return problems


def pairs_of(pairs) -> frozenset[tuple[str, str]]:
    return frozenset((initiator, target) for initiator, target in pairs or ())

def locks_exclusive(cast: Cast) -> list[str]:
    problems = []
    for device in cast.devices:
        locks = list(Grant.objects.filter(device=device).select_related("site"))
        holders = ", ".join(f"{lock.site.name}{' (exclusive)' if lock.exclusive else ''}" for lock in locks)
        if len(locks) > 1 and not device.shareable:
            problems.append(f"(b) {device.description} is not shareable but is locked by {holders}")
        elif len(locks) > 1 and any(lock.exclusive for lock in locks):
            problems.append(f"(b) {device.description} has an exclusive lock alongside another: {holders}")
    return problems

def up_links_held(cast: Cast) -> list[str]:
    problems = []
    for link in Link.objects.filter(router__in=cast.routers, state=Link.State.UP).select_related(
        "site", "device", "router", "zone"
    ):
        held = Grant.objects.filter(between(link.site_id, link.device.owner_site_id),
                                         device__zone_id=link.zone_id)
        if not held.exists():
            problems.append(f"(c) link {link.pk} ({link}, for {link.site.name}) is up but no lock of a device "
                            f"of zone {link.zone.zone_id} between {link.site.name} and site "
                            f"{link.device.owner_site_id} needs it")
    return problems

def holders_linked(cast: Cast) -> list[str]:
    """(d) and (e), for the locks in force: one whose lease ran out needs nothing (time is an input), and
    its link may be gone before the lease sweep ends it (a remove of another device of its zone that ran
    after it lapsed takes the link they shared)."""
    problems = []
    in_force = Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
    ended_badly = (Operation.State.FAILED, Operation.State.ROLLED_BACK)
    lapsed = Grant.objects.filter(~in_force, device__in=cast.devices, operation__state__in=ended_badly)
    for pk, operation, state in lapsed.values_list("pk", "operation_id", "operation__state"):
        problems.append(f"(e) lock {pk}: left by operation {operation}, which ended {state}")
    for lock in Grant.objects.filter(in_force, device__in=cast.devices).select_related(
        "site", "device", "device__zone", "operation"
    ):
        up = Link.objects.filter(between(lock.site_id, lock.device.owner_site_id), zone_id=lock.device.zone_id,
                                 state=Link.State.UP)
        if up.exists():
            continue
        live = lock.operation is not None and lock.operation.state in LIVE
        what = f"lock {lock.pk} of {lock.device.description} for {lock.site.name} (operation {lock.operation_id})"
        if not live:
            problems.append(f"(d) {what}: the holder has no up link to zone {lock.device.zone.zone_id}")
            problems.append(f"(e) {what}: neither a live operation nor an up link keeps it")
    return problems


def routers_carry_the_grants(cast: Cast) -> list[str]:
    """(g) each router lists up exactly the links the grants need (`operations.desired`, the pure
    function of the grants and the registry); a link only V1 grants need may be absent (V1 is literal)."""
    wanted = desired_for([router.pk for router in cast.routers])
    problems = []
    for router in cast.routers:
        actual = {link.key for link in cast.sim_of(router).links() if link.state == "up"}
        wants = wanted.get(router.pk, {})
        needed = {key for key, want in wants.items() if not want.literal}
        if not needed <= actual or not actual <= set(wants):  # a V1-only want may lack its other half
            desired = set(wants)
            problems.append(f"(g) {router.name}: up {sorted(actual)} != what the grants need {sorted(desired)}")
        elif router.platform in FCIP_PLATFORMS:
            zoned = {link.key: pairs_of(link.pairs) for link in cast.sim_of(router).links() if link.state == "up"}
            granted = {key: pairs_of(want.pairs) for key, want in wants.items()}
            if zoned != granted:
                problems.append(f"(g) {router.name}: zones {zoned} != the grants' pairs {granted}")
    return problems


def others_zoning_untouched(cast: Cast, foreign: dict[int, dict[str, Any]]) -> list[str]:
    """(h) what flexzone did not create on each FCIP switch is what its other admin left there."""
    problems = []
    for index, before in foreign.items():
        now = foreign_zoning(cast.sims[index])
        if now != before:
            changed = {key: (before.get(key), now.get(key))
                       for key in {*before, *now} if before.get(key) != now.get(key)}
            problems.append(f"(h) {cast.routers[index].name}: zoning flexzone did not create changed: {changed}")
    return problems


def sessions_within_budget(cast: Cast) -> list[str]:
    """(k) no router ever had more of flexzone's sessions open at once than its session budget: the most
    the simulator saw of flexzone's account at any moment so far, whichever processes held them (the
    other admin logs in with an account of its own)."""
    problems = []
    for router, sim in zip(cast.routers, cast.sims, strict=True):
        router.refresh_from_db(fields=["session_budget"])
        peak, allowed = sim.peak_by_account.get(USERNAME, 0), budget_of(router)
        if peak > allowed:
            problems.append(f"{router.name}: {peak} of flexzone's sessions were open at once; its budget is {allowed}")
    return problems


def _not_ours(image: dict) -> dict[str, list[str]]:
    return {name: members for name, members in image["zones"].items() if not OWN_ZONE.match(name)}


def images_change_only_ours(cast: Cast, after_id: int) -> tuple[list[str], int]:
    """(i) each zoning change flexzone journaled (images newer than `after_id`) left the configuration
    in force and every zone in force that flexzone did not create as they were before it; returns the
    violations and the newest image's id."""
    problems, newest = [], after_id
    for image in ZoningImage.objects.filter(router__in=cast.routers, pk__gt=after_id).select_related("router"):
        newest = max(newest, image.pk)
        if image.after is None:
            continue
        before, after = image.before, image.after
        if before["in_effect"] is not None and after["in_effect"] != before["in_effect"]:
            problems.append(f"(i) {image.router.name}: operation {image.operation_id} put {after['in_effect']} in "
                            f"force instead of {before['in_effect']}")
        if _not_ours(before) != _not_ours(after):
            problems.append(f"(i) {image.router.name}: operation {image.operation_id} changed zones in force it did "
                            f"not create: before {_not_ours(before)}, after {_not_ours(after)}")
    return problems, newest


def ledger_whole() -> list[str]:
    """(j) the ledger, sealed, verifies: no ended operation's record differs from what was sealed."""
    ledger.seal()
    verdict = ledger.verify()
    return [f"(j) {problem}" for problem in verdict.problems]


def raise_on(problems: list[str], seed: int, step: int, log: list[str], *, at_end: bool = False) -> None:
    if not problems:
        return
    where = "at the end" if at_end else f"after step {step}"
    raise AssertionError(
        f"soak invariant broken {where} (seed {seed}; replay: FLEXZONE_SOAK_SEED={seed} pytest "
        f"tests/bench/test_soak.py, or python -m bench soak --seed {seed} --steps {step}):\n"
        + "\n".join(f"  {problem}" for problem in problems)
        + "\nstep log:\n" + "\n".join(log[-400:])
    )


def journal_lines(op: Operation, what: str) -> list[str]:
    """The operation's end and the engine's own notes on the way (retries, waits, recovery, kept links)."""
    lines = [f"  op {op.pk} ({what}): {op.state}{' - ' + op.error[:300] if op.error else ''}"]
    if op.kind != what.split()[0]:
        lines[0] += f" [{op.kind} {op.request.get('site', '')} {op.request.get('device_description', '')}]"
    notes = [line for line in op.transcript.splitlines() if line.startswith("# ")]
    return lines + [f"      {note}" for note in notes[:8]]

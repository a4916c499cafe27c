"""One router step: hold the router, use a pooled session, retry what may pass, verify by reading back.

Order of work for a step: take the router (one session at a time per router), log in or reuse a
pooled session, read the router first whenever a reply may have been lost, change it, read it back.
Transient failures are retried with backoff within the operation's time limit; a permanent refusal
ends the step with the router's own message.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from typing import TypeVar

from operations import zoning_locks
from operations.budget import budget_of
from operations.conf import ops_settings
from operations.errors import StepFailed
from operations.journal import Run
from operations.locking import RouterBusy, router_lock
from operations.metrics import retries_total
from operations.models import Operation
from operations.pool import Lease, pool
from registry.models import Router
from registry.secrets import SecretUnavailable, resolve_secret
from routers.drivers.base import (
    LinkAbsent,
    LinkExists,
    LinkSpec,
    RouterAuthError,
    RouterDriver,
    RouterError,
    RouterLink,
    RouterTarget,
    ZoningBusy,
)
from routers.platforms import Platform, Transport

T = TypeVar("T")
Phase = Operation.Phase


class VerifyFailed(RouterError):
    """The router took the command but its listing disagrees: re-read and re-issue (transient)."""

    transient = True


def router_target(router: Router) -> RouterTarget:
    try:
        password = resolve_secret(router.secret_ref)
    except SecretUnavailable as exc:
        # Before any connection: nothing was sent, so nothing is undone and a removal keeps its link up.
        raise StepFailed(router.name, str(exc), permanent=True, untouched=True) from None
    return RouterTarget(
        platform=Platform(router.platform),
        host=router.host,
        port=router.port,
        transport=Transport(router.transport),
        username=router.username,
        password=password,
        name=router.name,
        connect_timeout=router.connect_timeout,
        command_timeout=router.command_timeout,
        vsan=router.vsan,
        host_key=router.ssh_host_key,
    )


def _attempts(count: int) -> str:
    return f"{count} attempt" if count == 1 else f"{count} attempts"


def _backoff(attempt: int) -> float:
    conf = ops_settings()
    delay = min(conf.backoff_max, conf.backoff * 2 ** (attempt - 1))
    return delay * random.uniform(0.5, 1.0)


def with_router(run: Run, router: Router, work: Callable[[Lease, bool], T]) -> T:
    """Run `work(lease, read_first)` holding the router, retrying transient failures with backoff.

    `read_first` is true whenever an earlier reply may have been lost (any retry, or recovery), so
    the work reads the router's state before changing it. A failure on a pooled session that had
    gone stale is retried at once on a fresh login. A router held by another operation (RouterBusy:
    nothing was sent) is waited for until the operation's time limit, FLEXZONE_OPS_ROUTER_WAIT at a
    time. Another admin's hold on the fabric's zoning
    (ZoningBusy: nothing was changed) is waited for until the operation's time limit, polling with
    backoff; it does not use up the retry budget, and it is never broken.
    """
    conf = ops_settings()
    target = router_target(router)
    attempt = failures = busy = 0
    touched = run.recovering  # whether any attempt may have changed the router (a crashed run's may have)
    while True:
        attempt += 1
        run.attempt()
        reused = in_session = False
        try:
            with router_lock(router.pk, max(0.0, min(conf.router_wait, run.remaining()))):
                run.phase(Phase.CONNECTING)
                with pool.session(router.pk, target, run.absorb, deadline=run.until(),
                                  session_budget=budget_of(router)) as lease:
                    reused, in_session = lease.reused, True
                    zoning_locks.bind(lease.driver, router)
                    run.phase(Phase.ON_ROUTER)
                    return work(lease, run.recovering or attempt > 1)
        except RouterBusy:
            # Another operation holds the router (its session is bounded by its own time limit) and
            # nothing was sent: wait on, within this operation's time limit, without using a retry.
            attempt -= 1
            if run.remaining() <= 0:
                raise StepFailed(router.name, "stayed busy with another operation until this operation's time "
                                              "limit", permanent=False, untouched=not touched, timed_out=True) from None
        except ZoningBusy as exc:
            busy += 1
            delay = _backoff(busy)
            if busy == 1:
                run.notes.append(f"{router.name}: {exc}")
            if run.remaining() <= delay:
                raise StepFailed(router.name, f"time limit reached while waiting: {exc}", permanent=False,
                                 untouched=not touched, timed_out=True) from None
            time.sleep(delay)
        except RouterError as exc:
            touched |= in_session  # a refused or failed login sent nothing
            failures += 1
            if exc.transcript and not run.transcripts:
                run.transcripts.append(f"--- {router.name} (error) ---\n{exc.transcript.rstrip()}")
            if not _is_transient(exc):
                message = getattr(exc, "router_message", "") or str(exc)
                raise StepFailed(router.name, message, permanent=True, untouched=not touched) from None
            # A router that never let a session in (refused, unreachable) was not changed: there is
            # nothing of this step to undo, and the device is not held for it.
            if failures >= conf.max_attempts:
                raise StepFailed(router.name, f"gave up after {_attempts(failures)}: {exc}", permanent=False,
                                 untouched=not touched) from None
            delay = 0.0 if reused and failures == 1 else _backoff(failures)
            if run.remaining() <= delay:
                raise StepFailed(
                    router.name, f"time limit reached after {_attempts(failures)}: {exc}", permanent=False,
                    untouched=not touched, timed_out=True,
                ) from None
            run.notes.append(f"attempt {attempt} on {router.name}: {type(exc).__name__}: {exc}; retry in {delay:.2f} s")
            retries_total.labels(router.platform).inc()
            time.sleep(delay)


# A full session table is a refusal that passes: other workers' pooled sessions time out or are freed.
_SESSION_LIMIT = re.compile(r"(?i)sessions? (are )?in use|E_BUSY|maximum number of|too many|session limit")


def _is_transient(exc: RouterError) -> bool:
    return exc.transient or (isinstance(exc, RouterAuthError) and bool(_SESSION_LIMIT.search(str(exc))))


def _apply(run: Run, lease: Lease, spec: LinkSpec, action: str, read_first: bool,
           listing: list[RouterLink] | None = None) -> None:
    """Make the router hold (add) or not hold (remove) the link, then read it back to verify.
    `listing`: what the router listed just now, on this hold (an add needs no second look)."""
    driver = lease.driver
    if action == "add" and listing is not None:
        needed = not _holds_in(listing, spec, driver.zones_initiators)
    elif read_first:
        needed = not _holds(driver, spec) if action == "add" else _lists(driver, spec)
    else:
        needed = True
    if needed:
        change(lease, spec, action)
    run.phase(Phase.VERIFYING)
    if not (_holds(driver, spec) if action == "add" else not _lists(driver, spec)):
        raise VerifyFailed(f"the router accepted the {action} of {spec.key} but its listing disagrees")


def change(lease: Lease, spec: LinkSpec, action: str) -> None:
    """On a router held under `lease`: make it hold (`action` "add") or not hold ("remove") the link
    `spec`; a link already as wanted counts as done (a lost reply whose change took effect, a repeated
    request). The one place in the engine that sends a link's change to a router (a test of the
    engine's layout holds it so): a step's `_apply` and reconcile's repair both come here. A driver
    refusal (ValueError: a value the platform cannot take) is raised before anything is sent."""
    try:
        if action == "add":
            lease.driver.add_link(spec)
        else:
            lease.driver.remove_link(spec)
    except (LinkExists, LinkAbsent):
        pass
    lease.changed = True


def _lists(driver: RouterDriver, spec: LinkSpec) -> bool:
    """Whether anything of the link is on the router (a remove has work to do): listed, or on an FCIP
    switch any of its zones still in force (RouterDriver.remnants)."""
    return driver.remnants(spec)


def _holds(driver: RouterDriver, spec: LinkSpec) -> bool:
    return _holds_in(driver.list_links(), spec, driver.zones_initiators)


def _holds_in(listing: list[RouterLink], spec: LinkSpec, zoning: bool) -> bool:
    """Whether a router's listing holds the link as the spec wants it.

    On FCIP switches a listed link may be only part-way there (zones defined but not in force, a
    tunnel down) or zone other members: it holds only when it is up and zones exactly the spec's
    (initiator, target) pairs, so a retry after a lost reply finishes the link instead of taking
    the key for it. (The iFCP gateways' listing has no members; there the key is the link.)
    """
    for link in listing:
        if link.key == spec.key:
            if not zoning:
                return True
            return link.state == "up" and set(link.pairs) == set(spec.all_pairs())
    return False


def converge_to(run: Run, router: Router, want: Callable[[list[RouterLink] | None], LinkSpec | None], *,
                applied: LinkSpec | None = None, read: bool = False) -> LinkSpec | None:
    """Holding the router, make one link (one key) carry what `want` says: the LinkSpec it must hold,
    or None: nothing of it (then `applied`, what flexzone put there, comes off; without it nothing is
    sent). Verified by reading back, like every change; returns the spec now held (None: none).

    `want` is handed the router's listing when `read` (what a link must carry depends on what is there:
    a shared FCIP link, whose pending grants keep only the pairs already on it), else None: a link
    this operation alone is changing is decided from the grants. Either way a retry, or a run in
    recovery, looks at the router before it changes anything. It is level-triggered: run again, it
    sends nothing when the router already holds what is wanted."""

    def work(lease: Lease, read_first: bool) -> LinkSpec | None:
        listing = lease.driver.list_links() if read else None
        spec = want(listing)
        if spec is not None:
            _apply(run, lease, spec, "add", read_first, listing)
        elif applied is not None:
            _apply(run, lease, applied, "remove", read_first)
        return spec

    return with_router(run, router, work)


def drive(run: Run, router: Router, spec: LinkSpec, action: str) -> None:
    """Converge one link to a fixed answer: `spec` held (add) or nothing of it (remove)."""
    converge_to(run, router, lambda _listing: spec if action == "add" else None, applied=spec)


def look(run: Run, router: Router, spec: LinkSpec) -> str | None:
    """After a step gave up having reached the router: one more look, on a time budget of its own (the
    operation's limit, at most 60 s), at what the router holds of the link. "holds" (as the spec
    wants it), "partial" (something of it, not all), "absent", or None if the router cannot be read
    or cannot tell.

    A step that gave up may still have done its work (the reply was lost, then the retries ran into
    other faults): the registry must say what the router holds, not what the last attempt saw.
    """
    def state(lease: Lease, _read_first: bool) -> str | None:
        if _holds(lease.driver, spec):
            return "holds"
        if _lists(lease.driver, spec):
            return "partial"
        # An iFCP gateway's listing shows all there is of a link; an FCIP switch may keep parts of
        # one that grant nothing and that it cannot show are flexzone's (a tunnel without zones in
        # force, zones defined but not in force): absent is not certain there.
        return None if lease.driver.zones_initiators else "absent"

    try:
        with run.extended(min(60.0, ops_settings().total_timeout)):
            return with_router(run, router, state)
    except StepFailed:
        return None


def read_router(run: Run, router: Router) -> list[RouterLink]:
    """What the router holds now, read within the operation's retries and time limit."""
    return with_router(run, router, lambda lease, _read_first: lease.driver.list_links())

"""Pooled router sessions: the login is paid once per router per worker, not once per operation.

A session is only used while its router is held (`locking.router_lock`). Before reusing a session
idle longer than the keepalive interval the pool probes it; a session that fails a probe or raises a
transport error is closed and replaced by a fresh login on the next use. A background thread probes
idle sessions, closes those idle too long, and, when saves are batched (FLEXZONE_OPS_SAVE_CONFIG=idle),
writes the running configuration once the router has been quiet for FLEXZONE_OPS_SAVE_AFTER seconds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.db import InterfaceError, OperationalError, connection

from operations import budget
from operations.conf import ops_settings
from operations.locking import try_router_lock
from operations.metrics import report_sessions
from routers.drivers.base import CommandRejected, RouterDriver, RouterError, RouterTarget

log = logging.getLogger(__name__)


def fingerprint(target: RouterTarget) -> str:
    """Changes whenever anything that shapes the session changes (address, user, password, timeouts, VSAN)."""
    raw = "|".join(
        str(part)
        for part in (
            target.platform,
            target.host,
            target.port,
            target.transport,
            target.username,
            target.password,
            target.connect_timeout,
            target.command_timeout,
            target.vsan,
        )
    )
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass
class Lease:
    """A session lent to one operation step. Set `changed` after a configuration change."""

    driver: RouterDriver
    reused: bool
    changed: bool = False


@dataclass
class _Entry:
    driver: RouterDriver
    fingerprint: str
    last_used: float = field(default_factory=time.monotonic)
    probed_at: float = field(default_factory=time.monotonic)


def _make_driver(target: RouterTarget) -> RouterDriver:
    from routers.drivers import get_driver

    return get_driver(target)


def _close_quietly(driver: RouterDriver) -> None:
    try:
        driver.close()
    except Exception:  # noqa: BLE001 - closing a broken session must never fail the operation
        log.debug("closing a router session failed", exc_info=True)


class SessionPool:
    def __init__(self, driver_factory: Callable[[RouterTarget], RouterDriver] = _make_driver) -> None:
        self._factory = driver_factory
        self._entries: dict[int, _Entry] = {}
        self._unsaved: set[int] = set()
        self._lent: dict[int, str] = {}  # sessions in use: id(lease) -> platform, for the open-session gauge
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.logins = 0  # counted for tests and the benchmark
        self._holder: tuple[int, str] | None = None
        self._budgeted: set[int] = set()  # routers whose sessions this pool counts in the session table
        self._wanted: set[int] = set()  # of those, the ones another process asked this pool to give up
        # When each counted slot was last seen to be this pool's (claimed, or found by a beat), monotonic:
        # a slot is taken as stale only FLEXZONE_OPS_STALE_AFTER after its last beat, so within half of
        # that a reuse needs no look at the table.
        self._confirmed: dict[int, float] = {}
        # The slots a beat has seen this pool's row of since they were claimed: only such a row can be
        # found gone (a beat that never saw it, as on a connection that cannot see the claim yet, cannot tell).
        self._beat_saw: set[int] = set()
        self._beater: threading.Thread | None = None
        self.serves_queue = False  # a `manage.py worker`: operations are routed to it (affinity.py)

    @property
    def holder(self) -> str:
        """This pool's name in the session table; a forked child gets its own."""
        with self._guard:
            if self._holder is None or self._holder[0] != os.getpid():
                self._holder = (os.getpid(), budget.process_holder(worker=self.serves_queue))
            return self._holder[1]

    # --- lending -------------------------------------------------------------------------------
    @contextmanager
    def session(
        self,
        router_id: int,
        target: RouterTarget,
        absorb: Callable[[RouterDriver], None],
        deadline: float | None = None,
        session_budget: int | None = None,
    ) -> Iterator[Lease]:
        """A logged-in session to the router; the caller must hold the router's lock.

        `absorb(driver)` is called at the end, success or not, to collect transcript and router time.
        `deadline` (time.monotonic()) caps every wait on the router while the caller holds the session.
        `session_budget`: a new login is first counted against it across processes (operations.budget);
        RouterBusy if other processes' sessions do not come free in time.
        """
        conf = ops_settings()
        lease = self._checkout(router_id, target, conf.keepalive) if conf.pool else None
        if lease is None:
            if session_budget is not None:
                wait_until = time.monotonic() + conf.router_wait
                budget.claim(router_id, self.holder, session_budget, min(wait_until, deadline or wait_until))
                with self._guard:
                    self._confirmed[router_id] = time.monotonic()
                    self._budgeted.add(router_id)
                    self._wanted.discard(router_id)
            try:
                if session_budget is not None:
                    self._ensure_beater()  # beats for the row while the session lives
                lease = Lease(self._factory(target), reused=False)
            except BaseException:
                self._discard(router_id, None)
                raise
        lease.driver.deadline = deadline
        keep = False
        try:
            if not lease.reused:
                self.logins += 1
                lease.driver.connect()
            self._lend(lease, target.platform)
            yield lease
            keep = True
        except CommandRejected:
            keep = True  # the router answered: the session itself is healthy
            raise
        finally:
            try:
                self._settle(router_id, target, lease, keep=keep and conf.pool, save_mode=conf.save_config)
            finally:
                self._lend(lease, None)
                lease.driver.deadline = None  # back in the pool, the session answers to nobody's clock
                absorb(lease.driver)

    def _checkout(self, router_id: int, target: RouterTarget, keepalive: float) -> Lease | None:
        with self._guard:
            entry = self._entries.pop(router_id, None)
        if entry is None:
            return None
        if entry.fingerprint != fingerprint(target):
            self._discard(router_id, entry.driver)
            return None
        now = time.monotonic()
        with self._guard:
            unsure = (router_id in self._budgeted
                      and now - self._confirmed.get(router_id, float("-inf")) >= ops_settings().stale_after / 2)
        try:
            taken = unsure and not budget.holds(router_id, self.holder)
        except BaseException:
            self._discard(router_id, entry.driver)  # out of the pool: logged out, its slot given back
            raise
        if unsure and not taken:
            with self._guard:
                self._confirmed[router_id] = now
        if taken:
            # Taken away as stale (this process stalled), and perhaps another process's now: this session
            # is no longer counted, so it ends before the router is used again; the login claims anew.
            log.warning("router %s: this process's session slot was taken away as stale; logging out",
                        target.name or router_id)
            self._discard(router_id, entry.driver)
            return None
        if time.monotonic() - entry.probed_at > keepalive and not entry.driver.is_alive():
            log.info("router %s: pooled session went stale; logging in again", target.name or router_id)
            self._discard(router_id, entry.driver)
            return None
        return Lease(entry.driver, reused=True)

    def _settle(self, router_id: int, target: RouterTarget, lease: Lease, *, keep: bool, save_mode: str) -> None:
        if lease.changed:
            with self._guard:
                self._unsaved.add(router_id)
        if keep and lease.changed and save_mode == "each":
            self._save(router_id, lease.driver)
        if not keep:
            if lease.changed and save_mode != "never":
                self._save(router_id, lease.driver)
            self._discard(router_id, lease.driver)
            return
        with self._guard:
            self._entries[router_id] = _Entry(lease.driver, fingerprint(target))
        self._ensure_thread()

    def _discard(self, router_id: int, driver: RouterDriver | None) -> None:
        """Log out, and give the session's slot in the router's budget back."""
        if driver is not None:
            _close_quietly(driver)
        with self._guard:
            counted = router_id in self._budgeted
            self._budgeted.discard(router_id)
            self._confirmed.pop(router_id, None)
            self._beat_saw.discard(router_id)
        if counted:
            try:
                budget.release(router_id, self.holder)
            except Exception:  # noqa: BLE001 - the row then goes stale and is taken away
                log.warning("router %s: could not give its session slot back", router_id, exc_info=True)

    def _save(self, router_id: int, driver: RouterDriver) -> None:
        try:
            driver.save_config()
        except RouterError as exc:
            log.warning("router %s: saving the configuration failed: %s", router_id, exc)
            return
        with self._guard:
            self._unsaved.discard(router_id)

    def _lend(self, lease: Lease, platform: str | None) -> None:
        """Mark a session lent (platform) or back (None), and report the sessions this process has open."""
        with self._guard:
            if platform is None:
                self._lent.pop(id(lease), None)
            else:
                self._lent[id(lease)] = platform
        self._report_sessions()

    def _report_sessions(self) -> None:
        with self._guard:
            platforms = [*self._lent.values(), *(entry.driver.target.platform for entry in self._entries.values())]
        report_sessions(platforms)

    def pending_saves(self) -> set[int]:
        with self._guard:
            return set(self._unsaved)

    def size(self) -> int:
        with self._guard:
            return len(self._entries)

    # --- background chores ---------------------------------------------------------------------
    def _ensure_thread(self) -> None:
        with self._guard:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run_chores, name="flexzone-pool", daemon=True)
            self._thread.start()

    def _run_chores(self) -> None:
        while True:
            conf = ops_settings()
            interval = max(0.05, min(conf.keepalive, conf.save_after or 1.0, 1.0) / 2)
            if self._stop.wait(interval):
                return
            try:
                self.chores()
            except Exception:  # noqa: BLE001 - the chore thread must survive one bad round
                log.exception("session pool chores failed")
            finally:
                connection.close()

    def chores(self) -> None:
        """One round: save quiet routers' configurations, probe idle sessions, close old ones."""
        conf = ops_settings()
        self.give_up_wanted()
        now = time.monotonic()
        with self._guard:
            candidates = list(self._entries.items())
            unsaved = set(self._unsaved)
        for router_id, entry in candidates:
            idle = now - entry.last_used
            save = router_id in unsaved and conf.save_config == "idle" and idle >= conf.save_after
            close = idle >= conf.pool_idle
            probe = now - entry.probed_at >= conf.keepalive
            if not (save or close or probe):
                continue
            with try_router_lock(router_id) as held:
                if not held:
                    continue
                with self._guard:
                    if self._entries.get(router_id) is not entry:
                        continue
                    del self._entries[router_id]
                if save:
                    self._save(router_id, entry.driver)
                entry.driver.take_transcript()
                entry.driver.take_router_seconds()
                if close or not entry.driver.is_alive():
                    self._discard(router_id, entry.driver)
                    continue
                entry.probed_at = time.monotonic()
                with self._guard:
                    self._entries.setdefault(router_id, entry)
        self._report_sessions()

    def _ensure_beater(self) -> None:
        with self._guard:
            if self._beater is not None and self._beater.is_alive():
                return
            self._stop.clear()
            self._beater = threading.Thread(target=self._beat, name="flexzone-pool-beat", daemon=True)
            self._beater.start()

    def _beat(self) -> None:
        """Every FLEXZONE_OPS_HEARTBEAT seconds, on a thread of its own (a chore round may spend seconds
        saving): `beat_once`."""
        while not self._stop.wait(max(0.05, ops_settings().heartbeat)):
            try:
                self.beat_once()
            except (OperationalError, InterfaceError) as exc:  # down or restarting: a line, each round until back
                log.warning("session pool beat: the database did not answer (%s)", str(exc).splitlines()[0])
            except Exception:  # noqa: BLE001 - the beat must survive one bad round
                log.exception("session pool beat failed")
            finally:
                connection.close()  # no connection held between rounds (a test database must be droppable)

    def beat_once(self) -> None:
        """One round of the beat: keep this pool's rows in the session table alive, log out of the idle
        sessions whose slots another process took away as stale, and of those another process wants."""
        with self._guard:
            if not self._budgeted:
                return
        looked = time.monotonic()
        present, wanted = budget.beat(self.holder)
        with self._guard:
            self._wanted = wanted & self._budgeted
            lost = (self._beat_saw & self._budgeted) - present  # stays lost until logged out (_discard)
            self._beat_saw |= present & self._budgeted
            self._confirmed.update((router_id, looked) for router_id in present & self._budgeted)
        if lost:
            # Taken by another process as stale (this one stalled): an idle session here logs out now,
            # not when next used, so the router's count is back within its budget at once; one in use
            # is logged out before it is used again (_checkout), or by a later beat.
            self._log_out_lost(lost)
        self.give_up_wanted()

    def give_up_wanted(self) -> None:
        """Log out of the idle sessions another process needs the slot of. It holds the router meanwhile,
        so they are idle, and nothing is saved now (that would run beside its work): the running
        configuration is saved with the next save of anyone's change."""
        with self._guard:
            wanted, self._wanted = self._wanted, set()
        self._log_out_idle(wanted, "its session slot is wanted by another process")

    def _log_out_lost(self, router_ids: set[int]) -> None:
        """Log out of the idle sessions whose slots were taken away, each holding its router (as the pool's
        chores do), so that no step of this process claims the router anew meanwhile: releasing the slot
        would then delete that claim's row. A router in use is left to its next checkout."""
        for router_id in sorted(router_ids):
            with try_router_lock(router_id) as taken:
                if taken:
                    self._log_out_idle({router_id}, "its session slot was taken away as stale")

    def _log_out_idle(self, router_ids: set[int], why: str) -> None:
        """Log out of this pool's idle sessions to `router_ids` (those in use are not in the pool)."""
        with self._guard:
            entries = {router_id: self._entries.pop(router_id) for router_id in router_ids
                       if router_id in self._entries}
        for router_id, entry in entries.items():
            log.info("router %s: %s; logging out", router_id, why)
            self._discard(router_id, entry.driver)

    def close_all(self) -> None:
        """Save what is unsaved (best effort), log out of every router, stop the chore thread."""
        self._stop.set()
        for thread in (self._thread, self._beater):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=10)
        with self._guard:
            entries, self._entries = self._entries, {}
            unsaved = set(self._unsaved)
        for router_id, entry in entries.items():
            if router_id in unsaved and ops_settings().save_config != "never":
                self._save(router_id, entry.driver)
            self._discard(router_id, entry.driver)
        if self._holder is not None:  # it has counted sessions: whatever a round or a failure left goes too
            try:
                budget.release_all(self.holder)
            except Exception:  # noqa: BLE001 - they go stale and are taken back
                log.warning("could not give this process's session slots back", exc_info=True)
            with self._guard:
                self._budgeted.clear()
                self._wanted.clear()
        self._report_sessions()


pool = SessionPool()

"""What keeps another administrator's change out of the MDS driver's activation.

``zoneset activate`` puts the whole full zoneset in force, so whatever someone staged in the full
zone database after flexzone read it would go live with flexzone's zones. The driver (cisco_mds.py)
closes that window by mode:

* enhanced mode: it takes the VSAN's zone session lock first and reads again under it (nobody else
  can commit while it holds the lock), then plans and edits from that read;
* basic mode has no lock: it edits, reads again right before ``zoneset activate`` and refuses on any
  change but its own, taking its own edits back (``changed_under_us``, ``restore_lines``). What
  remains is the one round trip between that read and the activation.

Whether a lock is ours is read from our own sessions' output only (``still_holding``): a lock is
remembered as ours, and freed later when a session of ours died holding it, only once this process saw
``Enhanced zone session has been created`` in a session of its own and no commit since. NX-OS names a
lock's holder by user alone (``session: cli [USER]``), which a person using flexzone's account shares.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from netmiko.exceptions import ConfigInvalidException

from routers.drivers.base import CommandRejected, ZoningBusy
from routers.drivers.cisco_mds_show import ZoneStatus
from routers.drivers.netmiko_base import SessionGuardedDriver, closed_session_is_eof
from routers.drivers.together import send_and_split
from routers.drivers.zoning import FabricZoning, describe_changes

SESSION_CREATED = "Enhanced zone session has been created"
COMMITTED = "Commit operation initiated"
BUSY = r"Lock is currently busy"
CONFIG_ERRORS = rf"% (?:Invalid|Incomplete|Ambiguous)|not present|in use|does not exist|{BUSY}"

# Enhanced-mode locks this process's sessions died holding: (host, port, vsan). NX-OS keeps such a
# lock until it is committed or discarded; the next session of ours to that router discards it.
_LEFT_LOCKS: set[tuple[str, int, int]] = set()


def still_holding(before: bool, said: str) -> bool:
    """Whether our session holds its enhanced-mode lock after printing `said`, given whether it held it
    before: a session created since the last commit, or one held before and not committed since."""
    created, committed = said.rfind(SESSION_CREATED), said.rfind(COMMITTED)
    return created > committed or (before and committed < 0)


# name -> the members flexzone means the zoneset to activate to list it with, None: not listed.
Expected = dict[str, list[str] | None]


def changed_under_us(before: FabricZoning, now: FabricZoning, zoneset: str, expect: Expected) -> list[str]:
    """What differs, in what activating `zoneset` would put in force, from what flexzone read (`before`)
    plus its own edits (`expect`): another administrator's change made meanwhile."""
    changes = []
    if now.in_effect != before.in_effect:
        changes.append(f"the active zoneset is now {now.in_effect or 'none'}, was {before.in_effect or 'none'}")
    # Differences between defined and in effect that were there at the first read are not news (an
    # fz_zoneset no longer active, say): the plan took them into account.
    known = set(before.staged_changes(zoneset, expect))
    changes += [change for change in now.staged_changes(zoneset, expect) if change not in known]
    listed = set(now.configs.get(zoneset, []))
    for name, members in sorted(expect.items()):
        if members is None and name in listed:
            changes.append(f"zone {name} is still in {zoneset}")
        elif members is not None and (name not in listed or sorted(now.zones.get(name, [])) != sorted(members)):
            changes.append(f"zone {name} is not in {zoneset} as flexzone wrote it")
    return changes


def restore_lines(before: FabricZoning, now: FabricZoning, names: set[str], zoneset: str, vsan: int) -> list[str]:
    """The lines that put flexzone's own zones `names` (and their place in `zoneset`) back as `before`
    had them, in the full database; nothing else is touched."""
    lines: list[str] = []
    for name in sorted(names):
        had, has = before.zones.get(name), now.zones.get(name)
        if had is None:
            continue
        missing, extra = [m for m in had if m not in (has or [])], [m for m in has or [] if m not in had]
        if missing or extra:
            lines += [f"zone name {name} vsan {vsan}", *(f"member pwwn {m}" for m in missing),
                      *(f"no member pwwn {m}" for m in extra)]
    listed_before = set(before.configs.get(zoneset, [])) & names
    listed_now = set(now.configs.get(zoneset, [])) & names
    # A zoneset that now lists only flexzone's zones but before did not exist, or listed others' too,
    # is one flexzone's edit created (someone deleted theirs meanwhile): it goes, rather than stays empty.
    created = zoneset in now.configs and not set(now.configs[zoneset]) - names and (
        zoneset not in before.configs or set(before.configs[zoneset]) - names)
    if listed_before ^ listed_now and zoneset in now.configs and not created:
        lines += [f"zoneset name {zoneset} vsan {vsan}", *(f"member {n}" for n in sorted(listed_before - listed_now)),
                  *(f"no member {n}" for n in sorted(listed_now - listed_before))]
    if created:
        lines.append(f"no zoneset name {zoneset} vsan {vsan}")
    lines += [f"no zone name {name} vsan {vsan}" for name in sorted(names) if name not in before.zones
              and name in now.zones]
    return lines


def stale_full_database(fabric: FabricZoning, status: ZoneStatus, ours: set[str], vsan: int) -> str | None:
    """Basic mode with ``distribute: active only``: activation spreads only the active zoneset, so this
    switch's full database may be empty or older than what is in force (another switch activated
    since). Re-activating from it would put that older content in force: the refusal says how an
    administrator brings the full database up to date (None: nothing to refuse)."""
    zoneset = fabric.in_effect
    if status.enhanced or status.distribute != "active only" or zoneset is None:
        return None
    if zoneset in fabric.configs and not fabric.staged_changes(zoneset, ours):
        return None
    if zoneset not in fabric.configs:
        held = f"does not hold the active zoneset {zoneset}"
    else:
        held = (f"holds another version of the active zoneset {zoneset} "
                f"({describe_changes(fabric.staged_changes(zoneset, ours))}: someone staged changes there, or "
                "another switch activated since)")
    return (f"vsan {vsan} is in basic zoning mode with 'distribute: active only', and this switch's full zone "
            f"database {held}: re-activating it would put the full database's content in force instead of what is "
            f"active now. Bring the full database up to date first, on this switch: 'zone copy active-zoneset "
            f"full-zoneset vsan {vsan}' (then check it with 'show zoneset vsan {vsan}'), or keep every switch's full "
            f"database in step with 'zoneset distribute full vsan {vsan}'")


class ZoneLocks(SessionGuardedDriver):
    """The MDS driver's part that sends configuration (``configure``, which sees a session lock taken) and
    keeps track of its enhanced-mode zone session locks: which it holds,
    which a dead session of this process left behind, freeing only those, and reading a commit back.
    The base of CiscoMdsDriver, whose ``zone_status`` it uses."""

    _holding: set[int]
    # Set by the engine: called with (vsan, True) when a session of ours is seen to take the lock and
    # (vsan, False) when ours is freed, so that the record outlives this process (operations/zoning_locks.py).
    on_lock_record: Callable[[int, bool], None] | None = None

    def configure(self, lines: list[str], *, entered: bool = False) -> str:
        """Send the lines from ``configure terminal`` (left out when `entered`: the session is in
        configuration mode already) to ``end``, one round trip each but the last line's, which goes
        together with ``end``: ``end`` after a failed line only leaves configuration mode, which the
        failure needs anyway.

        In enhanced mode a failure after our zone session was created discards it (``no zone
        commit``), so nothing half-edited stays pending under our lock.
        """
        assert (lines[0] == "configure terminal") != entered and lines[-1] == "end" and len(lines) > 2 - entered
        conn = self.conn
        vsan = self.target.vsan
        held = vsan in self._holding
        if not held:  # recorded before anything is sent: this session may take the lock, then die unseen
            self._record_lock(vsan, True)
        mark = len(self._peek_transcript())
        with self._router_call(lines[-2]), closed_session_is_eof(self):
            try:
                # `configure terminal` goes as a line of its own, answered by its prompt: netmiko's
                # config_mode()/exit_config_mode() would also send an empty line before and after to
                # look at the prompt, round trips the prompts already show.
                # Each send waits the command timeout at most (less when the operation's limit is nearer).
                limit = self.target.command_timeout
                output = ""
                if lines[:-2]:
                    output = str(conn.send_config_set(lines[:-2], read_timeout=self.wait_limit(limit),
                                                      error_pattern=CONFIG_ERRORS, enter_config_mode=False,
                                                      exit_config_mode=False))
                (said, ended), prompt = send_and_split(conn, lines[-2:], self.wait_limit(limit))
                output += f"\n{lines[-2]}\n{said}\nend\n{ended}"
                if re.search(CONFIG_ERRORS, said):
                    raise ConfigInvalidException(f"Invalid input detected at command: {lines[-2]}")
                if not re.fullmatch(rf"{re.escape(conn.base_prompt)}#", prompt):
                    output += str(conn.exit_config_mode())  # not back in exec mode: make sure, as netmiko does
            except ConfigInvalidException as exc:
                said = self._peek_transcript()[mark:]
                message = error_line(said)
                try:
                    conn.exit_config_mode()  # leave the session usable for the next operation
                except Exception:  # noqa: BLE001 - the rejection is what matters; a dead session is dropped later
                    pass
                # Never locked, or our commit already freed the lock (which may be someone else's now):
                # nothing of ours to discard.
                self._track_lock(holding := still_holding(held, said))
                if holding:
                    self.discard_zone_session()
                if re.search(BUSY, message):
                    raise ZoningBusy(f"configure: {message} (another session holds the zoning lock of vsan {vsan})",
                                     transcript=self._peek_transcript()) from exc
                raise CommandRejected(f"configure: {message}", router_message=message,
                                      transcript=self._peek_transcript()) from exc
            except Exception:
                # A lock whose creation we did not see is not remembered as ours (it may be a person's
                # by the time anyone looks); one we saw and did not commit is freed by our next session.
                self._track_lock(still_holding(held, self._peek_transcript()[mark:]))
                raise
        self._track_lock(still_holding(held, output))
        return output

    def zone_status(self) -> ZoneStatus:
        """The VSAN's zone status as the switch reports it (CiscoMdsDriver reads it)."""
        raise NotImplementedError

    def adopt_left_lock(self, vsan: int) -> None:
        """A lock flexzone recorded taking, in a session of its own that is gone (another process's, which
        died): freed like one this process's dead session left (claim_zoning)."""
        _LEFT_LOCKS.add((self.target.host, self.target.port, vsan))

    def _record_lock(self, vsan: int, holding: bool) -> None:
        if self.on_lock_record is not None:
            self.on_lock_record(vsan, holding)

    def _drop(self) -> None:
        for vsan in self._holding:
            _LEFT_LOCKS.add((self.target.host, self.target.port, vsan))
        self._holding.clear()
        super()._drop()

    def close(self) -> None:
        """A session closed holding its lock (an operation ran out of time under it) frees it first; if
        that fails, the lock is remembered for the next session, as for a dropped one."""
        if self.target.vsan in self._holding and self._conn is not None:
            self.discard_zone_session()
        for vsan in self._holding:
            _LEFT_LOCKS.add((self.target.host, self.target.port, vsan))
        self._holding.clear()
        super().close()

    def _track_lock(self, holding: bool) -> None:
        vsan = self.target.vsan
        (self._holding.add if holding else self._holding.discard)(vsan)
        self._record_lock(vsan, holding)

    def discard_zone_session(self) -> None:
        """Free our enhanced-mode lock and drop our pending changes (``no zone commit vsan N``).

        Only a discard the switch accepted frees it here; otherwise the lock stays remembered, and the
        next session frees it if it is still ours (claim_zoning). Freeing our own lock is clean-up: it
        is sent even when the operation's time limit has passed (bounded by the command timeout)."""
        vsan = self.target.vsan
        self._ahead.clear()  # spoken to outside _router_call: nothing read before stands after
        try:
            self.conn.send_config_set([f"no zone commit vsan {vsan}"], exit_config_mode=True,
                                      read_timeout=self.target.command_timeout, error_pattern=CONFIG_ERRORS)
        except Exception as exc:  # noqa: BLE001 - a dead session is remembered in _drop and freed next time
            self.warn(f"no zone commit vsan {vsan} failed ({first_line(str(exc))}); the zoning lock stays "
                      "remembered for the next session")
            if isinstance(exc, ConfigInvalidException):
                try:
                    self.conn.exit_config_mode()
                except Exception:  # noqa: BLE001 - a dead session is dropped later
                    pass
            return
        self._holding.discard(vsan)
        self._record_lock(vsan, False)

    def claim_zoning(self) -> tuple[ZoneStatus, list[str]]:
        """Before any change: someone else's lock is ZoningBusy; a lock our own dead session was seen to
        take and left behind is freed by the lines returned (sent first in the configure session)."""
        status = self.zone_status()
        key = (self.target.host, self.target.port, self.target.vsan)
        if status.holder is None:
            _LEFT_LOCKS.discard(key)
            self._record_lock(self.target.vsan, False)  # nobody's: a record of ours is over (or was an intent)
            return status, []
        holder_user = re.search(r"\[(\S+)\]", status.holder)
        ours = key in _LEFT_LOCKS or self.target.vsan in self._holding  # left by a dead session, or by this one
        if ours and holder_user and holder_user.group(1) == self.target.username:
            self.warn(f"freed the zoning lock of vsan {self.target.vsan} that a session of flexzone's left "
                      "behind (no zone commit)")
            return status, [f"no zone commit vsan {self.target.vsan}"]
        raise ZoningBusy(f"vsan {self.target.vsan}: the zoning session lock is held by {status.holder}; waiting for it",
                         transcript=self._peek_transcript())

    def verify_commit(self) -> None:
        status = self.zone_status()
        if status.holder is not None or re.search(r"(?i)fail", status.status):
            raise CommandRejected(f"zone commit vsan {self.target.vsan}: {status.status or 'lock still held'}",
                                  router_message=status.status, transcript=self._peek_transcript())
        _LEFT_LOCKS.discard((self.target.host, self.target.port, self.target.vsan))


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "^"]
    errors = [line for line in lines if re.search(CONFIG_ERRORS, line)]
    return (errors or lines or ["configuration rejected"])[-1]

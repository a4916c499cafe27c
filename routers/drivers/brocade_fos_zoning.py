"""Zoning on a live Brocade FOS fabric: the zoning half of the FOS driver (brocade_fos.py), as a mixin.

Never replace or disable the fabric's configuration
---------------------------------------------------
The switch's fabric already carries the zoning of every other host in its effective configuration.
flexzone adds its zones to the cfg *in effect* (read with ``cfgshow``), re-enables that same cfg, and
on remove takes its zones out and re-enables it again. It never enables a cfg of its own while
another is in effect and never disables zoning. Only a fabric with no effective configuration (and a
default zone of No Access) gets one of flexzone's own, ``fz_cfg``, with a warning in the journal;
and only when that ``fz_cfg`` loses its last zone does a remove disable it again, which puts the
fabric back exactly as flexzone found it. A defined cfg whose content differs from the effective
one beyond the link's own zones holds someone else's staged changes: the operation is refused
rather than enabling them (see routers/drivers/zoning.py for the rules both FCIP drivers share).

Zoning transactions: every zoning edit runs inside the session's transaction, ended by ``cfgenable``
or ``cfgsave`` or dropped by ``cfgtransabort``. Before any change the driver reads ``cfgtransshow``:
another session's open transaction is ZoningBusy (the engine waits and retries within the
operation's time limit; flexzone never aborts it), while a transaction of this session's own, left
by a failed attempt, is aborted first. Which one is ours is told by its token, read with
``cfgtransshow`` right after this session's first accepted edit (FOS keeps one transaction per
fabric, so the token names it); "It is abortable" alone is not taken as proof of ownership. A
failed edit aborts this session's transaction at once, so nothing half-done is ever enabled or
saved. Between the first read and the first edit another admin can still act, so the zoning is read
again just before ``cfgenable``, inside the transaction (where nobody else can change it): a
different configuration in effect drops our edits and the step starts again on the new one
(ZoningChanged, transient), and newly staged changes refuse the step.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from routers.drivers.base import CommandRejected, GarbledOutput, LinkSpec, ZoningBusy, ZoningChanged
from routers.drivers.brocade_fos_show import NO_TRANSACTION, FosZoning, parse_cfgshow, parse_cfgtransshow
from routers.drivers.together import operation
from routers.drivers.zoning import plan_link_zoning, refuse_staged_changes, touches

YES_NO = r"\(yes, y, no, n\): \[no\]\s*$"
ZONE_CFG = "fz_cfg"
ZONE_RE = re.compile(r"fz_z(0|[1-9]\d*)_ve(0|[1-9]\d*)(?:_([0-9a-f]{16})_([0-9a-f]{16}))?")  # as flexzone writes them


def link_prefix(spec: LinkSpec) -> str:
    return f"fz_z{spec.zone}_ve{spec.port}"


class FosZoningEdits:
    """Reading and changing a FOS fabric's zoning inside this session's own transaction.

    Mixed into BrocadeFosDriver, which provides ``run``, ``show``, ``run_confirmed``, ``rejection``,
    ``warn`` and the transcript; ``_own_token`` is the token of the zoning transaction this session's
    own edits opened (None: none open).
    """

    zone_cfg = ZONE_CFG
    _own_token: str | None
    run: Callable[..., str]
    show: Callable[..., Any]
    run_confirmed: Callable[..., str]
    together: Callable[[str | None, list[str]], str]
    _ahead: dict[str, str]
    _operations: int
    rejection: Callable[[str, str], Exception]
    warn: Callable[[str], None]
    _peek_transcript: Callable[[], str]
    zoning_read: Callable[[Any], None]
    zoning_changed: Callable[[Any], None]
    _transcript_on_refusal: Callable[[], Any]
    _conn: Any

    # --- reading -------------------------------------------------------------------------------
    @operation
    def zoning(self) -> FosZoning:
        fabric = self.show("cfgshow", parse_cfgshow)
        self.zoning_read(fabric)
        return fabric

    def transaction(self) -> str | None:
        """None when no zoning transaction is open, else its token (as FOS prints it)."""
        open_transaction = self.show("cfgtransshow", parse_cfgtransshow)
        return None if open_transaction is None else open_transaction.token

    # --- the transaction -----------------------------------------------------------------------
    def claim_zoning(self) -> None:
        """Before changing anything: wait for another session's transaction (ZoningBusy), abort our own.

        Ours is the one whose token this session read after its own first edit (a failed attempt left
        it open); any other transaction belongs to someone else and is left alone.
        """
        token = self.transaction()
        if token is None:
            self._own_token = None
            return
        if self._own_token is not None and token == self._own_token:
            self.abort_own_transaction()
            return
        raise ZoningBusy(f"another session holds the fabric's zoning transaction (token {token}); waiting for it",
                         transcript=self._peek_transcript())

    def abort_own_transaction(self) -> None:
        output = self.run("cfgtransabort").strip()
        if output and NO_TRANSACTION not in output:
            raise self.rejection("cfgtransabort", output)
        self._own_token = None

    def abort_if_own(self) -> None:
        """Drop this session's transaction if it is still the one open (after a failed edit)."""
        if self._own_token is not None and self.transaction() == self._own_token:
            self.abort_own_transaction()
        self._own_token = None

    def confirm(self, command: str) -> str:
        """A zoning command that asks (yes, y, no, n): answer y; return everything it said."""
        return self.run_confirmed(command, YES_NO, "y")

    def zoning_edit(self, command: str, reads: list[str] | None = None) -> None:
        """A zoning edit: silent on success, so any output is an error (Cinder's rule). `reads` go in
        the same send (a read is harmless after an edit that failed) and are taken by the next show()s.

        The first edit that succeeds opens this session's transaction; its token is read at once
        (``cfgtransshow`` sent with it), so that only that transaction is ever aborted (an edit refused
        because another session got there first opened nothing of ours).
        """
        first = self._own_token is None
        output = self.together(command, [*(["cfgtransshow"] if first else []), *(reads or [])]).strip()
        if output:
            self._ahead.clear()  # read after a refused edit: whoever handles the refusal reads afresh
            raise self.rejection(command, output)
        if first:
            self._own_token = self.transaction()

    def zoning_edits(self, edits: list[str], *, read_after: bool) -> None:
        """The edits, one round trip each; the last (`read_after`: the zoning is read again before
        enabling) sent with that ``cfgshow``."""
        for index, command in enumerate(edits):
            self.zoning_edit(command, ["cfgshow"] if read_after and index == len(edits) - 1 else [])

    def enable(self, cfg: str) -> None:
        output = self.confirm(f'cfgenable "{cfg}"')
        if not re.search(r"is in effect", output):
            raise self.rejection(f'cfgenable "{cfg}"', output)
        self._own_token = None

    def save(self) -> None:
        output = self.confirm("cfgsave")
        if not re.search(r"Nothing changed|Updating flash", output):
            raise self.rejection("cfgsave", output)
        self._own_token = None

    @operation
    def save_config(self) -> None:
        """Extension config is written to flash as applied and zoning by cfgenable; only a transaction
        of this session's own (edits sent outside add/remove) is saved. Another session's is theirs."""
        if self._own_token is not None:
            self.save()

    def _transactional(self, work: Callable[[], None]) -> None:
        """Run zoning edits; if one fails, drop this session's transaction so nothing half-done stays."""
        try:
            work()
        except (CommandRejected, GarbledOutput, ZoningBusy, ZoningChanged):
            if self._own_token is not None and self._conn is not None:
                try:
                    self.abort_if_own()
                except Exception:  # noqa: BLE001 - the original failure is what the caller must see
                    pass
            raise

    # --- a link's zones in ---------------------------------------------------------------------
    def _zoning_plan(self, spec: LinkSpec, fabric: FosZoning) -> tuple[str | None, list[str]]:
        """The cfg to enable and the edits that make it enforce exactly the link's pair zones
        (None: nothing to do). Refuses, before anything is sent, what flexzone must not do."""
        open_refusal = None if fabric.default_access == "No Access" else (
            f"no zoning configuration is in effect and the default zone gives {fabric.default_access}; "
            "enabling one would cut every other device off, so flexzone will not create one here",
            f"No Effective configuration: ({fabric.default_access})")
        with self._transcript_on_refusal():
            plan = plan_link_zoning(fabric, spec, link_prefix(spec), ZONE_RE, self.zone_cfg, open_refusal)
        cfg, wanted, stale = plan.config, plan.wanted, plan.stale
        edits = []
        for name, members in wanted.items():
            have = fabric.zones.get(name)
            if have is None:
                edits.append(f'zonecreate "{name}", "{"; ".join(members)}"')
                continue
            missing = [m for m in members if m not in have]
            extra = [m for m in have if m not in members]
            if missing:  # add before removing: a zone may never be left empty
                edits.append(f'zoneadd "{name}", "{"; ".join(missing)}"')
            if extra:
                edits.append(f'zoneremove "{name}", "{"; ".join(extra)}"')
        in_cfg = fabric.configs.get(cfg, [])
        joining = [name for name in wanted if name not in in_cfg]
        if joining:
            verb = "cfgadd" if cfg in fabric.configs else "cfgcreate"
            edits.append(f'{verb} "{cfg}", "{"; ".join(joining)}"')
        leaving = [name for name in stale if name in in_cfg]
        if leaving:
            edits.append(f'cfgremove "{cfg}", "{"; ".join(leaving)}"')
        edits += [f'zonedelete "{name}"' for name in stale if name in fabric.zones]
        enforced = all(sorted(fabric.active.get(name, [])) == sorted(members) for name, members in wanted.items())
        if not edits and enforced and not set(stale) & set(fabric.active):
            return None, []
        return cfg, edits

    def _apply(self, cfg: str, edits: list[str], fabric: FosZoning, ours: set[str]) -> None:
        self.zoning_edits(edits, read_after=True)
        self.zoning_changed(self._still_as_read(fabric, cfg, ours))  # journaled before it goes in force
        self.enable(cfg)
        if fabric.in_effect is None:
            self.warn(f"no zoning configuration was in effect on the fabric; flexzone created and enabled "
                      f"{cfg} for its zones (default zone access was {fabric.default_access})")

    def _still_as_read(self, before: FosZoning, cfg: str, ours: set[str]) -> FosZoning:
        """Just before enabling, inside this session's transaction (so nobody else can change the
        zoning any more): the configuration in effect must still be the one read before the first
        edit, and the defined one must hold nothing new but the link's zones. Otherwise another admin
        acted in between, and enabling would replace their configuration or enforce their staged work.
        """
        now = self.zoning()
        if now.in_effect != before.in_effect:
            raise ZoningChanged(
                f"the configuration in effect changed from {before.in_effect or 'none'} to {now.in_effect or 'none'} "
                "while flexzone was editing; its edits were dropped, to be made again on what is in effect now",
                transcript=self._peek_transcript())
        if before.in_effect is not None and (refusal := refuse_staged_changes(now, cfg, ours)):
            raise CommandRejected(refusal, router_message="", transcript=self._peek_transcript())
        return now

    # --- a link's zones out --------------------------------------------------------------------
    def _check_unzone(self, fabric: FosZoning, ours: set[str]) -> None:
        """Refuse, before anything changes, a remove that would enforce someone's staged changes or
        leave a configuration flexzone did not create without zones."""
        cfg = fabric.in_effect
        if cfg is None or not touches(fabric, cfg, ours):
            return
        if refusal := refuse_staged_changes(fabric, cfg, ours):
            raise CommandRejected(refusal, router_message="", transcript=self._peek_transcript())
        if not set(fabric.configs.get(cfg, [])) - ours and cfg != self.zone_cfg:
            raise CommandRejected(
                f"{cfg} holds nothing but flexzone's zones of this link; removing them would leave no "
                f"configuration in effect, and flexzone never disables a configuration it did not create",
                router_message="", transcript=self._peek_transcript())

    def _unzone(self, fabric: FosZoning, ours: set[str]) -> None:
        """Take the link's zones out of the cfg in effect and re-enable it (_check_unzone ran first)."""
        cfg = fabric.in_effect
        if cfg is not None and touches(fabric, cfg, ours) and not set(fabric.configs.get(cfg, [])) - ours:
            # fz_cfg was created by flexzone on a fabric with none in effect: disabling it restores that.
            self.warn(f"the last flexzone zone left {cfg}, which flexzone had created on a fabric with no "
                      "configuration in effect; zoning is back to no configuration in effect")
            self._disable_own_cfg(fabric, ours)
            return
        # Our zones are taken out of the cfg in effect and out of fz_cfg only; any other cfg that lists
        # one is somebody else's, so that zone stays defined (FOS refuses to delete a cfg member).
        holders = [holder for holder in dict.fromkeys((cfg, self.zone_cfg)) if holder in fabric.configs]
        edits = []
        for holder in holders:
            leaving = [name for name in sorted(ours) if name in fabric.configs[holder]]
            if leaving:
                edits.append(f'cfgremove "{holder}", "{"; ".join(leaving)}"')
        held_elsewhere = {name for other in fabric.cfgs_holding(ours) if other not in holders
                          for name in fabric.configs[other] if name in ours}
        edits += [f'zonedelete "{name}"' for name in sorted(ours)
                  if name in fabric.zones and name not in held_elsewhere]
        enabling = cfg is not None and touches(fabric, cfg, ours)
        self.zoning_edits(edits, read_after=enabling)
        if held_elsewhere:
            self.warn(f"zones {', '.join(sorted(held_elsewhere))} stay defined: other configurations list them")
        if enabling:
            assert cfg is not None
            self.zoning_changed(self._still_as_read(fabric, cfg, ours))
            self.enable(cfg)
        elif self._own_token is not None:
            self.save()

    def _disable_own_cfg(self, fabric: FosZoning, ours: set[str]) -> None:
        self.zoning_changed(fabric)
        output = self.confirm("cfgdisable")
        if "Updating flash" not in output:
            raise self.rejection("cfgdisable", output)
        self.zoning_edit(f'cfgdelete "{self.zone_cfg}"')
        for name in sorted(ours):
            if name in fabric.zones:
                self.zoning_edit(f'zonedelete "{name}"')
        self.save()

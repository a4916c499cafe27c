"""Cisco MDS 9000 (NX-OS) FCIP driver over SSH, using netmiko's stock ``cisco_nxos`` class.

Never replace or deactivate the VSAN's active zoneset
-----------------------------------------------------
Each router has a VSAN in the registry (default 1). Its active zoneset carries every production
zone of the VSAN, so flexzone adds its zones to *that* zoneset (``zoneset name <active> vsan N`` /
``member <zone>``) and re-activates *that* one; a remove takes them out and re-activates it again.
flexzone never activates a zoneset of its own in its place. Only a VSAN with no active zoneset gets
``fz_zoneset``, with a warning in the journal, and only if its default zone is ``deny`` (with
``permit`` every device there reaches every other, and any active zoneset would cut off those not in
it: such a VSAN is refused). Only when ``fz_zoneset`` loses its last zone is it deactivated again,
which puts the VSAN back as flexzone found it. A full zoneset that differs from
the active one beyond the link's own zones holds someone else's staged changes: the operation is
refused rather than activating them (routers/drivers/zoning.py has the rules both FCIP drivers
share).

Zoning sessions. ``show zone status vsan N`` is read before any change. In enhanced mode the first
zoning edit takes a fabric-wide session lock that ``zone commit vsan N`` distributes and frees:
a lock held by anyone else is ZoningBusy (the engine waits and retries within the operation's time
limit; flexzone never clears another session's lock), our edits end with ``zone commit vsan N``
and the status is read back. If an edit fails, ``no zone commit vsan N`` discards our pending
changes and frees our lock (only while our session is still uncommitted: after our own commit the
lock may be someone else's); if our session dies holding the lock (NX-OS keeps it), this process
remembers it and the next session on that router frees it the same way before retrying. In basic
mode there is no lock and ``zoneset activate`` distributes. Confirmation questions (the activation
of a much bigger zoneset asks, netmiko #154) are switched off with ``terminal dont-ask`` at login.

How a flexzone link maps onto MDS FCIP
--------------------------------------
``LinkSpec(port, zone, remote_ip, local_ip, wwn, initiators, vsan)`` is, on the switch:

* FCIP interface ``fcip<port>`` (ids 1-255, the range every MDS release accepts) described
  ``flexzone`` (so we only ever change or delete interfaces we created), using FCIP profile
  ``<port>`` bound to ``local_ip`` and peering with ``remote_ip``. The interface is shared by every
  flexzone zone carried to that remote gateway. An existing ``fcip<port>`` without that description,
  or a profile ``<port>`` that any other interface uses (or that flexzone's interface does not), is
  someone else's: the add is refused, and a remove never deletes a profile another interface uses;
* one zone per initiator-target pair, ``fz_z<zone>_fcip<port>_<initiator>_<target>`` (16 hex digits
  each) with ``member pwwn`` lines for exactly those two ports, in the VSAN's active zoneset.

``render_add`` shows a fresh link's ``configure terminal`` session, naming the active zoneset
``<active zoneset>`` (read at run time) and leaving out ``zone commit`` (sent in enhanced mode only);
the driver skips what is already in place. An interface peering with another gateway is
CommandRejected on add and LinkAbsent on remove; removing a link with no zone raises LinkAbsent.
``local_ip``, ``wwn`` and at least one initiator are required to add, not to remove.
``save_config`` copies running to startup.
What is read (``show zone status``, the zone views, ``show device-alias database`` when needed and
``show running-config fcip``, never the whole running-config) is parsed in cisco_mds_show.py; the
interface and zone lines are written in cisco_mds_config.py.

Why a VSAN per router rather than VSAN = zone id: VSAN 1 is the default VSAN every MDS port (FCIP
interfaces included, "Port vsan is 1") already belongs to, so the zone is enforced with no VSAN
database or trunk-allowed changes; zone ids 4079 and 4094 would collide with reserved VSANs; and a
VSAN per zone would partition fabrics, which is a site design decision, not a per-link one.
"""

from __future__ import annotations

import ipaddress
import re

from netmiko.exceptions import ConfigInvalidException

from routers.drivers.base import (
    CommandRejected,
    LinkAbsent,
    LinkExists,
    LinkSpec,
    RouterLink,
    ZoningBusy,
)
from routers.drivers.cisco_mds_config import DESCRIPTION, foreign_fcip, interface_lines, profile_users, zone_lines
from routers.drivers.cisco_mds_show import (
    FcipConfig,
    ZoneStatus,
    compared_members,
    names_device_alias,
    parse_active_zoneset,
    parse_device_aliases,
    parse_fcip_config,
    parse_zone_status,
    parse_zones,
    parse_zoneset_brief,
    resolve,
)
from routers.drivers.netmiko_base import SessionGuardedDriver, closed_session_is_eof
from routers.drivers.zoning import (
    ACTIVE_ZONESET,
    FabricZoning,
    check_fcip_add,
    describe_changes,
    fabric_links,
    link_zones,
    pair_zones,
    plan_link_zoning,
    port_zones,
    refuse_staged_changes,
    touches,
)
from routers.platforms import Platform, Transport

FCIP_IDS = range(1, 256)
ZONESET = "fz_zoneset"
ZONE_RE = re.compile(r"fz_z(0|[1-9]\d*)_fcip(0|[1-9]\d*)(?:_([0-9a-f]{16})_([0-9a-f]{16}))?")  # as flexzone writes them
BUSY = r"Lock is currently busy"
CONFIG_ERRORS = rf"% (?:Invalid|Incomplete|Ambiguous)|not present|in use|does not exist|{BUSY}"
SESSION_CREATED = "Enhanced zone session has been created"
COMMITTED = "Commit operation initiated"

# Enhanced-mode locks this process's sessions died holding: (host, port, vsan). NX-OS keeps such a
# lock until it is committed or discarded; the next session of ours to that router discards it.
_LEFT_LOCKS: set[tuple[str, int, int]] = set()


def own_session_open(said: str) -> bool:
    """Whether a configure session's output shows our enhanced-mode zone session created and not
    committed since (after ``zone commit`` the lock is free, and may be anyone's)."""
    return said.rfind(SESSION_CREATED) > said.rfind(COMMITTED)


def link_prefix(spec: LinkSpec) -> str:
    return f"fz_z{spec.zone}_fcip{spec.port}"


class CiscoMdsDriver(SessionGuardedDriver):
    """MDS NX-OS FCIP: a flexzone fcip interface per port, a zone per initiator-target pair in the
    VSAN's active zoneset (module doc)."""

    platform = Platform.CISCO_MDS
    zones_initiators = True
    device_types = {Transport.SSH: "cisco_nxos", Transport.TELNET: "cisco_nxos_telnet"}
    error_pattern = rf"(?m)^% |not present|in use|does not exist|{BUSY}"
    zoneset = ZONESET

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._holding: set[int] = set()  # VSANs whose enhanced-mode lock this session may hold

    # --- pure rendering ----------------------------------------------------------------------
    @classmethod
    def check_spec(cls, spec: LinkSpec, *, adding: bool) -> None:
        """MDS-specific limits on top of LinkSpec's own validation (raised before anything is sent)."""
        if spec.port not in FCIP_IDS:
            raise ValueError(f"port: must be an fcip interface id {FCIP_IDS.start}-{FCIP_IDS.stop - 1}, "
                             f"got {spec.port}")
        if ipaddress.ip_address(spec.remote_ip).version != 4:
            raise ValueError("remote_ip: FCIP peers are IPv4 addresses here")
        if not adding:
            return
        if spec.local_ip is None:
            raise ValueError("local_ip: required for the FCIP profile")
        if ipaddress.ip_address(spec.local_ip).version != 4:
            raise ValueError("local_ip: FCIP profiles take an IPv4 address here")
        check_fcip_add(spec)

    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=True)
        zones = pair_zones(link_prefix(spec), spec)
        return [
            "configure terminal",
            *interface_lines(spec),
            *zone_lines(zones, spec.vsan),
            f"zoneset name {ACTIVE_ZONESET} vsan {spec.vsan}",
            *(f"member {name}" for name in zones),
            f"zoneset activate name {ACTIVE_ZONESET} vsan {spec.vsan}",
            "end",
        ]

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=False)
        zones = list(pair_zones(link_prefix(spec), spec)) if spec.wwn else []
        lines = ["configure terminal"]
        if zones:
            lines += [f"zoneset name {ACTIVE_ZONESET} vsan {spec.vsan}", *(f"no member {name}" for name in zones)]
            lines += [f"no zone name {name} vsan {spec.vsan}" for name in zones]
            lines.append(f"zoneset activate name {ACTIVE_ZONESET} vsan {spec.vsan}")
        return [*lines, f"no interface fcip {spec.port}", f"no fcip profile {spec.port}", "end"]

    @classmethod
    def render_notes(cls, action: str, spec: LinkSpec) -> list[str]:
        verb = ("adds its zones to it and re-activates it" if action == "add"
                else "takes its zones out and re-activates it")
        return [
            f"{ACTIVE_ZONESET} is the zoneset active in vsan {spec.vsan}, read at run time: flexzone {verb}, never "
            f"activates one of its own in its place (in a vsan with none active it creates {cls.zoneset})",
            f"in enhanced zoning mode the edit ends with 'zone commit vsan {spec.vsan}'; another session's zoning lock "
            "is waited for; pieces already in place are skipped",
        ]

    # --- session -----------------------------------------------------------------------------
    def connect(self) -> None:
        fresh = self._conn is None
        super().connect()
        if fresh:
            self._holding.clear()
            # Questions (the activation of a much bigger zoneset, netmiko #154) would hang a run.
            self.run("terminal dont-ask")

    def _drop(self) -> None:
        for vsan in self._holding:
            _LEFT_LOCKS.add((self.target.host, self.target.port, vsan))
        self._holding.clear()
        super()._drop()

    # --- commands ----------------------------------------------------------------------------
    def configure(self, lines: list[str]) -> str:
        """Send the lines between ``configure terminal`` and ``end`` (netmiko sends those two itself).

        In enhanced mode a failure after our zone session was created discards it (``no zone
        commit``), so nothing half-edited stays pending under our lock.
        """
        assert lines[0] == "configure terminal" and lines[-1] == "end"
        conn = self.conn
        vsan = self.target.vsan
        if any(_is_zoning(line) for line in lines):
            self._holding.add(vsan)
        mark = len(self._peek_transcript())
        with self._router_call(lines[1]), closed_session_is_eof(self):
            try:
                output = str(conn.send_config_set(
                    lines[1:-1], read_timeout=self.wait_limit(self.target.command_timeout), error_pattern=CONFIG_ERRORS,
                    exit_config_mode=True,
                ))
            except ConfigInvalidException as exc:
                said = self._peek_transcript()[mark:]
                message = _error_line(said)
                try:
                    conn.exit_config_mode()  # leave the session usable for the next operation
                except Exception:  # noqa: BLE001 - the rejection is what matters; a dead session is dropped later
                    pass
                if own_session_open(said):
                    self.discard_zone_session()
                else:
                    # Never locked, or our commit already freed the lock, which may be someone else's now
                    # (NX-OS lets any session of the same user discard it): nothing of ours to discard.
                    self._holding.discard(vsan)
                if re.search(BUSY, message):
                    raise ZoningBusy(f"configure: {message} (another session holds the zoning lock of vsan {vsan})",
                                     transcript=self._peek_transcript()) from exc
                raise CommandRejected(f"configure: {message}", router_message=message,
                                      transcript=self._peek_transcript()) from exc
            except Exception:
                said = self._peek_transcript()[mark:]
                if COMMITTED in said and not own_session_open(said):
                    self._holding.discard(vsan)  # the session dropped after our commit freed the lock
                raise
        self._holding.discard(vsan)  # committed (enhanced mode) or never locked (basic mode)
        return output

    def discard_zone_session(self) -> None:
        """Free our enhanced-mode lock and drop our pending changes (``no zone commit vsan N``).

        Only a discard the switch accepted frees it here; otherwise the lock stays remembered, and the
        next session frees it if it is still ours (claim_zoning)."""
        vsan = self.target.vsan
        try:
            self.conn.send_config_set([f"no zone commit vsan {vsan}"], exit_config_mode=True,
                                      read_timeout=self.wait_limit(self.target.command_timeout),
                                      error_pattern=CONFIG_ERRORS)
        except Exception as exc:  # noqa: BLE001 - a dead session is remembered in _drop and freed next time
            self.warn(f"no zone commit vsan {vsan} failed ({_first_line(str(exc))}); the zoning lock stays "
                      "remembered for the next session")
            if isinstance(exc, ConfigInvalidException):
                try:
                    self.conn.exit_config_mode()
                except Exception:  # noqa: BLE001 - a dead session is dropped later
                    pass
            return
        self._holding.discard(vsan)

    def zone_status(self) -> ZoneStatus:
        vsan = self.target.vsan
        return self.show(f"show zone status vsan {vsan}", lambda text: parse_zone_status(text, vsan))

    def claim_zoning(self) -> tuple[ZoneStatus, list[str]]:
        """Before any change: someone else's lock is ZoningBusy; a lock our own dead session left
        behind is freed by the lines returned (sent first in the configure session)."""
        status = self.zone_status()
        key = (self.target.host, self.target.port, self.target.vsan)
        if status.holder is None:
            _LEFT_LOCKS.discard(key)
            return status, []
        holder_user = re.search(r"\[(\S+)\]", status.holder)
        if key in _LEFT_LOCKS and holder_user and holder_user.group(1) == self.target.username:
            self.warn(f"freed the zoning lock of vsan {self.target.vsan} that an earlier flexzone session died "
                      "holding (no zone commit)")
            return status, [f"no zone commit vsan {self.target.vsan}"]
        raise ZoningBusy(f"vsan {self.target.vsan}: the zoning session lock is held by {status.holder}; waiting for it",
                         transcript=self._peek_transcript())

    def verify_commit(self) -> None:
        status = self.zone_status()
        if status.holder is not None or re.search(r"(?i)fail", status.status):
            raise CommandRejected(f"zone commit vsan {self.target.vsan}: {status.status or 'lock still held'}",
                                  router_message=status.status, transcript=self._peek_transcript())
        _LEFT_LOCKS.discard((self.target.host, self.target.port, self.target.vsan))

    def fcip_config(self) -> FcipConfig:
        """The fcip profiles and interfaces: the FCIP part of the running configuration only."""
        return self.show("show running-config fcip", parse_fcip_config)

    def zoning(self, *, zonesets: bool = True) -> FabricZoning:
        """The router's VSAN as the switch enforces it: the full database's zones (fcalias members
        expanded by the switch), which zones each full zoneset lists (`zonesets`: only what a change
        needs), the active zoneset, and device-alias members replaced by their pwwns where it matters: in
        a zone whose two views differ (both name a device-alias alike) and in flexzone's own zones."""
        vsan = self.target.vsan
        zones = self.show(f"show zone vsan {vsan}", lambda text: parse_zones(text, vsan))
        configs = self.show(f"show zoneset brief vsan {vsan}",
                            lambda text: parse_zoneset_brief(text, vsan)) if zonesets else {}
        in_effect, active = self.show(f"show zoneset active vsan {vsan}",
                                      lambda text: parse_active_zoneset(text, vsan))
        if names_device_alias(compared_members(zones, active, ZONE_RE)):
            aliases = self.show("show device-alias database", parse_device_aliases)
            zones = {name: resolve(members, aliases) for name, members in zones.items()}
            active = {name: resolve(members, aliases) for name, members in active.items()}
        return FabricZoning(configs=configs, zones=zones, in_effect=in_effect, active=active)

    # --- operations --------------------------------------------------------------------------
    def list_links(self) -> list[RouterLink]:
        return self._links(self.fcip_config(), self.zoning(zonesets=False))

    def remnants(self, spec: LinkSpec) -> bool:
        """Anything of the link on the switch: listed, or any of its zones in force."""
        fabric = self.zoning(zonesets=False)
        listed = spec.key in {link.key for link in self._links(self.fcip_config(), fabric)}
        return listed or bool(link_zones(fabric, ZONE_RE, spec) & set(fabric.active))

    @staticmethod
    def _links(config: FcipConfig, fabric: FabricZoning) -> list[RouterLink]:
        remote_of = {number: interface.get("peer") for number, interface in config.interfaces.items()}
        carrying = {number: interface.get("shutdown") == "no" for number, interface in config.interfaces.items()}
        return fabric_links(fabric, ZONE_RE, remote_of, carrying)

    def add_link(self, spec: LinkSpec) -> None:
        self.render_add(spec)  # validation before anything is sent
        self._check_vsan(spec)
        status, freeing = self.claim_zoning()
        config = self.fcip_config()
        interface = config.interfaces.get(spec.port)
        if refusal := foreign_fcip(config, spec.port):
            raise CommandRejected(refusal, router_message="", transcript=self._peek_transcript())
        if interface is not None:
            if interface.get("peer") not in (None, spec.remote_ip):
                raise CommandRejected(f"fcip{spec.port} already peers with {interface['peer']}",
                                      router_message="", transcript=self._peek_transcript())
        interface_ready = (interface is not None and interface.get("peer") == spec.remote_ip
                           and interface.get("shutdown") == "no" and interface.get("profile") == str(spec.port)
                           and config.profiles.get(spec.port) == spec.local_ip)
        lines = [] if interface_ready else interface_lines(spec)
        zoning = self._zone(spec, self.zoning(), status)
        if zoning and status.enhanced:
            zoning.append(f"zone commit vsan {spec.vsan}")
        if not lines and not zoning and not freeing:
            raise LinkExists(f"link {spec.key} already configured", router_message="",
                             transcript=self._peek_transcript())
        self.configure(["configure terminal", *freeing, *lines, *zoning, "end"])
        if zoning and status.enhanced:
            self.verify_commit()

    def remove_link(self, spec: LinkSpec) -> None:
        self.check_spec(spec, adding=False)
        self._check_vsan(spec)
        status, freeing = self.claim_zoning()
        config = self.fcip_config()
        interface = config.interfaces.get(spec.port)
        if interface is not None and interface.get("peer") not in (None, spec.remote_ip):
            raise LinkAbsent(f"fcip{spec.port} peers with {interface['peer']}, not {spec.remote_ip}",
                             router_message="", transcript=self._peek_transcript())
        fabric = self.zoning()
        ours = link_zones(fabric, ZONE_RE, spec)
        zoning = self._unzone(fabric, ours, spec.vsan, status) if ours else []
        if zoning and status.enhanced:
            zoning.append(f"zone commit vsan {spec.vsan}")
        others = port_zones(fabric, ZONE_RE, spec.port) - ours
        lines = [*freeing, *zoning]
        if interface is not None and interface.get("description") == DESCRIPTION and not others:
            lines.append(f"no interface fcip {spec.port}")
            if spec.port in config.profiles and profile_users(config, spec.port) == [spec.port]:
                lines.append(f"no fcip profile {spec.port}")
        if lines:
            self.configure(["configure terminal", *lines, "end"])
            if zoning and status.enhanced:
                self.verify_commit()
        if not ours:
            raise LinkAbsent(f"no flexzone zone of link {spec.key} in vsan {spec.vsan}", router_message="",
                             transcript=self._peek_transcript())

    def _check_vsan(self, spec: LinkSpec) -> None:
        if spec.vsan != self.target.vsan:
            raise ValueError(f"vsan: the link says vsan {spec.vsan}, the router {self.target.vsan}")

    def _zone(self, spec: LinkSpec, fabric: FabricZoning, status: ZoneStatus) -> list[str]:
        """The zoning lines that make the active zoneset enforce exactly the link's pair zones."""
        vsan = spec.vsan
        # With no active zoneset, the default zone decides: permit lets every device reach every
        # other, and activating any zoneset would cut off all those not in it.
        open_refusal = None if status.default_zone == "deny" else (
            f"no zoneset is active in vsan {vsan} and the default zone of vsan {vsan} is {status.default_zone}: "
            f"every device reaches every other, and activating {self.zoneset} would cut off every device not in "
            "it, so flexzone will not create one here", f"default-zone: {status.default_zone}")
        self._refuse_stale_full_database(fabric, status, link_zones(fabric, ZONE_RE, spec)
                                         | set(pair_zones(link_prefix(spec), spec)))
        with self._transcript_on_refusal():
            plan = plan_link_zoning(fabric, spec, link_prefix(spec), ZONE_RE, self.zoneset, open_refusal)
        zoneset, wanted, stale = plan.config, plan.wanted, plan.stale
        lines = zone_lines({name: members for name, members in wanted.items() if name not in fabric.zones},
                                 vsan)
        for name, members in wanted.items():
            have = fabric.zones.get(name)
            if have is None:
                continue
            missing = [m for m in members if m not in have]
            extra = [m for m in have if m not in members]
            if missing or extra:
                lines += [f"zone name {name} vsan {vsan}", *(f"member pwwn {m}" for m in missing),
                          *(f"no member pwwn {m}" for m in extra)]
        in_zoneset = fabric.configs.get(zoneset, [])
        joining = [name for name in wanted if name not in in_zoneset]
        leaving = [name for name in stale if name in in_zoneset]
        if joining or leaving:
            lines += [f"zoneset name {zoneset} vsan {vsan}", *(f"member {name}" for name in joining),
                      *(f"no member {name}" for name in leaving)]
        lines += [f"no zone name {name} vsan {vsan}" for name in stale if name in fabric.zones]
        enforced = all(sorted(fabric.active.get(name, [])) == sorted(members) for name, members in wanted.items())
        if not lines and enforced and not set(stale) & set(fabric.active):
            return []
        if fabric.in_effect is None:
            self.warn(f"no zoneset was active in vsan {vsan}; flexzone created and activated {zoneset} for its zones")
        return [*lines, f"zoneset activate name {zoneset} vsan {vsan}"]

    def _unzone(self, fabric: FabricZoning, ours: set[str], vsan: int, status: ZoneStatus) -> list[str]:
        """The zoning lines that take the link's zones out of the active zoneset and re-activate it."""
        zoneset = fabric.in_effect
        lines: list[str] = []
        reactivate = deactivate = None
        if touches(fabric, zoneset, ours):
            assert zoneset is not None
            self._refuse_stale_full_database(fabric, status, ours)
            if refusal := refuse_staged_changes(fabric, zoneset, ours):
                raise CommandRejected(refusal, router_message="", transcript=self._peek_transcript())
            if set(fabric.configs.get(zoneset, [])) - ours:
                reactivate = zoneset
            elif zoneset == self.zoneset:
                # fz_zoneset was created by flexzone in a VSAN with none active: deactivating restores that.
                self.warn(f"the last flexzone zone left {zoneset}, which flexzone had created in vsan {vsan} with no "
                          "zoneset active; the vsan is back to no active zoneset")
                deactivate = zoneset
                lines += [f"no zoneset activate name {zoneset} vsan {vsan}", f"no zoneset name {zoneset} vsan {vsan}"]
            else:
                raise CommandRejected(
                    f"{zoneset} holds nothing but flexzone's zones of this link; removing them would leave vsan "
                    f"{vsan} without an active zoneset, and flexzone never deactivates one it did not create",
                    router_message="", transcript=self._peek_transcript())
        for holder in dict.fromkeys((zoneset, self.zoneset)):
            leaving = [name for name in sorted(ours) if holder in fabric.configs and name in fabric.configs[holder]]
            if leaving and holder != deactivate:
                lines += [f"zoneset name {holder} vsan {vsan}", *(f"no member {name}" for name in leaving)]
        held_elsewhere = {name for other in fabric.cfgs_holding(ours) if other not in (zoneset, self.zoneset)
                          for name in fabric.configs[other] if name in ours}
        lines += [f"no zone name {name} vsan {vsan}" for name in sorted(ours)
                  if name in fabric.zones and name not in held_elsewhere]
        if held_elsewhere:
            self.warn(f"zones {', '.join(sorted(held_elsewhere))} stay defined: other zonesets list them")
        if reactivate:
            lines.append(f"zoneset activate name {reactivate} vsan {vsan}")
        return lines

    def _refuse_stale_full_database(self, fabric: FabricZoning, status: ZoneStatus, ours: set[str]) -> None:
        """Basic mode with ``distribute: active only``: activation spreads only the active zoneset, so
        this switch's full database may be empty or older than what is in force (another switch
        activated since). Re-activating from it would put that older content in force: refused,
        saying how an administrator brings the full database up to date."""
        zoneset = fabric.in_effect
        if status.enhanced or status.distribute != "active only" or zoneset is None:
            return
        if zoneset in fabric.configs and not fabric.staged_changes(zoneset, ours):
            return
        vsan = self.target.vsan
        if zoneset not in fabric.configs:
            held = f"does not hold the active zoneset {zoneset}"
        else:
            held = (f"holds another version of the active zoneset {zoneset} "
                    f"({describe_changes(fabric.staged_changes(zoneset, ours))}: someone staged changes there, or "
                    "another switch activated since)")
        raise CommandRejected(
            f"vsan {vsan} is in basic zoning mode with 'distribute: active only', and this switch's full zone "
            f"database {held}: re-activating it would put the full database's content in force instead of what is "
            f"active now. Bring the full database up to date first, on this switch: 'zone copy active-zoneset "
            f"full-zoneset vsan {vsan}' (then check it with 'show zoneset vsan {vsan}'), or keep every switch's full "
            f"database in step with 'zoneset distribute full vsan {vsan}'",
            router_message="", transcript=self._peek_transcript())

    def save_config(self) -> None:
        conn = self.conn
        with self._router_call("copy running-config startup-config"), closed_session_is_eof(self):
            output = str(conn.save_config())
        if "Copy complete" not in output:
            message = _error_line(output)
            raise CommandRejected(f"copy running-config startup-config: {message}", router_message=message,
                                  transcript=self._peek_transcript())


def _is_zoning(line: str) -> bool:
    return bool(re.match(r"(?:no )?(?:zone |zoneset |member )", line))


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def _error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "^"]
    errors = [line for line in lines if re.search(CONFIG_ERRORS, line)]
    return (errors or lines or ["configuration rejected"])[-1]

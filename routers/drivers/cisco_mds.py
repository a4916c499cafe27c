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
zoning edit takes a fabric-wide session lock that ``zone commit vsan N`` distributes and frees: a lock
held by anyone else is ZoningBusy (the engine waits and retries within the operation's time limit;
flexzone never clears another session's lock). flexzone takes the lock first, reads again under it,
plans from that read, and ends its edits with ``zone commit vsan N``, reading the status back. If an
edit fails, ``no zone commit vsan N`` discards our pending changes and frees our lock (only while our
session is still uncommitted); a lock our dead session was seen to take is freed by the next session.
Basic mode has no lock: flexzone reads again right before ``zoneset activate`` and refuses on any
change but its own (cisco_mds_guard.py says how, and what window remains). Confirmation questions
(netmiko #154) are switched off with ``terminal dont-ask`` at login.

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
``save_config`` copies running to startup, in one round trip.
What is read (``show zone status``, the zone views, ``show device-alias database`` when needed and
``show running-config fcip``, never the whole running-config) is parsed in cisco_mds_show.py; the
interface and zone lines are written in cisco_mds_config.py.

Round trips: the reads a change decides from go in one send (together.py), and so do the reads that
verify it; the read before ``zoneset activate`` goes with ``configure terminal``, which changes nothing,
so the activation follows that read by one round trip. NX-OS runs pasted lines on after one fails, so
every configuration line waits for its own reply, but the last, which goes with ``end``.

Why a VSAN per router rather than VSAN = zone id: VSAN 1 is the default VSAN every MDS port (FCIP
interfaces included, "Port vsan is 1") already belongs to, so the zone is enforced with no VSAN
database or trunk-allowed changes; zone ids 4079 and 4094 would collide with reserved VSANs; and a
VSAN per zone would partition fabrics, which is a site design decision, not a per-link one.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from routers.drivers.base import (
    CommandRejected,
    GarbledOutput,
    LinkAbsent,
    LinkExists,
    LinkSpec,
    RouterLink,
)
from routers.drivers.cisco_mds_config import (
    DESCRIPTION,
    foreign_fcip,
    interface_lines,
    profile_users,
    zone_edit_lines,
    zone_lines,
)
from routers.drivers.cisco_mds_guard import (
    BUSY,
    Expected,
    ZoneLocks,
    changed_under_us,
    error_line,
    restore_lines,
    stale_full_database,
)
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
from routers.drivers.netmiko_base import closed_session_is_eof
from routers.drivers.together import operation, send_and_split
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
from routers.drivers.zoning_restore import render_mds_restore
from routers.platforms import Platform, Transport

FCIP_IDS = range(1, 256)
ZONESET = "fz_zoneset"
SAVE, SAVE_TIMEOUT = "copy running-config startup-config", 100.0  # s: netmiko's own read limit for a save
ZONE_RE = re.compile(r"fz_z(0|[1-9]\d*)_fcip(0|[1-9]\d*)(?:_([0-9a-f]{16})_([0-9a-f]{16}))?")  # as flexzone writes them

# A zoning change: its lines, the zoneset they activate (None: none) and what it is to list (guard).
Zoning = tuple[list[str], str | None, Expected]


def link_prefix(spec: LinkSpec) -> str:
    return f"fz_z{spec.zone}_fcip{spec.port}"


class CiscoMdsDriver(ZoneLocks):
    """MDS NX-OS FCIP: a flexzone fcip interface per port, a zone per initiator-target pair in the
    VSAN's active zoneset (module doc)."""

    platform = Platform.CISCO_MDS
    zones_initiators = True
    zones_in_vsan = True
    session_budget = 4  # of the 32 CLI sessions the switch accepts
    logout_command = "exit"  # at the exec prompt NX-OS ends the session (netmiko's own exit does not wait)
    device_types = {Transport.SSH: "cisco_nxos", Transport.TELNET: "cisco_nxos_telnet"}
    error_pattern = rf"(?m)^% |not present|in use|does not exist|{BUSY}"
    zoneset = ZONESET

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._holding: set[int] = set()  # VSANs whose enhanced-mode lock this session was seen to take

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

    @staticmethod
    def render_restore(before: dict, after: dict | None) -> list[str]:
        return render_mds_restore(before, after, ZONE_RE, ZONESET)

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

    # --- commands ----------------------------------------------------------------------------
    @property
    def sends_together(self) -> bool:
        return True  # netmiko's cisco_nxos login sends `terminal length 0`: no pager takes a line sent ahead

    def zoning_reads(self, *, zonesets: bool = True) -> list[str]:
        """What zoning() sends (a device-alias read aside, sent only when a zone names one)."""
        vsan = self.target.vsan
        return [f"show zone vsan {vsan}", *([f"show zoneset brief vsan {vsan}"] if zonesets else []),
                f"show zoneset active vsan {vsan}"]

    def read_before_change(self) -> None:
        """Everything a change decides from, in one send: the zoning status (whose lock), the FCIP
        configuration and the zoning."""
        self.together(None, [f"show zone status vsan {self.target.vsan}", "show running-config fcip",
                             *self.zoning_reads()])

    def zone_status(self) -> ZoneStatus:
        vsan = self.target.vsan
        return self.show(f"show zone status vsan {vsan}", lambda text: parse_zone_status(text, vsan))

    def fcip_config(self) -> FcipConfig:
        """The fcip profiles and interfaces: the FCIP part of the running configuration only."""
        return self.show("show running-config fcip", parse_fcip_config)

    @operation
    def zoning(self, *, zonesets: bool = True) -> FabricZoning:
        """The router's VSAN as the switch enforces it: the full database's zones (fcalias members
        expanded by the switch), which zones each full zoneset lists (`zonesets`: only what a change
        needs), the active zoneset, and device-alias members replaced by their pwwns where it matters: in
        a zone whose two views differ (both name a device-alias alike) and in flexzone's own zones."""
        vsan = self.target.vsan
        self.together(None, self.zoning_reads(zonesets=zonesets))
        zones = self.show(f"show zone vsan {vsan}", lambda text: parse_zones(text, vsan))
        configs = self.show(f"show zoneset brief vsan {vsan}",
                            lambda text: parse_zoneset_brief(text, vsan)) if zonesets else {}
        in_effect, active = self.show(f"show zoneset active vsan {vsan}",
                                      lambda text: parse_active_zoneset(text, vsan))
        if names_device_alias(compared_members(zones, active, ZONE_RE)):
            aliases = self.show("show device-alias database", parse_device_aliases)
            zones = {name: resolve(members, aliases) for name, members in zones.items()}
            active = {name: resolve(members, aliases) for name, members in active.items()}
        fabric = FabricZoning(configs=configs, zones=zones, in_effect=in_effect, active=active)
        self.zoning_read(fabric)
        return fabric

    def zoning_then_configure(self) -> FabricZoning:
        """The zoning read again with ``configure terminal`` in the same send, so that the activation
        (or taking our edits back) follows that read by one round trip. ``configure terminal`` asks
        and changes nothing; its prompt is checked before anything else is sent. A failure here leaves
        configuration mode again."""
        reads, conn = self.zoning_reads(), self.conn
        with self._router_call(reads[0]), closed_session_is_eof(self):
            replies, prompt = send_and_split(conn, [*reads, "configure terminal"],
                                             self.wait_limit(self.target.command_timeout))
        self._ahead = dict(zip(reads, replies, strict=False))
        try:
            if not re.fullmatch(rf"{re.escape(conn.base_prompt)}\(config\)#", prompt):
                raise GarbledOutput(f"configure terminal: answered by {prompt!r}, not the configuration prompt",
                                    transcript=self._peek_transcript())
            return self.zoning()
        except Exception:
            self.leave_configuration()
            raise

    def leave_configuration(self) -> None:
        """``end``, best effort: a session that cannot leave configuration mode is dropped by the next error."""
        try:
            self.run("end")
        except Exception:  # noqa: BLE001 - what the caller is reporting matters more
            pass

    def zoning_image(self, fabric: FabricZoning) -> dict:
        return {"vsan": self.target.vsan, **super().zoning_image(fabric)}

    # --- operations --------------------------------------------------------------------------
    @operation
    def list_links(self) -> list[RouterLink]:
        self.together(None, ["show running-config fcip", *self.zoning_reads(zonesets=False)])
        return self._links(self.fcip_config(), self.zoning(zonesets=False))

    @operation
    def remnants(self, spec: LinkSpec) -> bool:
        """Anything of the link on the switch: listed, or any of its zones in force."""
        self.together(None, ["show running-config fcip", *self.zoning_reads(zonesets=False)])
        fabric, config = self.zoning(zonesets=False), self.fcip_config()
        listed = spec.key in {link.key for link in self._links(config, fabric)}
        # Zones of the port are another link's when its interface peers with another gateway.
        peer = config.interfaces.get(spec.port, {}).get("peer")
        ours = peer in (None, spec.remote_ip)
        return listed or (ours and bool(link_zones(fabric, ZONE_RE, spec) & set(fabric.active)))

    @staticmethod
    def _links(config: FcipConfig, fabric: FabricZoning) -> list[RouterLink]:
        remote_of = {number: interface.get("peer") for number, interface in config.interfaces.items()}
        carrying = {number: interface.get("shutdown") == "no" for number, interface in config.interfaces.items()}
        return fabric_links(fabric, ZONE_RE, remote_of, carrying)

    @operation
    def add_link(self, spec: LinkSpec) -> None:
        self.render_add(spec)  # validation before anything is sent
        self._check_vsan(spec)
        self.read_before_change()
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
        fabric, zoning, freeing = self._planned(status, freeing, lambda fabric: self._zone(spec, fabric, status))
        if not lines and not zoning[0] and not freeing:
            raise LinkExists(f"link {spec.key} already configured", router_message="",
                             transcript=self._peek_transcript())
        self._apply(status, [*freeing, *lines], zoning, [], fabric)
        if zoning[0] and fabric.in_effect is None:
            self.warn(f"no zoneset was active in vsan {spec.vsan}; flexzone created and activated {self.zoneset} for "
                      "its zones")

    @operation
    def remove_link(self, spec: LinkSpec) -> None:
        self.check_spec(spec, adding=False)
        self._check_vsan(spec)
        self.read_before_change()
        status, freeing = self.claim_zoning()
        config = self.fcip_config()
        interface = config.interfaces.get(spec.port)
        if interface is not None and interface.get("peer") not in (None, spec.remote_ip):
            raise LinkAbsent(f"fcip{spec.port} peers with {interface['peer']}, not {spec.remote_ip}",
                             router_message="", transcript=self._peek_transcript())
        def unzone(fabric: FabricZoning) -> Zoning:
            ours = link_zones(fabric, ZONE_RE, spec)
            return self._unzone(fabric, ours, spec.vsan, status) if ours else ([], None, {})

        fabric, zoning, freeing = self._planned(status, freeing, unzone)
        ours = link_zones(fabric, ZONE_RE, spec)
        others = port_zones(fabric, ZONE_RE, spec.port) - ours
        last = []
        if interface is not None and interface.get("description") == DESCRIPTION and not others:
            last.append(f"no interface fcip {spec.port}")
            if spec.port in config.profiles and profile_users(config, spec.port) == [spec.port]:
                last.append(f"no fcip profile {spec.port}")
        self._apply(status, freeing, zoning, last, fabric)
        if not ours:
            raise LinkAbsent(f"no flexzone zone of link {spec.key} in vsan {spec.vsan}", router_message="",
                             transcript=self._peek_transcript())

    def _planned(self, status: ZoneStatus, freeing: list[str],
                 plan: Callable[[FabricZoning], Zoning]) -> tuple[FabricZoning, Zoning, list[str]]:
        """The fabric as read and the zoning change `plan` makes of it, with the lines still to send
        first. Enhanced mode plans again under the zone session lock (_under_lock, which sends those)."""
        warned = len(self._warnings)
        fabric = self.zoning()
        zoning = plan(fabric)
        if not zoning[0] or not status.enhanced:
            return fabric, zoning, freeing
        del self._warnings[warned:]  # planning again says them again
        return *self._under_lock(freeing, fabric, plan), []

    def _under_lock(self, freeing: list[str], fabric: FabricZoning,
                    plan: Callable[[FabricZoning], Zoning]) -> tuple[FabricZoning, Zoning]:
        """Enhanced mode: take the zone session lock (entering the zoneset to edit changes nothing), read
        the zoning again under it and plan from that read. A refusal, or nothing left to change, frees
        the lock again."""
        vsan = self.target.vsan
        self.configure(["configure terminal", *freeing, f"zoneset name {fabric.in_effect or self.zoneset} vsan {vsan}",
                        "end"])
        try:
            if vsan not in self._holding:
                raise CommandRejected(f"vsan {vsan}: entering the zoneset took no zone session lock (is the vsan still "
                                      "in enhanced mode?)", router_message="", transcript=self._peek_transcript())
            fabric = self.zoning()
            zoning = plan(fabric)
        except Exception:
            if vsan in self._holding:
                self.discard_zone_session()
            raise
        if not zoning[0]:
            self.discard_zone_session()
        return fabric, zoning

    def _apply(self, status: ZoneStatus, first: list[str], zoning: Zoning, last: list[str],
               fabric: FabricZoning) -> None:
        """Send `first`, the zoning lines and `last`. Enhanced mode ends the zoning with a commit (under
        the lock _under_lock took); basic mode reads again right before activating."""
        lines, zoneset, expect = zoning
        vsan = self.target.vsan
        if lines and status.enhanced:
            self.zoning_changed(fabric)  # journaled before it goes in force (read under the lock)
            self.configure(["configure terminal", *first, *lines, f"zone commit vsan {vsan}", *last, "end"])
            self.verify_commit()
        elif zoneset is not None and lines and lines[-1].startswith("zoneset activate"):
            if first or lines[:-1]:  # a retry may find every edit made and only the activation left
                self.configure(["configure terminal", *first, *lines[:-1], "end"])
            now = self.zoning_then_configure()
            if changes := changed_under_us(fabric, now, zoneset, expect):
                if undo := restore_lines(fabric, now, set(expect), zoneset, vsan):
                    self.configure([*undo, "end"], entered=True)
                else:
                    self.leave_configuration()
                raise CommandRejected(
                    f"vsan {vsan}: the full zone database changed while flexzone edited it "
                    f"({describe_changes(changes)}); flexzone took its own edits back and activated nothing",
                    router_message="", transcript=self._peek_transcript())
            try:
                self.zoning_changed(now)  # the read right before activating
            except Exception:
                self.leave_configuration()
                raise
            self.configure([lines[-1], *last, "end"], entered=True)
        elif first or lines or last:
            if lines:
                self.zoning_changed(fabric)
            self.configure(["configure terminal", *first, *lines, *last, "end"])

    def _check_vsan(self, spec: LinkSpec) -> None:
        if spec.vsan != self.target.vsan:
            raise ValueError(f"vsan: the link says vsan {spec.vsan}, the router {self.target.vsan}")

    def _zone(self, spec: LinkSpec, fabric: FabricZoning, status: ZoneStatus) -> Zoning:
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
        lines = zone_edit_lines(fabric, wanted, stale, zoneset, vsan)
        enforced = all(sorted(fabric.active.get(name, [])) == sorted(members) for name, members in wanted.items())
        expect: Expected = {**dict.fromkeys(stale), **wanted}
        if not lines and enforced and not set(stale) & set(fabric.active):
            return [], zoneset, expect
        return [*lines, f"zoneset activate name {zoneset} vsan {vsan}"], zoneset, expect

    def _unzone(self, fabric: FabricZoning, ours: set[str], vsan: int, status: ZoneStatus) -> Zoning:
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
        return lines, reactivate, dict.fromkeys(ours)

    def _refuse_stale_full_database(self, fabric: FabricZoning, status: ZoneStatus, ours: set[str]) -> None:
        if refusal := stale_full_database(fabric, status, ours, self.target.vsan):
            raise CommandRejected(refusal, router_message="", transcript=self._peek_transcript())

    @operation
    def save_config(self) -> None:
        # One turn: the copy's own reply ("Copy complete.") proves it. netmiko's save_config reads the
        # prompt twice first (its enable() check and send_command's prompt search), two more round trips.
        with closed_session_is_eof(self):
            output = self.run(SAVE, timeout=max(self.target.command_timeout, SAVE_TIMEOUT))
        if "Copy complete" not in output:
            message = error_line(output)
            raise CommandRejected(f"copy running-config startup-config: {message}", router_message=message,
                                  transcript=self._peek_transcript())

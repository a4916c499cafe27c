"""Brocade Fabric OS 8/9 extension switch driver (7840/7810/SX6 FCIP), over SSH or telnet.

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

How a flexzone link maps onto FOS FCIP
--------------------------------------
``LinkSpec(port, zone, remote_ip, local_ip, wwn, initiators)`` is, on the switch:

* one zone per initiator-target pair, ``fz_z<zone>_ve<port>_<initiator>_<target>`` (16 hex digits
  each) with exactly those two members, added to the effective cfg and enabled. The name says which
  link the zone belongs to, so a remove deletes exactly the link's zones and nobody else's;
* an FCIP tunnel on VE port ``port`` (7840: VE 24-43) with circuit 0 from ``local_ip`` (an ipif the
  site already configured) to ``remote_ip``. The tunnel is shared by every flexzone zone carried to
  that remote gateway: ``portcfg fciptunnel <port> create -d flexzone`` and
  ``portcfg fcipcircuit <port> create 0 --local-ip <local_ip> --remote-ip <remote_ip>``.

Whose tunnel is it? No public capture shows where FOS prints a tunnel's description, so flexzone
does not rely on reading it back (it still sets it, for people). A tunnel is flexzone's when
flexzone's zones name its VE port: an add puts the zones in effect first and then makes the tunnel,
so a retry after a lost reply finds the zones and knows the tunnel is its own; a tunnel on a VE
port that no flexzone zone names is someone else's and the add is refused. A remove deletes the
tunnel first, while the link's zones still prove it is flexzone's (and only when no other flexzone
link uses the port), and then the zones.

``render_add`` shows what a fresh link sends, naming the cfg in effect ``<effective cfg>`` (it is
read from the switch at run time); the driver skips what is already in place. One VE port reaches one
remote gateway (circuit 0): a link to another remote on an occupied port is rejected. ``local_ip``,
``wwn`` and at least one initiator are required to add (ValueError otherwise), not to remove.

What is read (parsed in brocade_fos_show.py): ``cfgtransshow`` and ``cfgshow`` (aliases resolved,
duplicates removed, so the defined and the effective configuration compare as the switch applies
them), ``portshow fciptunnel all -c`` (the tunnels and circuits and their operational status) and,
when there are circuits, ``portcfgshow fcipcircuit all`` (their addresses and admin state). A link
is up when each of its zones is in effect with its two members and its tunnel's circuit 0 is
enabled to the link's remote gateway; the tunnel's OpStatus (``Up``, ``InProg``...) is reported
beside it, since a tunnel waits for its far end to be configured too.

Device quirks handled here
--------------------------
* FOS has no ``terminal length 0``; long outputs stop at ``Type <CR> to continue, Q<CR> to stop:`` and
  are continued with a bare return.
* ``cfgenable``/``cfgsave``/``cfgdisable`` ask ``(yes, y, no, n): [no]``; we answer ``y``.
* Zoning commands succeed silently: any output is an error (the OpenStack Cinder rule), an edit
  refused because another session holds the transaction included (ZoningBusy).
  Extension commands print ``Operation Succeeded.`` or an ``Object exists.``-style error.
* Echo of commands longer than the terminal wraps with ``\\r`` on real FOS (netmiko #1798), so long
  lines are sent without netmiko's echo check.
"""

from __future__ import annotations

import re

from netmiko.brocade.brocade_fos_ssh import BrocadeFOSSSH

from routers.drivers.base import (
    CommandRejected,
    GarbledOutput,
    LinkAbsent,
    LinkExists,
    LinkSpec,
    RouterLink,
    ZoningBusy,
    ZoningChanged,
)
from routers.drivers.brocade_fos_show import (
    NO_TRANSACTION,
    FosZoning,
    TunnelInfo,
    merge_circuits,
    parse_cfgshow,
    parse_cfgtransshow,
    parse_circuit_details,
    parse_tunnel_table,
)
from routers.drivers.netmiko_base import PatientTelnet, SessionGuardedDriver, closed_session_is_eof, netmiko_device_type
from routers.drivers.zoning import (
    EFFECTIVE,
    check_fcip_add,
    fabric_links,
    link_zones,
    pair_zones,
    plan_link_zoning,
    refuse_staged_changes,
)
from routers.platforms import Platform, Transport

VE_PORTS = range(24, 44)
ZONE_CFG = "fz_cfg"
PAGER = r"Type <CR> to continue, Q<CR> to stop:\s*"
YES_NO = r"\(yes, y, no, n\): \[no\]\s*$"
SUCCEEDED = r"(?m)^Operation Succeeded\.\s*$"
TUNNEL_EXISTS = r"Tunnel ID \S+ already exists\."
CIRCUIT_EXISTS = r"Circuit \S+ already exists\."
ZONE_RE = re.compile(r"fz_z(0|[1-9]\d*)_ve(0|[1-9]\d*)(?:_([0-9a-f]{16})_([0-9a-f]{16}))?")  # as flexzone writes them
BUSY = r"(?i)another zoning transaction|transaction is in progress"
TUNNEL_DESCRIPTION = "flexzone"
ECHO_CHECK_LIMIT = 70  # FOS wraps the echo at 80 columns, prompt included


@netmiko_device_type("brocade_fos_telnet")
class BrocadeFOSTelnet(PatientTelnet, BrocadeFOSSSH):
    """Brocade FOS over telnet: netmiko has only the SSH class; the CLI is the same."""

    username_pattern = r"login:\s*$"
    prompt_pattern = r">\s*$"
    refusal_pattern = r"(?i)login incorrect|maximum number of|too many"

    def session_preparation(self) -> None:
        self._test_channel_read(pattern=r">")
        self.set_base_prompt()


def link_prefix(spec: LinkSpec) -> str:
    return f"fz_z{spec.zone}_ve{spec.port}"


def tunnel_lines(spec: LinkSpec) -> list[str]:
    """The tunnel on the link's VE port (described flexzone, for people reading the switch) and its
    circuit 0 from the site's address to the remote gateway."""
    return [f"portcfg fciptunnel {spec.port} create -d {TUNNEL_DESCRIPTION}",
            f"portcfg fcipcircuit {spec.port} create 0 --local-ip {spec.local_ip} --remote-ip {spec.remote_ip}"]


class BrocadeFosDriver(SessionGuardedDriver):
    """FOS 8/9 FCIP: a flexzone tunnel per VE port, a zone per initiator-target pair in the cfg in effect."""

    platform = Platform.BROCADE_FOS
    zones_initiators = True
    device_types = {Transport.SSH: "brocade_fos", Transport.TELNET: "brocade_fos_telnet"}
    error_pattern = (r"(?mi)^\s*(?:.*failed[.:]|.*Object (?:exists|does not exist)\.|Error|error:|Usage|rbash:|"
                     r".*not found|.*Invalid|.*unreachable|.*already|.*Nothing to modify|.*does not exist|"
                     r".*should not be deleted|.*is not in|.*duplicate name|.*invalid)")
    zone_cfg = ZONE_CFG
    logout_command = "exit"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The token of the zoning transaction this session's own edits opened (None: none open).
        # FOS has one transaction per fabric; its token is how this session tells it from another's.
        self._own_token: str | None = None

    # --- pure rendering ----------------------------------------------------------------------
    @classmethod
    def check_spec(cls, spec: LinkSpec, *, adding: bool) -> None:
        """FOS-specific limits on top of LinkSpec's own validation (raised before anything is sent)."""
        if spec.port not in VE_PORTS:
            raise ValueError(f"port: must be a VE port {VE_PORTS.start}-{VE_PORTS.stop - 1}, got {spec.port}")
        if not adding:
            return
        if spec.local_ip is None:
            raise ValueError("local_ip: required to create the FCIP circuit")
        check_fcip_add(spec)

    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=True)
        zones = pair_zones(link_prefix(spec), spec)
        return [
            *(f'zonecreate "{name}", "{"; ".join(members)}"' for name, members in zones.items()),
            f'cfgadd "{EFFECTIVE}", "{"; ".join(zones)}"',
            f'cfgenable "{EFFECTIVE}"',
            *tunnel_lines(spec),
        ]

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=False)
        zones = list(pair_zones(link_prefix(spec), spec)) if spec.wwn else []
        lines = [f"portcfg fciptunnel {spec.port} delete"]
        if zones:
            lines.append(f'cfgremove "{EFFECTIVE}", "{"; ".join(zones)}"')
            lines += [f'zonedelete "{name}"' for name in zones]
            lines.append(f'cfgenable "{EFFECTIVE}"')
        return lines

    @classmethod
    def render_notes(cls, action: str, spec: LinkSpec) -> list[str]:
        verb = "adds its zones to it and re-enables it" if action == "add" else "takes its zones out and re-enables it"
        return [
            f"{EFFECTIVE} is the zoning configuration in effect on the switch, read at run time: flexzone {verb}, "
            f"never replaces or disables it (on a fabric with none in effect it creates {cls.zone_cfg})",
            "another session's open zoning transaction is waited for; pieces already in place are skipped",
            f"the tunnel on VE {spec.port} is flexzone's while flexzone's zones name that port: zones are made before "
            "the tunnel on add, and the tunnel is deleted (when no other flexzone link uses it) before them on remove",
        ]

    # --- commands ----------------------------------------------------------------------------
    def verify_echo(self, command: str) -> bool:
        return len(command) <= ECHO_CHECK_LIMIT

    def connect(self) -> None:
        if self._conn is None:
            self._own_token = None  # a new login has no transaction of ours
        super().connect()

    def run_paged(self, command: str, max_pages: int = 200) -> str:
        """A command whose output may stop at the pager: answer each page with a return."""
        conn = self.conn
        prompt = self.prompt_pattern()
        either = rf"(?:{PAGER}$)|(?:{prompt})"
        with self._router_call(command), closed_session_is_eof(self):
            output = str(conn.send_command(
                command, expect_string=either, read_timeout=self.wait_limit(self.target.command_timeout),
                strip_prompt=False, strip_command=True,
            ))
            pages = 0
            while re.search(PAGER + "$", output):
                pages += 1
                if pages > max_pages:
                    conn.write_channel("q" + conn.RETURN)  # leave the pager so the session stays usable
                    raise GarbledOutput(f"{command!r}: more than {max_pages} pages", transcript=self._peek_transcript())
                conn.write_channel(conn.RETURN)
                wait = self.wait_limit(self.target.command_timeout)
                output += str(conn.read_until_pattern(pattern=either, read_timeout=wait))
        lines = [re.sub(PAGER, "", line) for line in output.splitlines() if not re.fullmatch(PAGER, line)]
        if lines and re.search(prompt, lines[-1]):
            lines.pop()
        return "\n".join(lines)

    def confirm(self, command: str) -> str:
        """A zoning command that asks (yes, y, no, n): answer y; return everything it said."""
        return self.run_confirmed(command, YES_NO, "y")

    def extension(self, command: str, exists: str | None = None) -> bool:
        """Run a portcfg command; True when it made its change, False when the object already existed."""
        output = self.run(command)
        if re.search(SUCCEEDED, output):
            return True
        if exists and re.search(exists, output):
            return False
        raise self.rejection(command, output)

    def rejection(self, command: str, output: str) -> CommandRejected | GarbledOutput | ZoningBusy:
        message = " ".join(line.strip() for line in output.splitlines() if line.strip())[:300]
        if re.search(BUSY, output):
            return ZoningBusy(f"{command!r}: {message}", transcript=self._peek_transcript())
        if not message or not re.search(self.error_pattern, output):
            return GarbledOutput(f"{command!r}: unrecognised reply {output[:200]!r}",
                                 transcript=self._peek_transcript())
        return CommandRejected(f"{command!r}: {message}", router_message=message, transcript=self._peek_transcript())

    def zoning_edit(self, command: str) -> None:
        """A zoning edit: silent on success, so any output is an error (Cinder's rule).

        The first edit that succeeds opens this session's transaction; its token is read at once,
        so that only that transaction is ever aborted (an edit refused because another session got
        there first opened nothing of ours).
        """
        output = self.run(command).strip()
        if output:
            raise self.rejection(command, output)
        if self._own_token is None:
            self._own_token = self.transaction()

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

    # --- reading -----------------------------------------------------------------------------
    def read_command(self, command: str) -> str:
        return self.run_paged(command)

    def tunnels(self) -> dict[str, TunnelInfo]:
        """The tunnels by VE port as printed ("24"; "9/16" on a blade), with their circuits: which exist
        and their operational status from the summary table, addresses and admin state from the
        circuit configuration (read only when there are circuits)."""
        tunnels = self.show("portshow fciptunnel all -c", parse_tunnel_table)
        if any(tunnel.circuits for tunnel in tunnels.values()):
            merge_circuits(tunnels, self.show("portcfgshow fcipcircuit all", parse_circuit_details))
        return tunnels

    def zoning(self) -> FosZoning:
        return self.show("cfgshow", parse_cfgshow)

    def transaction(self) -> str | None:
        """None when no zoning transaction is open, else its token (as FOS prints it)."""
        open_transaction = self.show("cfgtransshow", parse_cfgtransshow)
        return None if open_transaction is None else open_transaction.token

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

    def list_links(self) -> list[RouterLink]:
        tunnels = self.tunnels()
        mine = {int(ve): tunnel for ve, tunnel in tunnels.items() if ve.isdigit()}
        return fabric_links(self.zoning(), ZONE_RE, {ve: tunnel.remote_ip for ve, tunnel in mine.items()},
                            {ve: tunnel.carrying for ve, tunnel in mine.items()},
                            {ve: tunnel.oper for ve, tunnel in mine.items()})

    # --- operations --------------------------------------------------------------------------
    def add_link(self, spec: LinkSpec) -> None:
        tunnel_line, circuit_line = tunnel_lines(spec)
        self.render_add(spec)  # validation before anything is sent
        # Everything that can refuse (someone else's transaction or tunnel, staged changes, no cfg to
        # use) is decided before the first change, so a refusal leaves the switch untouched.
        self.claim_zoning()
        fabric = self.zoning()
        tunnel = self.tunnels().get(str(spec.port))
        if tunnel is not None:
            self._check_tunnel_is_ours(spec, fabric, tunnel)
        cfg, edits = self._zoning_plan(spec, fabric)
        # The zones go first: once they are in effect they name the VE port, and that is how a later
        # attempt (a lost reply, a retry) knows the tunnel made next is flexzone's.
        if cfg is not None:
            ours = link_zones(fabric, ZONE_RE, spec) | set(pair_zones(link_prefix(spec), spec))
            self._transactional(lambda: self._apply(cfg, edits, fabric, ours))
        made = cfg is not None
        if tunnel is None:
            made |= self.extension(tunnel_line, exists=TUNNEL_EXISTS)
        if tunnel is None or 0 not in tunnel.circuits:
            made |= self.extension(circuit_line, exists=CIRCUIT_EXISTS)
        if not made:
            raise LinkExists(f"link {spec.key} already configured", router_message="",
                             transcript=self._peek_transcript())

    def remove_link(self, spec: LinkSpec) -> None:
        self.check_spec(spec, adding=False)
        self.claim_zoning()
        fabric = self.zoning()
        tunnel = self.tunnels().get(str(spec.port))
        if tunnel is not None and tunnel.remote_ip not in (None, spec.remote_ip):
            raise LinkAbsent(f"VE port {spec.port} tunnels to {tunnel.remote_ip}, not {spec.remote_ip}",
                             router_message="", transcript=self._peek_transcript())
        ours = link_zones(fabric, ZONE_RE, spec)
        others = [name for name in fabric.names() - ours
                  if (m := ZONE_RE.fullmatch(name)) and int(m.group(2)) == spec.port]
        if ours:
            self._check_unzone(fabric, ours)  # refusals before the first change
        # The tunnel goes first, while the link's zones still prove it is flexzone's (a tunnel on a VE
        # port no flexzone zone names may be anyone's, and stays); then the zones.
        if tunnel is not None and ours and not others:
            self.extension(f"portcfg fciptunnel {spec.port} delete")
        if ours:
            self._transactional(lambda: self._unzone(fabric, ours))
        else:
            raise LinkAbsent(f"no flexzone zone of link {spec.key} on the switch", router_message="",
                             transcript=self._peek_transcript())

    def _check_tunnel_is_ours(self, spec: LinkSpec, fabric: FosZoning, tunnel: TunnelInfo) -> None:
        """A tunnel already on the VE port is flexzone's only when flexzone's zones name the port, and
        it can carry this link only when its circuit 0 reaches the link's remote gateway."""
        claimed = any((m := ZONE_RE.fullmatch(name)) and int(m.group(2)) == spec.port for name in fabric.names())
        if not claimed:
            raise CommandRejected(
                f"VE port {spec.port} already carries a tunnel that flexzone did not create (no flexzone zone names "
                "this port); flexzone leaves it alone: choose another VE port for this site",
                router_message=f"Tunnel ID {spec.port} already exists.", transcript=self._peek_transcript())
        if tunnel.remote_ip not in (None, spec.remote_ip):
            raise CommandRejected(
                f"VE port {spec.port} already carries a tunnel to {tunnel.remote_ip}",
                router_message=f"Tunnel ID {spec.port} already exists.", transcript=self._peek_transcript())

    def _transactional(self, work):
        """Run zoning edits; if one fails, drop this session's transaction so nothing half-done stays."""
        try:
            return work()
        except (CommandRejected, GarbledOutput, ZoningBusy, ZoningChanged):
            if self._own_token is not None and self._conn is not None:
                try:
                    self.abort_if_own()
                except Exception:  # noqa: BLE001 - the original failure is what the caller must see
                    pass
            raise

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
        for command in edits:
            self.zoning_edit(command)
        self._still_as_read(fabric, cfg, ours)
        self.enable(cfg)
        if fabric.in_effect is None:
            self.warn(f"no zoning configuration was in effect on the fabric; flexzone created and enabled "
                      f"{cfg} for its zones (default zone access was {fabric.default_access})")

    def _still_as_read(self, before: FosZoning, cfg: str, ours: set[str]) -> None:
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

    def _check_unzone(self, fabric: FosZoning, ours: set[str]) -> None:
        """Refuse, before anything changes, a remove that would enforce someone's staged changes or
        leave a configuration flexzone did not create without zones."""
        cfg = fabric.in_effect
        if cfg is None or not (ours & set(fabric.configs.get(cfg, [])) or ours & set(fabric.active)):
            return
        if refusal := refuse_staged_changes(fabric, cfg, ours):
            raise CommandRejected(refusal, router_message="", transcript=self._peek_transcript())
        if not set(fabric.configs.get(cfg, [])) - ours and cfg != self.zone_cfg:
            raise CommandRejected(
                f"{cfg} holds nothing but flexzone's zones of this link; removing them would leave no "
                f"configuration in effect, and flexzone never disables a configuration it did not create",
                router_message="", transcript=self._peek_transcript())

    def _unzone(self, fabric: FosZoning, ours: set[str]) -> None:
        """Take the link's zones out of the cfg in effect and re-enable it (see the module doc)."""
        cfg = fabric.in_effect
        if cfg is not None and (ours & set(fabric.configs.get(cfg, [])) or ours & set(fabric.active)):
            self._check_unzone(fabric, ours)
            if not set(fabric.configs.get(cfg, [])) - ours:
                # fz_cfg was created by flexzone on a fabric with none in effect: disabling it restores that.
                self.warn(f"the last flexzone zone left {cfg}, which flexzone had created on a fabric with no "
                          "configuration in effect; zoning is back to no configuration in effect")
                self._disable_own_cfg(fabric, ours)
                return
        # Our zones are taken out of the cfg in effect and out of fz_cfg only; any other cfg that lists
        # one is somebody else's, so that zone stays defined (FOS refuses to delete a cfg member).
        holders = [holder for holder in dict.fromkeys((cfg, self.zone_cfg)) if holder in fabric.configs]
        for holder in holders:
            leaving = [name for name in sorted(ours) if name in fabric.configs[holder]]
            if leaving:
                self.zoning_edit(f'cfgremove "{holder}", "{"; ".join(leaving)}"')
        held_elsewhere = {name for other in fabric.cfgs_holding(ours) if other not in holders
                          for name in fabric.configs[other] if name in ours}
        for name in sorted(ours):
            if name in fabric.zones and name not in held_elsewhere:
                self.zoning_edit(f'zonedelete "{name}"')
        if held_elsewhere:
            self.warn(f"zones {', '.join(sorted(held_elsewhere))} stay defined: other configurations list them")
        if cfg is not None and (ours & set(fabric.configs.get(cfg, [])) or ours & set(fabric.active)):
            self._still_as_read(fabric, cfg, ours)
            self.enable(cfg)
        elif self._own_token is not None:
            self.save()

    def _disable_own_cfg(self, fabric: FosZoning, ours: set[str]) -> None:
        output = self.confirm("cfgdisable")
        if "Updating flash" not in output:
            raise self.rejection("cfgdisable", output)
        self.zoning_edit(f'cfgdelete "{self.zone_cfg}"')
        for name in sorted(ours):
            if name in fabric.zones:
                self.zoning_edit(f'zonedelete "{name}"')
        self.save()

    def save_config(self) -> None:
        """Extension config is written to flash as applied and zoning by cfgenable; only a transaction
        of this session's own (edits sent outside add/remove) is saved. Another session's is theirs."""
        if self._own_token is not None:
            self.save()

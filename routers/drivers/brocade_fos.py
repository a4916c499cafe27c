"""Brocade Fabric OS 8/9 extension switch driver (a 7840's VE ports 24-43), over SSH or telnet.

Zoning on a live fabric (the cfg in effect, this session's zoning transaction, staged changes of
others) is brocade_fos_zoning.py's; the rules both FCIP drivers share are routers/drivers/zoning.py's.

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
flexzone's zones *in force* name its VE port: an add puts the zones in force first and then makes
the tunnel, so a retry after a lost reply finds them and knows the tunnel is its own; a tunnel on a
VE port no flexzone zone in force names is someone else's and the add is refused, and so is a tunnel
that appears on the port between flexzone's read and its create (the create says it exists). A
remove deletes the tunnel first, while the link's zones still prove it is flexzone's, and only a
tunnel shaped as flexzone makes them: circuit 0 to the link's remote gateway and no other circuit,
with no other flexzone link on the port; any other tunnel stays (with a warning) and the link's
zones are taken out all the same. A port whose tunnel reaches another gateway carries that
gateway's link: removing this one is LinkAbsent. (A VE port flexzone's zones name is flexzone's: an
administrator who rebuilds such a port by hand should take those zones out first.) ``remnants``
tells the engine what is left of a link, so zones in force without their tunnel are never mistaken
for a finished remove.

Director blades number VE ports by slot (``9/16``): their tunnels are read and left alone.

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
* Over SSH (FOS 9 prints long output unpaged there) lines that need no answer in between go in one send
  (together.py), one WAN round trip: the reads a change decides from, the listing that verifies it, the
  ``cfgtransshow`` after the first zoning edit and the ``cfgshow`` before ``cfgenable`` (a read after an
  edit that failed is harmless). Each zoning edit, ``cfgenable`` and its answer, and each ``portcfg``
  change still wait for their own reply. Telnet sessions page, and a pager would take a line sent ahead:
  there every line goes alone.
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
)
from routers.drivers.brocade_fos_show import (
    FosZoning,
    TunnelInfo,
    merge_circuits,
    parse_circuit_details,
    parse_tunnel_table,
)
from routers.drivers.brocade_fos_zoning import YES_NO, ZONE_CFG, ZONE_RE, FosZoningEdits, link_prefix
from routers.drivers.netmiko_base import SessionGuardedDriver, closed_session_is_eof, netmiko_device_type
from routers.drivers.telnet_login import PatientTelnet
from routers.drivers.together import operation
from routers.drivers.zoning import EFFECTIVE, check_fcip_add, fabric_links, link_zones, pair_zones, port_zones
from routers.drivers.zoning_restore import render_fos_restore
from routers.platforms import Platform, Transport

VE_PORTS = range(24, 44)
PAGER = r"Type <CR> to continue, Q<CR> to stop:\s*"
SUCCEEDED = r"(?m)^Operation Succeeded\.\s*$"
TUNNEL_EXISTS = r"Tunnel ID \S+ already exists\."
CIRCUIT_EXISTS = r"Circuit \S+ already exists\."
BUSY = r"(?i)another zoning transaction|transaction is in progress"
TUNNEL_DESCRIPTION = "flexzone"
ECHO_CHECK_LIMIT = 70  # FOS wraps the echo at 80 columns, prompt included
# What list_links and remnants read, and before a change the transaction too: one send each time.
LISTING = ["cfgshow", "portshow fciptunnel all -c", "portcfgshow fcipcircuit all"]


@netmiko_device_type("brocade_fos_telnet")
class BrocadeFOSTelnet(PatientTelnet, BrocadeFOSSSH):
    """Brocade FOS over telnet: netmiko has only the SSH class; the CLI is the same."""

    username_pattern = r"login:\s*$"
    prompt_pattern = r">\s*$"
    refusal_pattern = r"(?i)login incorrect|maximum number of|too many"

    def session_preparation(self) -> None:
        self.take_login_prompt(r">")


def tunnel_lines(spec: LinkSpec) -> list[str]:
    """The tunnel on the link's VE port (described flexzone, for people reading the switch) and its
    circuit 0 from the site's address to the remote gateway."""
    return [f"portcfg fciptunnel {spec.port} create -d {TUNNEL_DESCRIPTION}",
            f"portcfg fcipcircuit {spec.port} create 0 --local-ip {spec.local_ip} --remote-ip {spec.remote_ip}"]


class BrocadeFosDriver(FosZoningEdits, SessionGuardedDriver):
    """FOS 8/9 FCIP: a flexzone tunnel per VE port, a zone per initiator-target pair in the cfg in effect."""

    platform = Platform.BROCADE_FOS
    zones_initiators = True
    session_budget = 4  # of the 32 CLI sessions the switch accepts
    device_types = {Transport.SSH: "brocade_fos", Transport.TELNET: "brocade_fos_telnet"}
    error_pattern = (r"(?mi)^\s*(?:.*failed[.:]|.*Object (?:exists|does not exist)\.|Error|error:|Usage|rbash:|"
                     r".*not found|.*Invalid|.*unreachable|.*already|.*Nothing to modify|.*does not exist|"
                     r".*should not be deleted|.*is not in|.*duplicate name|.*invalid)")
    # How FOS refuses a show command it does not have (rbash) or not in this form (its usage text).
    read_refusal = r"(?mi)^(?:-?rbash: |.*command not found|Usage: |\S+: Invalid (?:option|port parameter))"
    logout_command = "exit"
    together_stop = rf"(?:{PAGER})|(?:{YES_NO})"  # either would take the next line queued as its answer

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

    @staticmethod
    def render_restore(before: dict, after: dict | None) -> list[str]:
        return render_fos_restore(before, after, ZONE_RE, ZONE_CFG)

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
    @property
    def sends_together(self) -> bool:
        # FOS 9 SSH sessions print long output unpaged; the telnet CLI's pager would take a line sent ahead.
        return self.target.transport == Transport.SSH

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

    # --- reading -----------------------------------------------------------------------------
    def read_command(self, command: str) -> str:
        return self.run_paged(command)

    def tunnels(self) -> dict[str, TunnelInfo]:
        """The tunnels by VE port as printed ("24"; "9/16" on a blade), with their circuits: which exist
        and their operational status from the summary table, addresses and admin state from the
        circuit configuration (read only when there are circuits)."""
        tunnels = self.show("portshow fciptunnel all -c", parse_tunnel_table)
        if any(tunnel.circuits for tunnel in tunnels.values()):
            command = "portcfgshow fcipcircuit all"
            if missing := merge_circuits(tunnels, self.show(command, parse_circuit_details)):
                raise GarbledOutput(f"{command}: no configuration of circuit {', '.join(missing)}, which the tunnel "
                                    "table lists", transcript=self._peek_transcript())
        return tunnels

    @operation
    def list_links(self) -> list[RouterLink]:
        self.together(None, LISTING)
        return self._links(self.zoning(), self.tunnels())

    @operation
    def remnants(self, spec: LinkSpec) -> bool:
        """Anything of the link on the switch: listed, or any of its zones in force (a remove cut off
        after it deleted the tunnel leaves those, and they still grant access)."""
        self.together(None, LISTING)
        fabric, tunnels = self.zoning(), self.tunnels()
        listed = spec.key in {link.key for link in self._links(fabric, tunnels)}
        # Zones of the VE port are another link's when its tunnel goes to another gateway.
        tunnel = tunnels.get(str(spec.port))
        ours = tunnel is None or tunnel.remote_ip in (None, spec.remote_ip)
        return listed or (ours and bool(link_zones(fabric, ZONE_RE, spec) & set(fabric.active)))

    def _links(self, fabric: FosZoning, tunnels: dict[str, TunnelInfo]) -> list[RouterLink]:
        on_ve = {int(ve): tunnel for ve, tunnel in tunnels.items() if ve.isdigit()}  # not a blade's slot/VE
        return fabric_links(fabric, ZONE_RE, {ve: tunnel.remote_ip for ve, tunnel in on_ve.items()},
                            {ve: tunnel.carrying for ve, tunnel in on_ve.items()},
                            {ve: tunnel.oper for ve, tunnel in on_ve.items()})

    # --- operations --------------------------------------------------------------------------
    @operation
    def add_link(self, spec: LinkSpec) -> None:
        tunnel_line, circuit_line = tunnel_lines(spec)
        self.render_add(spec)  # validation before anything is sent
        # Everything that can refuse (someone else's transaction or tunnel, staged changes, no cfg to
        # use) is decided before the first change, so a refusal leaves the switch untouched.
        self.together(None, ["cfgtransshow", *LISTING])
        self.claim_zoning()
        fabric = self.zoning()
        tunnels = self.tunnels()
        tunnel = tunnels.get(str(spec.port))
        self._check_carrier(spec, fabric, tunnels)
        cfg, edits = self._zoning_plan(spec, fabric)
        # The zones go first: once they are in force they name the VE port, and that is how a later
        # attempt (a lost reply, a retry) knows the tunnel made next is flexzone's.
        if cfg is not None:
            ours = link_zones(fabric, ZONE_RE, spec) | set(pair_zones(link_prefix(spec), spec))
            self._transactional(lambda: self._apply(cfg, edits, fabric, ours))
        made = cfg is not None
        if tunnel is None:
            if not self.extension(tunnel_line, exists=TUNNEL_EXISTS):
                raise self._appeared(spec, "tunnel")
            made = True
        if tunnel is None or 0 not in tunnel.circuits:
            try:
                created = self.extension(circuit_line, exists=CIRCUIT_EXISTS)
            except CommandRejected:
                if tunnel is None:  # the tunnel this attempt made carries nothing: it goes again
                    self._best_effort(f"portcfg fciptunnel {spec.port} delete")
                raise
            if not created:
                raise self._appeared(spec, "circuit 0")
            made = True
        if not made:
            raise LinkExists(f"link {spec.key} already configured", router_message="",
                             transcript=self._peek_transcript())

    @operation
    def remove_link(self, spec: LinkSpec) -> None:
        self.check_spec(spec, adding=False)
        self.together(None, ["cfgtransshow", *LISTING])
        self.claim_zoning()
        fabric = self.zoning()
        tunnel = self.tunnels().get(str(spec.port))
        if tunnel is not None and tunnel.remote_ip not in (None, spec.remote_ip):
            # The port's zones are those of the link to that other gateway, not of this one.
            raise LinkAbsent(f"VE port {spec.port} tunnels to {tunnel.remote_ip}, not {spec.remote_ip}",
                             router_message="", transcript=self._peek_transcript())
        ours = link_zones(fabric, ZONE_RE, spec)
        if ours:
            self._check_unzone(fabric, ours)  # refusals before the first change
        # The tunnel goes first, while the link's zones in force still prove it is flexzone's; then the
        # zones, also when the tunnel stays (shaped as flexzone never makes it).
        if tunnel is not None:
            if (stays := self._tunnel_stays(spec, fabric, ours, tunnel)) is None:
                self.extension(f"portcfg fciptunnel {spec.port} delete")
            elif stays:
                self.warn(stays)
        if ours:
            self._transactional(lambda: self._unzone(fabric, ours))
        else:
            raise LinkAbsent(f"no flexzone zone of link {spec.key} on the switch", router_message="",
                             transcript=self._peek_transcript())

    def _check_carrier(self, spec: LinkSpec, fabric: FosZoning, tunnels: dict[str, TunnelInfo]) -> None:
        """Refuse, before anything is sent, a VE port whose tunnel is not flexzone's (no flexzone zone
        in force names the port), one that reaches another gateway, and a circuit address pair another
        tunnel's circuit already uses (FOS would refuse the circuit after the zones were in force)."""
        tunnel = tunnels.get(str(spec.port))
        if tunnel is not None and not port_zones(fabric, ZONE_RE, spec.port, in_force=True):
            raise CommandRejected(
                f"VE port {spec.port} already carries a tunnel that flexzone did not create (no flexzone zone in "
                "force names this port); flexzone leaves it alone: choose another VE port for this site",
                router_message="", transcript=self._peek_transcript())
        if tunnel is not None and tunnel.remote_ip not in (None, spec.remote_ip):
            raise CommandRejected(
                f"VE port {spec.port} already carries a tunnel to {tunnel.remote_ip}",
                router_message="", transcript=self._peek_transcript())
        for ve, other in tunnels.items():
            for cid, circuit in other.circuits.items():
                if ve != str(spec.port) and (circuit.local_ip, circuit.remote_ip) == (spec.local_ip, spec.remote_ip):
                    raise CommandRejected(
                        f"circuit {cid} of VE port {ve} already joins {spec.local_ip} to {spec.remote_ip}; one "
                        f"address pair carries one circuit, so VE port {spec.port} cannot have it",
                        router_message="", transcript=self._peek_transcript())

    def _tunnel_stays(self, spec: LinkSpec, fabric: FosZoning, ours: set[str], tunnel: TunnelInfo) -> str | None:
        """None when the remove deletes the port's tunnel; otherwise why it stays ("" when nothing is
        amiss: another flexzone link uses it)."""
        port = spec.port
        if port_zones(fabric, ZONE_RE, port) - ours:
            return ""
        if not ours & set(fabric.active):
            return (f"the tunnel on VE port {port} stays: no zone of link {spec.key} is in force, so nothing shows "
                    "it is flexzone's")
        if tunnel.remote_ip is None:
            return (f"the tunnel on VE port {port} stays: it has no circuit 0 to {spec.remote_ip}, as flexzone makes "
                    "them; the link's zones were taken out")
        if set(tunnel.circuits) != {0}:
            extra = ", ".join(str(cid) for cid in sorted(tunnel.circuits) if cid != 0)
            return (f"the tunnel on VE port {port} stays: it carries circuits flexzone does not make ({extra}); the "
                    "link's zones were taken out")
        return None

    def _appeared(self, spec: LinkSpec, what: str) -> CommandRejected:
        """A tunnel or circuit flexzone read as missing, which the switch says exists: someone made it
        since flexzone read the switch, and it is theirs."""
        return CommandRejected(
            f"VE port {spec.port}: a {what} appeared there after flexzone read the switch; it is not flexzone's, "
            "so flexzone leaves it alone and this link stays incomplete",
            router_message="", transcript=self._peek_transcript())

    def _best_effort(self, command: str) -> None:
        try:
            self.extension(command)
        except Exception as exc:  # noqa: BLE001 - the failure being reported is the caller's
            self.warn(f"{command} failed after the link could not be completed ({exc})")

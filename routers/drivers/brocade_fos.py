"""Brocade Fabric OS 8/9 extension switch driver (7840/7810/SX6 FCIP), over SSH or telnet.

How a flexzone link maps onto FOS FCIP
--------------------------------------
``LinkSpec(port, zone, remote_ip, local_ip, wwn)`` is, on the switch:

* an FCIP tunnel on VE port ``port`` (7840: VE 24-43) described ``flexzone`` (so we only ever delete
  tunnels we created), with circuit 0 from ``local_ip`` (an ipif the site already configured) to
  ``remote_ip``. The tunnel is shared by every flexzone zone carried to that remote gateway, as
  FCIP tunnels are: ``portcfg fciptunnel <port> create -d flexzone`` and
  ``portcfg fcipcircuit <port> create 0 --local-ip <local_ip> --remote-ip <remote_ip>``;
* a zone ``fz_z<zone>_ve<port>`` holding the device WWN, added to the defined configuration
  ``fz_cfg`` and enabled (``cfgenable`` also saves to flash). The zone is the link: it names the
  flexzone zone and the tunnel, so a remove knows exactly what to delete, and links of one zone
  over two tunnels never edit each other's zone.

One VE port reaches one remote gateway (circuit 0): a link to another remote on an occupied port is
rejected (CommandRejected). ``local_ip`` and ``wwn`` are required to add (ValueError otherwise), not
to remove. A remove deletes the zone and, when it was the tunnel's last flexzone zone, the tunnel
(``render_remove`` shows that last-link case).

``list_links`` reads ``portcfgshow fciptunnel all -c`` (tunnels, circuit addresses) and ``cfgshow``
(the ``fz_z<zone>_ve<port>`` zones): a link is up when its zone is in the effective configuration
and its tunnel is online.

Device quirks handled here
--------------------------
* FOS has no ``terminal length 0``; long outputs stop at ``Type <CR> to continue, Q<CR> to stop:`` and
  are continued with a bare return.
* ``cfgenable``/``cfgsave``/``cfgdisable`` ask ``(yes, y, no, n): [no]``; we answer ``y``.
* Zoning commands succeed silently: any output is an error message (the OpenStack Cinder rule).
  Extension commands print ``Operation Succeeded.`` or an ``Object exists.``-style error.
* When the cfg named in ``cfgadd`` does not exist yet (first link), FOS answers ``"fz_cfg" not
  found`` and the driver sends ``cfgcreate`` instead: the one place where what is sent can differ
  from ``render_add``. Removing a cfg's last zone deletes the cfg; the driver then disables zoning
  (``cfgdisable``) if ``fz_cfg`` was the effective configuration.
* Retries converge: an add whose pieces already exist finishes the missing ones and raises
  LinkExists only if nothing was missing; a remove that finds no zone still deletes a flexzone tunnel
  left without zones, then raises LinkAbsent. Another link's tunnel is never touched.
* Echo of commands longer than the terminal wraps with ``\\r`` on real FOS (netmiko #1798), so long
  lines are sent without netmiko's echo check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from netmiko.base_connection import BaseConnection

from routers.drivers.base import (
    CommandRejected,
    GarbledOutput,
    LinkAbsent,
    LinkExists,
    LinkSpec,
    Platform,
    RouterLink,
    Transport,
)
from routers.drivers.netmiko_base import SessionGuardedDriver, closed_session_is_eof

VE_PORTS = range(24, 44)
ZONE_CFG = "fz_cfg"
PAGER = r"Type <CR> to continue, Q<CR> to stop:\s*"
YES_NO = r"\(yes, y, no, n\): \[no\]\s*$"
SUCCEEDED = r"(?m)^Operation Succeeded\.\s*$"
TUNNEL_EXISTS = r"Tunnel ID \S+ already exists\."
CIRCUIT_EXISTS = r"Circuit \S+ already exists\."
ZONE_RE = re.compile(r"fz_z(\d+)_ve(\d+)")
TUNNEL_DESCRIPTION = "flexzone"
TUNNEL_HEAD = re.compile(r"^\s*Tunnel: VE-Port:(?:\d+/)?(\d+)\b")
CIRCUIT_HEAD = re.compile(r"^\s*Circuit: VE-Port:(?:\d+/)?(\d+) ID:(\d+)")
KEY_VALUE = re.compile(r"^\s+([^:=][^:]*?)\s*:\s(.*)$")
# Every line the detail and zoning views may contain (values: what FOS prints for our objects).
DETAIL_LINE = re.compile(
    r"|\s*Tunnel: VE-Port:(?:\d+/)?\d+ \(idx:\d+, DP\d\)|\s*Circuit: VE-Port:(?:\d+/)?\d+ ID:\d+|\s*=+"
    r"|\s+[A-Za-z][A-Za-z0-9 /()\-.]*?\s*:(?: [\w .:/%()\-,]*)?"
    r"|\s+Description\s+: .*"  # free text an administrator typed
)
ZONING_LINE = re.compile(
    r"|Defined configuration:|Effective configuration:|No Effective configuration: \(No Access\)"
    r"| no configuration defined|\s*(?:cfg|zone|alias):\t[A-Za-z][\w$^\-]*\t?[\w:;, $^\-]*|\t+[\w:;, $^\-]*"
)
ECHO_CHECK_LIMIT = 70  # FOS wraps the echo at 80 columns, prompt included


@dataclass
class TunnelInfo:
    """One tunnel as ``portcfgshow fciptunnel <ve> -c`` shows it: its keys, and its circuits' keys."""

    ve: int
    fields: dict[str, str] = field(default_factory=dict)
    circuits: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def description(self) -> str:
        return self.fields.get("Description", "")

    @property
    def remote_ip(self) -> str | None:
        return self.circuits.get(0, {}).get("Remote IP") or None

    @property
    def online(self) -> bool:
        return self.fields.get("Oper State") == "Online"


def zone_name(spec: LinkSpec) -> str:
    return f"fz_z{spec.zone}_ve{spec.port}"


def parse_tunnels(output: str) -> dict[int, TunnelInfo]:
    """Parse the ``portcfgshow fciptunnel all -c`` detail blocks into tunnels with their circuits."""
    tunnels: dict[int, TunnelInfo] = {}
    target: dict[str, str] | None = None
    for line in output.splitlines():
        if match := TUNNEL_HEAD.match(line):
            ve = int(match.group(1))
            target = tunnels.setdefault(ve, TunnelInfo(ve)).fields
        elif match := CIRCUIT_HEAD.match(line):
            ve = int(match.group(1))
            target = tunnels.setdefault(ve, TunnelInfo(ve)).circuits.setdefault(int(match.group(2)), {})
        elif target is not None and (match := KEY_VALUE.match(line)):
            target[match.group(1).strip()] = match.group(2).strip()
    return tunnels


def parse_zones(cfgshow: str) -> tuple[dict[str, list[str]], set[str]]:
    """``cfgshow``: the defined zones with their members, and the names of the effective zones."""
    defined: dict[str, list[str]] = {}
    effective_zones: set[str] = set()
    section = ""
    current: list[str] | None = None
    for line in cfgshow.splitlines():
        if line.startswith("Defined configuration"):
            section, current = "defined", None
        elif line.startswith(("Effective configuration", "No Effective configuration")):
            section, current = "effective", None
        elif match := re.match(r"^\s*(cfg|zone|alias):\s*(\S+)\s*(.*)$", line):
            kind, name, rest = match.groups()
            if section == "effective" and kind == "zone":
                effective_zones.add(name)
            current = defined.setdefault(name, []) if section == "defined" and kind == "zone" else None
            if current is not None:
                current += [m.strip() for m in rest.split(";") if m.strip()]
        elif current is not None and line.startswith("\t"):
            current += [m.strip() for m in line.split(";") if m.strip()]
    return defined, effective_zones


def links_from(tunnels: dict[int, TunnelInfo], defined: dict[str, list[str]],
               effective_zones: set[str]) -> list[RouterLink]:
    """A link per ``fz_z<zone>_ve<port>`` zone whose tunnel has a circuit 0 remote address."""
    links = []
    for name in defined:
        match = ZONE_RE.fullmatch(name)
        if not match:
            continue
        zone, ve = int(match.group(1)), int(match.group(2))
        tunnel = tunnels.get(ve)
        if tunnel is None or tunnel.remote_ip is None:
            continue
        state = "up" if name in effective_zones and tunnel.online else "down"
        links.append(RouterLink(ve, zone, tunnel.remote_ip, state))
    return sorted(links, key=lambda link: link.key)


class BrocadeFosDriver(SessionGuardedDriver):
    """FOS 8/9 FCIP: a flexzone tunnel per VE port, a zone per link in ``fz_cfg`` (see the module doc)."""

    platform = Platform.BROCADE_FOS
    device_types = {Transport.SSH: "brocade_fos", Transport.TELNET: "brocade_fos_telnet"}
    error_pattern = (r"(?mi)^\s*(?:.*failed[.:]|.*Object (?:exists|does not exist)\.|Error|error:|Usage|rbash:|"
                     r".*not found|.*Invalid|.*unreachable|.*already|.*Nothing to modify|.*does not exist)")
    zone_cfg = ZONE_CFG

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
        if spec.local_ip == spec.remote_ip:
            raise ValueError("remote_ip: must differ from local_ip")
        if spec.wwn is None:
            raise ValueError("wwn: required on FCIP platforms (the link is the device's zone across the tunnel)")

    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=True)
        zone = zone_name(spec)
        return [
            f"portcfg fciptunnel {spec.port} create -d {TUNNEL_DESCRIPTION}",
            f"portcfg fcipcircuit {spec.port} create 0 --local-ip {spec.local_ip} --remote-ip {spec.remote_ip}",
            f'zonecreate "{zone}", "{spec.wwn}"',
            f'cfgadd "{cls.zone_cfg}", "{zone}"',
            f'cfgenable "{cls.zone_cfg}"',
        ]

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=False)
        zone = zone_name(spec)
        return [
            f'cfgremove "{cls.zone_cfg}", "{zone}"',
            f'zonedelete "{zone}"',
            f'cfgenable "{cls.zone_cfg}"',
            f"portcfg fciptunnel {spec.port} delete",
        ]

    # --- commands ----------------------------------------------------------------------------
    def verify_echo(self, command: str) -> bool:
        return len(command) <= ECHO_CHECK_LIMIT

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
        """Run a portcfg command; True when it succeeded, False when the object already existed."""
        output = self.run(command)
        if re.search(SUCCEEDED, output):
            return True
        if exists and re.search(exists, output):
            return False
        raise self.rejection(command, output)

    def rejection(self, command: str, output: str) -> CommandRejected | GarbledOutput:
        message = " ".join(line.strip() for line in output.splitlines() if line.strip())[:300]
        if not message or not re.search(self.error_pattern, output):
            return GarbledOutput(f"{command!r}: unrecognised reply {output[:200]!r}",
                                 transcript=self._peek_transcript())
        return CommandRejected(f"{command!r}: {message}", router_message=message, transcript=self._peek_transcript())

    def zoning(self, command: str, tolerate: str | None = None) -> bool:
        """A silent zoning command: True if it changed something, False if `tolerate` matched."""
        output = self.run(command).strip()
        if not output:
            return True
        if tolerate and re.search(tolerate, output):
            return False
        raise self.rejection(command, output)

    # --- reading -----------------------------------------------------------------------------
    def read(self, command: str, grammar: re.Pattern[str]) -> str:
        """A paged show command whose every line must fit `grammar`: a damaged reply is refused
        (GarbledOutput) rather than half-parsed into a wrong picture of the switch."""
        output = self.run_paged(command)
        bad = next((line for line in output.splitlines() if not grammar.fullmatch(line.rstrip())), None)
        if bad is not None:
            raise GarbledOutput(f"{command}: unrecognised line {bad[:120]!r}", transcript=self._peek_transcript())
        return output

    def tunnels(self) -> dict[int, TunnelInfo]:
        return parse_tunnels(self.read("portcfgshow fciptunnel all -c", DETAIL_LINE))

    def zones(self) -> tuple[dict[str, list[str]], set[str]]:
        output = self.read("cfgshow", ZONING_LINE)
        if "configuration" not in output:
            raise GarbledOutput(f"cfgshow: unrecognised reply {output[:200]!r}", transcript=self._peek_transcript())
        return parse_zones(output)

    def list_links(self) -> list[RouterLink]:
        tunnels = self.tunnels()
        return links_from(tunnels, *self.zones())

    # --- operations --------------------------------------------------------------------------
    def add_link(self, spec: LinkSpec) -> None:
        tunnel_line, circuit_line, zone_line, cfgadd_line, enable_line = self.render_add(spec)
        tunnel_existed = not self.extension(tunnel_line, exists=TUNNEL_EXISTS)
        circuit_existed = False
        if tunnel_existed:
            tunnel = self.tunnels().get(spec.port)
            remote = tunnel.remote_ip if tunnel else None
            if tunnel is None or tunnel.description != TUNNEL_DESCRIPTION or remote not in (None, spec.remote_ip):
                raise CommandRejected(
                    f"VE port {spec.port} already carries a tunnel to {remote or 'another gateway'}",
                    router_message=f"Tunnel ID {spec.port} already exists.", transcript=self._peek_transcript())
            circuit_existed = remote == spec.remote_ip
        if not circuit_existed and not self.extension(circuit_line, exists=CIRCUIT_EXISTS):
            circuit_existed = True
        zone_changed = self.zoning(zone_line, tolerate=r"duplicate name")
        try:
            zone_changed |= self.zoning(cfgadd_line, tolerate=r"already contains")
        except CommandRejected as exc:
            if f'"{self.zone_cfg}" not found' not in exc.router_message:
                raise
            zone_changed |= self.zoning(f'cfgcreate "{self.zone_cfg}", "{zone_name(spec)}"')
        if zone_changed or zone_name(spec) not in self.zones()[1]:
            zone_changed = True
            output = self.confirm(enable_line)
            if not re.search(r"is in effect", output):
                raise self.rejection(enable_line, output)
        if tunnel_existed and circuit_existed and not zone_changed:
            raise LinkExists(f"link {spec.key} already configured",
                             router_message=f'duplicate name "{zone_name(spec)}"', transcript=self._peek_transcript())

    def remove_link(self, spec: LinkSpec) -> None:
        cfgremove_line, delete_line, enable_line, tunnel_line = self.render_remove(spec)
        zone = zone_name(spec)
        tunnel = self.tunnels().get(spec.port)
        if tunnel is not None and tunnel.remote_ip not in (None, spec.remote_ip):
            raise LinkAbsent(f"VE port {spec.port} tunnels to {tunnel.remote_ip}, not {spec.remote_ip}",
                             router_message="", transcript=self._peek_transcript())
        defined, effective_zones = self.zones()
        present = zone in defined or zone in effective_zones
        if present:
            changed = self.zoning(cfgremove_line, tolerate=r"not found|is not in")
            changed |= self.zoning(delete_line, tolerate=r"not found")
            self._enforce(enable_line, changed or zone in effective_zones)
        others = [name for name in defined if name != zone and (m := ZONE_RE.fullmatch(name))
                  and int(m.group(2)) == spec.port]
        if tunnel is not None and tunnel.description == TUNNEL_DESCRIPTION and not others:
            self.extension(tunnel_line)
        if not present:
            raise LinkAbsent(f"no zone {zone} on the switch", router_message=f'"{zone}" not found',
                             transcript=self._peek_transcript())

    def _enforce(self, enable_line: str, needed: bool) -> None:
        """Re-enable fz_cfg after a zone left it; if FOS deleted the emptied cfg, disable zoning."""
        if not needed:
            return
        output = self.run(enable_line, expect=rf"(?:{YES_NO})|(?:{self.prompt_pattern()})")
        if re.search(YES_NO, output):
            output += self.run("y")
            if not re.search(r"is in effect", output):
                raise self.rejection(enable_line, output)
            return
        if f'"{self.zone_cfg}" not found' not in output:
            raise self.rejection(enable_line, output)
        effective = re.search(r"^\s*cfg:\s*(\S+)", self.read("cfgactvshow", ZONING_LINE), re.M)
        if effective and effective.group(1) == self.zone_cfg:
            output = self.confirm("cfgdisable")
            if "Updating flash" not in output:
                raise self.rejection("cfgdisable", output)

    def save_config(self) -> None:
        """Extension config is written to flash as applied; save the zoning transaction, if any."""
        output = self.confirm("cfgsave")
        if not re.search(r"Nothing changed|Updating flash", output):
            raise self.rejection("cfgsave", output)

    def logout(self, conn: BaseConnection) -> None:
        conn.write_channel("exit" + conn.RETURN)

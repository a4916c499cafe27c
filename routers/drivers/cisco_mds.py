"""Cisco MDS 9000 (NX-OS) FCIP driver over SSH, using netmiko's stock ``cisco_nxos`` class.

How a flexzone link maps onto MDS FCIP
--------------------------------------
``LinkSpec(port, zone, remote_ip, local_ip, wwn)`` is, on the switch:

* FCIP interface ``fcip<port>`` (ids 1-255, the range every MDS release accepts) described
  ``flexzone`` (so we only ever delete interfaces we created), using FCIP profile ``<port>`` bound to
  ``local_ip`` and peering with ``remote_ip``. Like an FOS tunnel, the interface is shared by every
  flexzone zone carried to that remote gateway;
* zone ``fz_z<zone>_fcip<port>`` with ``member pwwn <wwn>`` in VSAN ``vsan`` (default 1), a member
  of zoneset ``fz_zoneset``, which is then activated in that VSAN. The zone is the link.

All of it is one ``configure terminal`` session (``render_add``): ``feature fcip`` (idempotent; the
FCIP commands do not exist until it is on), ``fcip profile <port>`` / ``ip address <local_ip>``,
``interface fcip <port>`` / ``switchport description flexzone`` / ``use-profile <port>`` /
``peer-info ipaddr <remote_ip>`` / ``no shutdown``, the zone, the zoneset member, the activation.
A remove takes the zone out of the zoneset, deletes it, re-activates, and deletes the interface and
its profile when it was their last flexzone zone (``render_remove`` shows that last-link case).

Why one fixed VSAN rather than VSAN = zone id: VSAN 1 is the default VSAN every MDS port (FCIP
interfaces included, "Port vsan is 1") already belongs to, so the zone is enforced with no VSAN
database or trunk-allowed changes; zone ids 4079 and 4094 would collide with reserved VSANs; and
a VSAN per zone would partition fabrics, which is a site design decision, not a per-link one. A
site that zones in another VSAN subclasses the driver and sets ``vsan``.

NX-OS configuration commands are idempotent and print nothing, so duplicates are detected by
reading ``show running-config`` first: a link whose pieces all exist raises LinkExists (a partial
one is completed first), an interface peering with another gateway raises CommandRejected, removing
a link whose zone is not there raises LinkAbsent. ``local_ip`` and ``wwn`` are required to add, not to
remove. ``save_config`` copies running to startup.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from netmiko.exceptions import ConfigInvalidException

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

FCIP_IDS = range(1, 256)
ZONESET = "fz_zoneset"
ZONE_RE = re.compile(r"fz_z(\d+)_fcip(\d+)")
DESCRIPTION = "flexzone"
# Running-config lines are keywords and values; free text and secrets appear only after the
# keywords listed. A line outside this grammar means the reply was damaged on the way.
CONFIG_LINE = re.compile(
    r"\s*(?:!.*|(?:username|snmp-server|radius-server|tacacs-server|banner|(?:switchport )?description) .*"
    r"|[A-Za-z0-9 \-_./:,()#'\"=<>+%\[\]]*)\s*"
)
CONFIG_ERRORS = r"% (?:Invalid|Incomplete|Ambiguous)|not present|in use|does not exist"


@dataclass
class RunningConfig:
    """The parts of ``show running-config`` a link lives in."""

    interfaces: dict[int, dict[str, str]] = field(default_factory=dict)
    profiles: dict[int, str] = field(default_factory=dict)
    zones: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    zonesets: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    active: dict[int, str] = field(default_factory=dict)
    active_zones: set[tuple[int, str]] = field(default_factory=set)


def parse_running_config(text: str) -> RunningConfig:
    """Interface fcip blocks, the full zone database and the activated zonesets."""
    config = RunningConfig()
    block: list[str] | dict[str, str] | None = None
    full_db = False
    number = -1
    for raw in text.splitlines():
        line = raw.rstrip()
        if line and not line.startswith(" "):
            number = -1  # a new top-level block ends any fcip profile block
        if line.startswith("!Active Zone Database"):
            full_db = False
        elif line.startswith("!Full Zone Database"):
            full_db = True
        if match := re.match(r"^fcip profile (\d+)$", line):
            number = int(match.group(1))
            config.profiles[number] = ""
            block = None
        elif (match := re.match(r"^\s+ip address (\S+)$", line)) and number in config.profiles:
            config.profiles[number] = match.group(1)
        elif match := re.match(r"^interface fcip(\d+)$", line):
            block = config.interfaces.setdefault(int(match.group(1)), {"shutdown": "yes"})
        elif match := re.match(r"^zone name (\S+) vsan (\d+)$", line):
            key = (int(match.group(2)), match.group(1))
            if not full_db:
                config.active_zones.add(key)
            block = config.zones.setdefault(key, []) if full_db else None
        elif match := re.match(r"^zoneset name (\S+) vsan (\d+)$", line):
            block = config.zonesets.setdefault((int(match.group(2)), match.group(1)), []) if full_db else None
        elif match := re.match(r"^zoneset activate name (\S+) vsan (\d+)$", line):
            config.active[int(match.group(2))] = match.group(1)
            block = None
        elif line.startswith(" ") and isinstance(block, dict):
            words = line.split()
            if words[:2] == ["switchport", "description"]:
                block["description"] = " ".join(words[2:])
            elif words[0] == "use-profile":
                block["profile"] = words[1]
            elif words[:2] == ["peer-info", "ipaddr"]:
                block["peer"] = words[2]
            elif words == ["no", "shutdown"]:
                block["shutdown"] = "no"
        elif line.startswith(" ") and isinstance(block, list):
            words = line.split()
            if words[:2] == ["member", "pwwn"]:
                block.append(words[2])
            elif words[0] == "member":
                block.append(words[1])
        elif line and not line.startswith(" "):
            block = None
    return config


def links_from_config(config: RunningConfig, vsan: int) -> list[RouterLink]:
    """A link per ``fz_z<zone>_fcip<port>`` zone in `vsan` whose interface has a peer address."""
    links = []
    for zone_vsan, name in config.zones:
        match = ZONE_RE.fullmatch(name)
        if zone_vsan != vsan or not match:
            continue
        zone, number = int(match.group(1)), int(match.group(2))
        interface = config.interfaces.get(number, {})
        if not interface.get("peer"):
            continue
        up = (vsan, name) in config.active_zones and interface.get("shutdown") == "no"
        links.append(RouterLink(number, zone, interface["peer"], "up" if up else "down"))
    return sorted(links, key=lambda link: link.key)


class CiscoMdsDriver(SessionGuardedDriver):
    """MDS NX-OS FCIP: a flexzone fcip interface per port, a zone per link in ``fz_zoneset`` (module doc)."""

    platform = Platform.CISCO_MDS
    device_types = {Transport.SSH: "cisco_nxos", Transport.TELNET: "cisco_nxos_telnet"}
    error_pattern = r"(?m)^% |not present|in use|does not exist"
    vsan = 1
    zoneset = ZONESET

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
        if spec.local_ip == spec.remote_ip:
            raise ValueError("remote_ip: must differ from local_ip")
        if spec.wwn is None:
            raise ValueError("wwn: required on FCIP platforms (the link is the device's zone across the tunnel)")

    @classmethod
    def zone_name(cls, spec: LinkSpec) -> str:
        return f"fz_z{spec.zone}_fcip{spec.port}"

    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=True)
        zone = cls.zone_name(spec)
        return [
            "configure terminal",
            "feature fcip",
            f"fcip profile {spec.port}",
            f"ip address {spec.local_ip}",
            f"interface fcip {spec.port}",
            f"switchport description {DESCRIPTION}",
            f"use-profile {spec.port}",
            f"peer-info ipaddr {spec.remote_ip}",
            "no shutdown",
            f"zone name {zone} vsan {cls.vsan}",
            f"member pwwn {spec.wwn}",
            f"zoneset name {cls.zoneset} vsan {cls.vsan}",
            f"member {zone}",
            f"zoneset activate name {cls.zoneset} vsan {cls.vsan}",
            "end",
        ]

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        cls.check_spec(spec, adding=False)
        zone = cls.zone_name(spec)
        return [
            "configure terminal",
            f"zoneset name {cls.zoneset} vsan {cls.vsan}",
            f"no member {zone}",
            f"no zone name {zone} vsan {cls.vsan}",
            f"zoneset activate name {cls.zoneset} vsan {cls.vsan}",
            f"no interface fcip {spec.port}",
            f"no fcip profile {spec.port}",
            "end",
        ]

    # --- commands ----------------------------------------------------------------------------
    def configure(self, lines: list[str]) -> str:
        """Send the lines between ``configure terminal`` and ``end`` (netmiko sends those two itself)."""
        assert lines[0] == "configure terminal" and lines[-1] == "end"
        conn = self.conn
        with self._router_call(lines[1]), closed_session_is_eof(self):
            try:
                return str(conn.send_config_set(
                    lines[1:-1], read_timeout=self.wait_limit(self.target.command_timeout), error_pattern=CONFIG_ERRORS,
                    exit_config_mode=True,
                ))
            except ConfigInvalidException as exc:
                message = _error_line(self._peek_transcript())
                try:
                    conn.exit_config_mode()  # leave the session usable for the next operation
                except Exception:  # noqa: BLE001 - the rejection is what matters; a dead session is dropped later
                    pass
                raise CommandRejected(f"configure: {message}", router_message=message,
                                      transcript=self._peek_transcript()) from exc

    def running_config(self) -> RunningConfig:
        output = self.run("show running-config")
        bad = next((line for line in output.splitlines() if not CONFIG_LINE.fullmatch(line)), None)
        if "version " not in output or bad is not None:
            raise GarbledOutput(f"show running-config: unrecognised line {(bad or output)[:120]!r}",
                                transcript=self._peek_transcript())
        return parse_running_config(output)

    # --- operations --------------------------------------------------------------------------
    def list_links(self) -> list[RouterLink]:
        return links_from_config(self.running_config(), self.vsan)

    def add_link(self, spec: LinkSpec) -> None:
        lines = self.render_add(spec)
        config = self.running_config()
        interface = config.interfaces.get(spec.port)
        if interface is not None:
            if interface.get("description", DESCRIPTION) != DESCRIPTION:
                raise CommandRejected(f"fcip{spec.port} is not a flexzone interface ({interface['description']!r})",
                                      router_message="", transcript=self._peek_transcript())
            if interface.get("peer") not in (None, spec.remote_ip):
                raise CommandRejected(f"fcip{spec.port} already peers with {interface['peer']}",
                                      router_message="", transcript=self._peek_transcript())
        link = next((ln for ln in links_from_config(config, self.vsan) if ln.key == spec.key), None)
        zone = (self.vsan, self.zone_name(spec))
        complete = (link is not None and link.state == "up" and spec.wwn in config.zones.get(zone, [])
                    and zone[1] in config.zonesets.get((self.vsan, self.zoneset), []))
        if not complete:
            self.configure(lines)
        if link is not None:
            raise LinkExists(f"link {spec.key} already configured", router_message="",
                             transcript=self._peek_transcript())

    def remove_link(self, spec: LinkSpec) -> None:
        (_, zoneset_line, member_line, zone_line, activate_line, interface_line, profile_line, _) = \
            self.render_remove(spec)
        config = self.running_config()
        interface = config.interfaces.get(spec.port)
        if interface is not None and interface.get("peer") not in (None, spec.remote_ip):
            raise LinkAbsent(f"fcip{spec.port} peers with {interface['peer']}, not {spec.remote_ip}",
                             router_message="", transcript=self._peek_transcript())
        zone = self.zone_name(spec)
        in_zoneset = zone in config.zonesets.get((self.vsan, self.zoneset), [])
        defined = (self.vsan, zone) in config.zones
        lines = []
        if in_zoneset:
            lines += [zoneset_line, member_line]
        if defined:
            lines.append(zone_line)
        if in_zoneset or (self.vsan, zone) in config.active_zones:
            lines.append(activate_line)
        others = [name for vsan, name in config.zones if name != zone and (m := ZONE_RE.fullmatch(name))
                  and int(m.group(2)) == spec.port]
        if interface is not None and interface.get("description") == DESCRIPTION and not others:
            lines.append(interface_line)
            if spec.port in config.profiles:
                lines.append(profile_line)
        if lines:
            self.configure(["configure terminal", *lines, "end"])
        if not defined:
            raise LinkAbsent(f"no zone {zone} in vsan {self.vsan}", router_message="",
                             transcript=self._peek_transcript())

    def save_config(self) -> None:
        conn = self.conn
        with self._router_call("copy running-config startup-config"), closed_session_is_eof(self):
            output = str(conn.save_config())
        if "Copy complete" not in output:
            message = _error_line(output)
            raise CommandRejected(f"copy running-config startup-config: {message}", router_message=message,
                                  transcript=self._peek_transcript())


def _error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "^"]
    errors = [line for line in lines if re.search(CONFIG_ERRORS, line)]
    return (errors or lines or ["configuration rejected"])[-1]

"""What a Cisco MDS switch shows: ``show interface brief | interface fcip N | fcip profile [N|all] | fcip
summary | zoneset [active] [vsan N] | zone [status] [vsan N] | running-config | startup-config | version
| vsan | feature | terminal``.

Formats follow public NX-OS captures: the ``show interface brief`` FC header, the ``show zoneset
[active] vsan N`` layout and the ``interface fcipN`` running-config block. The fcip section of ``show
interface brief``, ``show fcip profile`` and ``show interface fcip N`` are documented but uncaptured
formats ([R]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from routers.sim.cisco_mds.parser import FCIP_IDS, VSAN_IDS, CliError, Sink, Words
from routers.sim.cisco_mds.zoning import MdsZoning
from routers.sim.cisco_mds.zoning_show import render_zoning, show_zone, show_zoneset, zone_status
from routers.sim.personality import Session

if TYPE_CHECKING:
    from routers.sim.cisco_mds.personality import MdsPersonality

FC_PORTS = 8

BANNER = (
    "Cisco Nexus Operating System (NX-OS) Software\n"
    "TAC support: http://www.cisco.com/tac\n"
    "Copyright (c) 2002-2024, Cisco Systems, Inc. All rights reserved.\n"
    "The copyrights to certain works contained in this software are\n"
    "owned by other third parties and used and distributed under their own\n"
    "licenses, such as open source.  This software is provided \"as is,\" and unless\n"
    "otherwise stated, there is no warranty, express or implied, including but not\n"
    "limited to warranties of merchantability and fitness for a particular purpose.\n"
)

BRIEF_FC_HEADER = """
-----------------------------------------------------------------------------------------
Interface  Vsan   Admin  Admin   Status       SFP    Oper  Oper   Port     Logical
                  Mode   Trunk                       Mode  Speed  Channel   Type
                         Mode                              (Gbps)
-----------------------------------------------------------------------------------------
"""
BRIEF_FCIP_HEADER = """
-------------------------------------------------------------------------------
Interface          Vsan   Admin  Admin   Status      Oper  Profile  Port-channel
                          Mode   Trunk               Mode
                                 Mode
-------------------------------------------------------------------------------
"""


class MdsShows:
    """The ``show`` command of one switch."""

    def __init__(self, personality: MdsPersonality) -> None:
        self.personality = personality

    @property
    def running(self) -> dict[str, Any]:
        return self.personality.running

    @property
    def zoning(self) -> MdsZoning:
        return self.personality.zoning

    async def __call__(self, session: Session, out: Sink, words: Words) -> None:
        """``show ...`` (exec mode, or ``do show``/``show`` in configuration mode)."""
        what = words.keyword("interface", "fcip", "zoneset", "zone", "running-config", "startup-config",
                             "version", "vsan", "feature", "terminal")
        if what == "interface":
            if words.keyword("brief", optional=True):
                words.end()
                out.write(self._interface_brief())
                return
            words.keyword("fcip")
            number = words.number(FCIP_IDS)
            words.end()
            if str(number) not in self.running["interfaces"]:
                raise CliError("Invalid interface format", words.items[-1][1])
            out.write(self._interface_fcip(number))
        elif what == "fcip":
            if words.keyword("profile", "summary") == "summary":
                words.end()
                out.write(self._fcip_summary())
                return
            target = words.peek()
            if target is None or words.keyword("all", optional=True):
                words.end()
                out.write(self._profile_table())
            else:
                number = words.number(FCIP_IDS)
                words.end()
                out.write(self._profile_detail(number))
        elif what == "zone" and words.keyword("status", optional=True):
            words.keyword("vsan")
            vsan = words.number(VSAN_IDS)
            words.end()
            out.write(zone_status(self.zoning, vsan))
        elif what in ("zoneset", "zone"):
            active = words.keyword("active", optional=True) is not None if what == "zoneset" else False
            vsan = None
            if words.keyword("vsan", optional=True):
                vsan = words.number(VSAN_IDS)
            words.end()
            out.write(show_zoneset(self.zoning, active, vsan) if what == "zoneset" else show_zone(self.zoning, vsan))
        elif what in ("running-config", "startup-config"):
            words.end()
            config = self.running if what == "running-config" else self.personality.state.saved
            if what == "startup-config" and not config:
                out.write("No startup configuration.\n")
            else:
                out.write(render_config(config, self.personality.hostname, what))
        elif what == "version":
            words.end()
            out.write(self._version())
        elif what == "vsan":
            words.end()
            for vsan, info in sorted(self.running["vsans"].items(), key=lambda item: int(item[0])):
                out.write(f"vsan {vsan} information\n         name:{info['name']}  state:active\n"
                          "         interoperability mode:default\n"
                          "         loadbalancing:src-id/dst-id/oxid\n         operational state:up\n\n")
        elif what == "feature":
            words.end()
            out.write("Feature Name          Instance  State\n-------------------- -------- --------\n")
            for feature in ("fcip", "fcsp", "ivr", "npiv", "port-security", "telnet"):
                state = "enabled" if feature in self.running["features"] else "disabled"
                out.write(f"{feature:<20s}  1        {state}\n")
        else:
            words.end()
            out.write(f"TTY: /dev/pts/0 Type: \"xterm\"\nLength: {24 if session.paging else 0} lines, "
                      "Width: 511 columns\nSession Timeout: 30 minutes\n")

    # --- outputs -----------------------------------------------------------------------------
    def _interface_status(self, interface: dict[str, Any]) -> str:
        if interface["shutdown"]:
            return "down"
        profile = self.running["profiles"].get(interface.get("profile") or "")
        return "trunking" if profile and profile.get("ip") and interface.get("peer") else "down"

    def _interface_brief(self) -> str:
        text = BRIEF_FC_HEADER
        for port in range(1, FC_PORTS + 1):
            text += f"fc1/{port:<7d} 1      auto   off     sfpAbsent    --     --           --       --\n"
        if self.running["interfaces"]:
            text += BRIEF_FCIP_HEADER
            for number, interface in sorted(self.running["interfaces"].items(), key=lambda item: int(item[0])):
                status = self._interface_status(interface)
                mode = "TE" if status == "trunking" else "--"
                profile = interface.get("profile") or "--"
                text += (f"fcip{number:<14s} 1      auto   on      {status:<11s} {mode:<5s} {profile:<8s} --\n")
        text += ("\n-------------------------------------------------------------------------------\n"
                 "Interface                    Status     IP Address        Speed        MTU\n"
                 "-------------------------------------------------------------------------------\n"
                 "mgmt0                        up         --                1 Gbps       1500\n")
        return text

    def _interface_fcip(self, number: int) -> str:
        interface = self.running["interfaces"][str(number)]
        status = self._interface_status(interface)
        headline = "down (Administratively down)" if interface["shutdown"] else status
        profile = interface.get("profile")
        lines = [
            f"fcip{number} is {headline}",
            "    Hardware is IPStorage",
            f"    Port WWN is 20:{0x40 + number:02x}:00:3a:9c:51:7e:00",
        ]
        if interface.get("description"):
            lines.append(f"    Port description is {interface['description']}")
        if status == "trunking":
            lines.append("    Peer port WWN is 20:40:00:3a:9c:77:12:00")
        lines += [
            "    Admin port mode is auto, trunk mode is on",
            "    snmp link state traps are enabled",
            f"    Port mode is {'TE' if status == 'trunking' else 'auto'}",
            "    Port vsan is 1",
            "    Speed is 10 Gbps",
            "    Trunk vsans (admin allowed and active) (1)",
        ]
        if profile:
            lines.append(f"    Using Profile id {profile}  (interface IPStorage1/1)")
        if interface.get("peer"):
            lines += ["    Peer Information", f"      Peer Internet address is {interface['peer']} and port is 3225"]
        lines += [
            "    Write acceleration mode is configured off",
            "    Tape acceleration mode is configured off",
            "    Tape Accelerator flow control buffer size is automatic",
            "    IP Compression is disabled",
            "    Maximum number of TCP connections is 2",
            "    QOS control code point is 0",
            "    QOS data code point is 0",
        ]
        return "\n".join(lines) + "\n"

    def _profile_table(self) -> str:
        text = "\nProfileId       Ipaddr          TcpPort\n"
        for number, profile in sorted(self.running["profiles"].items(), key=lambda item: int(item[0])):
            text += f"{number:<16s}{profile.get('ip') or '0.0.0.0':<16s}3225\n"
        return text

    def _profile_detail(self, number: int) -> str:
        profile = self.running["profiles"].get(str(number))
        if profile is None:
            return f"FCIP Profile {number} does not exist\n"  # [R]
        return (f"FCIP Profile {number}\n"
                f"    Internet Address is {profile.get('ip') or '0.0.0.0'} (interface IPStorage1/1)\n"
                "    Listen Port is 3225\n"
                "    TCP parameters\n"
                "        SACK is enabled\n"
                "        PMTU discover is enabled, reset timeout is 3600 sec\n"
                "        Keep alive is 60 sec\n"
                "        Minimum retransmission timeout is 200 ms\n"
                "        Maximum number of re-transmissions is 4\n"
                "        Send buffer size is 0 KB\n"
                "        Maximum allowed bandwidth is 1000000 kbps\n"
                "        Minimum available bandwidth is 500000 kbps\n"
                "        Estimated round trip time is 1000 usec\n"
                "        Congestion window monitoring is enabled, burst size is 50 KB\n")

    def _fcip_summary(self) -> str:
        # [R] layout from the SAN-OS/NX-OS configuration guides; no capture available.
        rule = "-" * 79
        text = (f"\n{rule}\nTun prof  Eth-if            peer-ip          Status T W T Enc Comp Bandwidth   rtt\n"
                f"                                                    E A A           max/min     (us)\n{rule}\n")
        for number, interface in sorted(self.running["interfaces"].items(), key=lambda item: int(item[0])):
            status = {"trunking": "TRNK", "down": "DOWN"}[self._interface_status(interface)]
            text += (f"{number:<4s}{interface.get('profile') or '--':<6s}{'IPS1/1':<18s}"
                     f"{interface.get('peer') or '--':<17s}{status:<7s}N N N N   N    1000M/500M  1000\n")
        return text

    def _version(self) -> str:
        return (BANNER + "\nSoftware\n  BIOS:      version 2.1.18\n  system:    version 9.4(2a)\n\n"
                "Hardware\n  cisco MDS 9250i 40 FC 2 IPS 8 FCoE (2 RU) Chassis (\"40FC+8FCoE+2IPS Supervisor\")\n"
                f"  Device name: {self.personality.hostname}\n")


def render_config(config: dict[str, Any], hostname: str, which: str) -> str:
    """NX-OS running-config text for the parts the simulator models."""
    lines = ["", f"!Command: show {which}", "", "version 9.4(2a)"]
    lines += [f"feature {feature}" for feature in config.get("features", [])]
    lines += ["", f"hostname {hostname}"]
    extra_vsans = sorted((v for v in config.get("vsans", {}) if v != "1"), key=int)
    if extra_vsans:
        lines += ["", "vsan database"]
        lines += [f"  vsan {v} name {config['vsans'][v]['name']}" for v in extra_vsans]
    for number, profile in sorted(config.get("profiles", {}).items(), key=lambda item: int(item[0])):
        lines += ["", f"fcip profile {number}"]
        if profile.get("ip"):
            lines.append(f"  ip address {profile['ip']}")
    lines += render_zoning(config)
    for number, interface in sorted(config.get("interfaces", {}).items(), key=lambda item: int(item[0])):
        lines += ["", f"interface fcip{number}"]
        if interface.get("description"):
            lines.append(f"  switchport description {interface['description']}")
        if interface.get("profile"):
            lines.append(f"  use-profile {interface['profile']}")
        if interface.get("peer"):
            lines.append(f"  peer-info ipaddr {interface['peer']}")
        lines.append("  shutdown" if interface.get("shutdown") else "  no shutdown")
    lines += ["", "interface mgmt0", "  ip address 192.0.2.10/24", ""]
    return "\n".join(lines) + "\n"

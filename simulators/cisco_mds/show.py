"""What a Cisco MDS switch shows: ``show interface brief | interface fcipN | fcip profile [N|all] | fcip
summary | zone ... | zoneset ... | fcalias ... | device-alias database | running-config [fcip |
interface fcipN] | startup-config | version | vsan | feature | terminal``.

The zoning shows are zoning_show.py's, the configurations running_config.py's. Formats follow public
NX-OS captures: the ``show interface brief`` FC header, ``show device-alias database``. The fcip
section of ``show interface brief``, ``show fcip profile`` and ``show interface fcipN`` are documented
but uncaptured formats ([R]).
"""

from __future__ import annotations

from typing import Any

from simulators.cisco_mds import zoning_show
from simulators.cisco_mds.device_alias import show_database
from simulators.cisco_mds.parser import FCIP_IDS, VSAN_IDS, CliError, Sink, Words, fcip_interface
from simulators.cisco_mds.running_config import (
    CABLED_PORTS,
    FC_PORTS,
    MGMT_ADDRESS,
    render_config,
    render_fcip,
    render_fcip_interface,
)
from simulators.cisco_mds.switch import Switch
from simulators.cisco_mds.zoning import MdsZoning
from simulators.personality import Session

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

    def __init__(self, personality: Switch) -> None:
        self.personality = personality

    @property
    def running(self) -> dict[str, Any]:
        return self.personality.running

    @property
    def zoning(self) -> MdsZoning:
        return self.personality.zoning

    async def __call__(self, session: Session, out: Sink, words: Words) -> None:
        """``show ...`` (exec mode, or ``do show``/``show`` in configuration mode)."""
        what = words.keyword("interface", "fcip", "fcalias", "zoneset", "zone", "device-alias", "running-config",
                             "startup-config", "version", "vsan", "feature", "terminal")
        if what == "interface":
            out.write(self._interface(words))
        elif what == "fcip":
            out.write(self._fcip(words))
        elif what in ("fcalias", "zoneset", "zone"):
            out.write(self._zoning(what, words))
        elif what == "device-alias":
            words.keyword("database")
            words.end()
            out.write(show_database(self.running))
        elif what in ("running-config", "startup-config"):
            out.write(self._config(what, words))
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
                state = "enabled" if feature in ("telnet", *self.running["features"]) else "disabled"
                out.write(f"{feature:<20s}  1        {state}\n")
        else:
            words.end()
            out.write(f"TTY: /dev/pts/0 Type: \"xterm\"\nLength: {24 if session.paging else 0} lines, "
                      "Width: 511 columns\nSession Timeout: 30 minutes\n")

    def _interface(self, words: Words) -> str:
        """``show interface brief`` or ``show interface fcipN`` (``fcip N`` too)."""
        if words.keyword("brief", optional=True):
            words.end()
            return self._interface_brief()
        position = words.position()
        number = fcip_interface(words, "fcip" in self.running["features"])
        words.end()
        if str(number) not in self.running["interfaces"]:
            raise CliError("Invalid interface format", position)
        return self._interface_fcip(number)

    def _fcip(self, words: Words) -> str:
        if words.keyword("profile", "summary") == "summary":
            words.end()
            return self._fcip_summary()
        if words.peek() is None or words.keyword("all", optional=True):
            words.end()
            return self._profile_table()
        number = words.number(FCIP_IDS)
        words.end()
        return self._profile_detail(number)

    def _zoning(self, what: str, words: Words) -> str:
        """``show zone [status|active] ...``, ``show zoneset [brief] [active] ...``, ``show fcalias ...``, each
        with optional ``name X`` and ``vsan N`` in any order."""
        flags = {"zone": ("status", "active"), "zoneset": ("brief", "active"), "fcalias": ()}[what]
        chosen: set[str] = set()
        name: str | None = None
        vsan: int | None = None
        while words.more():
            option = words.keyword("name", "vsan", *flags)
            if option == "name":
                name = words.name()
            elif option == "vsan":
                vsan = words.number(VSAN_IDS)
            else:
                chosen.add(option or "")
        running = self.running
        if what == "fcalias":
            return zoning_show.show_fcalias(running, vsan, name)
        if what == "zone" and "status" in chosen:
            vsans = [vsan] if vsan is not None else sorted(int(v) for v in running["vsans"])
            return "".join(zoning_show.zone_status(self.zoning, v) for v in vsans)
        if what == "zone":
            show = zoning_show.show_zone_active if "active" in chosen else zoning_show.show_zone
            return show(running, vsan, name)
        if "brief" in chosen:
            return zoning_show.show_zoneset_brief(running, vsan, "active" in chosen, name)
        show = zoning_show.show_zoneset_active if "active" in chosen else zoning_show.show_zoneset
        return show(running, vsan, name)

    def _config(self, what: str, words: Words) -> str:
        personality = self.personality
        if what == "startup-config":
            words.end()
            if not personality.state.saved:
                return "No startup configuration.\n"
            return render_config(personality.state.saved, personality.hostname, what, personality.changed_at,
                                 personality.saved_at)
        part = words.keyword("fcip", "interface", optional=True)
        if part is None:
            words.end()
            return render_config(self.running, personality.hostname, what, personality.changed_at)
        if part == "fcip":
            words.end()
            return render_fcip(self.running, personality.changed_at)
        position = words.position()
        number = fcip_interface(words, "fcip" in self.running["features"])
        words.end()
        if str(number) not in self.running["interfaces"]:
            raise CliError("Invalid interface format", position)
        return render_fcip_interface(self.running, number, personality.changed_at)

    # --- outputs -----------------------------------------------------------------------------
    def _interface_status(self, interface: dict[str, Any]) -> str:
        if interface["shutdown"]:
            return "down"
        profile = self.running["profiles"].get(interface.get("profile") or "")
        return "trunking" if profile and profile.get("ip") and interface.get("peer") else "down"

    def _interface_brief(self) -> str:
        text = BRIEF_FC_HEADER
        vsan_of = {port: vsan for vsan, info in self.running["vsans"].items() for port in info.get("interfaces", [])}
        for port in range(1, FC_PORTS + 1):
            cabled = port <= CABLED_PORTS
            status, mode, speed, logical = ("up", "F", "16", "edge") if cabled else ("down", "--", "--", "--")
            text += (f"{f'fc1/{port}':<11s}{vsan_of.get(f'fc1/{port}', '1'):<7s}auto   off     {status:<13s}swl    "
                     f"{mode:<6s}{speed:<7s}--       {logical}\n")
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
                 f"mgmt0                        up         {MGMT_ADDRESS:<18s}1 Gbps       1500\n")
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

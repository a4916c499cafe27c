"""Nishan IPS 3000 (SoIP) driver, over telnet. THE CLI GRAMMAR IS SYNTHETIC.

No public IPS 3000 CLI transcript exists: the grammar is the one flexzone's simulator defines
(simulators/, designed from RFC 4172). The IPS writes every change to flash as it is made, so
``save_config()`` has nothing to send.
"""

from __future__ import annotations

import re

from routers.drivers.base import GarbledOutput, RouterLink
from routers.drivers.ifcp import IfcpDriver, IfcpTelnet
from routers.drivers.netmiko_base import netmiko_device_type
from routers.platforms import Platform, Transport

HEADER = re.compile(r"^FCPORT\s+ZONE\s+REMOTE\s+STATUS\s*$")
ROW = re.compile(r"^(\d+)\s+(\d+)\s+(\S+)\s+(ACTIVE|DOWN)\s*$")
COUNT = re.compile(r"^\((\d+) connections?\)\s*$")


@netmiko_device_type("nishan_ips3000_telnet")
class NishanTelnet(IfcpTelnet):
    """Nishan IPS 3000 SoIP over telnet (synthetic grammar)."""

    username_pattern = r"login:\s*$"
    prompt_pattern = r">\s*$"
    refusal_pattern = r"Login incorrect|E_BUSY"


class NishanDriver(IfcpDriver):
    """SoIP (synthetic): `ifcp create|delete fcport=P zone=Z remote=IP`, `ifcp list`."""

    platform = Platform.NISHAN_IPS3000
    device_types = {Transport.TELNET: "nishan_ips3000_telnet"}
    error_pattern = r"(?m)^Error: E_[A-Z]+ "
    logout_command = "logout"
    add_template = "ifcp create fcport={port} zone={zone} remote={remote_ip}"
    remove_template = "ifcp delete fcport={port} zone={zone} remote={remote_ip}"
    list_command = "ifcp list"
    add_ok = remove_ok = r"^OK\s*$"
    add_exists = r"^Error: E_EXISTS "
    remove_absent = r"^Error: E_NOTFOUND "

    @staticmethod
    def parse_links(output: str) -> list[RouterLink]:
        """Parse `ifcp list`: header, rows, and a count line that must agree with the rows."""
        lines = [line for line in output.strip().splitlines() if line.strip()]
        if len(lines) < 2 or not HEADER.match(lines[0]) or not (count := COUNT.match(lines[-1])):
            raise GarbledOutput(f"ifcp list: unrecognised output {output[:200]!r}")
        links = []
        for line in lines[1:-1]:
            match = ROW.match(line)
            if not match:
                raise GarbledOutput(f"ifcp list: unrecognised row {line!r}")
            port, zone, remote, status = match.groups()
            links.append(RouterLink(int(port), int(zone), remote, "up" if status == "ACTIVE" else "down"))
        if int(count.group(1)) != len(links):
            raise GarbledOutput(f"ifcp list: {count.group(1)} announced, {len(links)} rows")
        return links

    def save_config(self) -> None:
        """Nothing to send: the IPS has no separate saved configuration."""

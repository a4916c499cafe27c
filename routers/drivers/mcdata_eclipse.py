"""McData Eclipse 2640 (E/OSi) driver, over telnet. THE CLI GRAMMAR IS SYNTHETIC.

No public Eclipse CLI transcript exists: the grammar is the one flexzone's simulator defines
(simulators/, designed from RFC 4172). The Eclipse keeps a saved configuration: ``save_config()``
runs ``config save``; a remove asks for confirmation.
"""

from __future__ import annotations

import re

from routers.drivers.base import GarbledOutput, RouterLink
from routers.drivers.ifcp import IfcpDriver, IfcpTelnet
from routers.drivers.netmiko_base import netmiko_device_type
from routers.platforms import Platform, Transport

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(Bound|Unbound)\s*$")
TOTAL = re.compile(r"^Total: (\d+)\s*$", re.M)
EMPTY = "No iFCP sessions configured."
CONFIRM = r"\(y/n\) \[n\]:\s*$"


@netmiko_device_type("mcdata_eclipse_telnet")
class EclipseTelnet(IfcpTelnet):
    """McData Eclipse E/OSi over telnet (synthetic grammar)."""

    username_pattern = r"Username:\s*$"
    prompt_pattern = r":eosi#\s*$"
    refusal_pattern = r"% Authentication failed|management sessions are in use"

    def session_preparation(self) -> None:
        super().session_preparation()
        # Bounded by the login patience rather than netmiko's fixed disable_paging timeouts.
        self.send_command(
            "cli pager disable", expect_string=re.escape(self.base_prompt), read_timeout=self.login_patience
        )


class EclipseDriver(IfcpDriver):
    """E/OSi (synthetic): `ifcp session add|remove fc-port P zone Z remote-gateway IP`, `config save`."""

    platform = Platform.MCDATA_ECLIPSE
    device_types = {Transport.TELNET: "mcdata_eclipse_telnet"}
    error_pattern = r"(?m)^% "
    logout_command = "exit"
    add_template = "ifcp session add fc-port {port} zone {zone} remote-gateway {remote_ip}"
    remove_template = "ifcp session remove fc-port {port} zone {zone} remote-gateway {remote_ip}"
    list_command = "show ifcp session"
    add_ok = r"^iFCP session added:"
    add_exists = r"% Error: iFCP session exists"
    remove_ok = r"(?m)^iFCP session removed:"
    remove_absent = r"% Error: no such iFCP session"
    remove_question = CONFIRM

    @staticmethod
    def parse_links(output: str) -> list[RouterLink]:
        """Parse `show ifcp session`; refuse anything that is not exactly the table."""
        if output.strip() == EMPTY:
            return []
        total = TOTAL.search(output)
        links = []
        for line in output.splitlines():
            match = ROW.match(line)
            if match:
                port, zone, remote, _tcp, state = match.groups()
                links.append(RouterLink(int(port), int(zone), remote, "up" if state == "Bound" else "down"))
        if total is None or int(total.group(1)) != len(links) or "FC-Port" not in output:
            raise GarbledOutput(f"show ifcp session: unrecognised table {output[:200]!r}")
        return links

    def save_config(self) -> None:
        self.classify("config save", self.run("config save"), ok=r"^Saving configuration to flash\.\.\. done\.")

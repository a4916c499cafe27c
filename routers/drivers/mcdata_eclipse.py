"""McData Eclipse 2640 (E/OSi) driver, over telnet. THE CLI GRAMMAR IS SYNTHETIC.

No public Eclipse CLI transcript exists: the grammar is the one flexzone's simulator defines
(routers/sim/mcdata_eclipse.py, designed from RFC 4172). The Eclipse keeps a saved configuration:
``save_config()`` runs ``config save``; a remove asks for confirmation.
"""

from __future__ import annotations

import re

from routers.drivers.base import GarbledOutput, LinkSpec, Platform, RouterLink, Transport
from routers.drivers.netmiko_base import NetmikoDriver

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(Bound|Unbound)\s*$")
TOTAL = re.compile(r"^Total: (\d+)\s*$", re.M)
EMPTY = "No iFCP sessions configured."
CONFIRM = r"\(y/n\) \[n\]:\s*$"


class EclipseDriver(NetmikoDriver):
    """E/OSi (synthetic): `ifcp session add|remove fc-port P zone Z remote-gateway IP`, `config save`."""

    platform = Platform.MCDATA_ECLIPSE
    device_types = {Transport.TELNET: "mcdata_eclipse_telnet"}
    error_pattern = r"(?m)^% "

    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        return [f"ifcp session add fc-port {spec.port} zone {spec.zone} remote-gateway {spec.remote_ip}"]

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        return [f"ifcp session remove fc-port {spec.port} zone {spec.zone} remote-gateway {spec.remote_ip}"]

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

    def list_links(self) -> list[RouterLink]:
        output = self.run("show ifcp session")
        try:
            return self.parse_links(output)
        except GarbledOutput as exc:
            raise GarbledOutput(str(exc), transcript=self._peek_transcript()) from None

    def add_link(self, spec: LinkSpec) -> None:
        (command,) = self.render_add(spec)
        self.classify(command, self.run(command), ok=r"^iFCP session added:", exists=r"% Error: iFCP session exists")

    def remove_link(self, spec: LinkSpec) -> None:
        (command,) = self.render_remove(spec)
        output = self.run_confirmed(command, CONFIRM)
        self.classify(command, output, ok=r"(?m)^iFCP session removed:", absent=r"% Error: no such iFCP session")

    def save_config(self) -> None:
        self.classify("config save", self.run("config save"), ok=r"^Saving configuration to flash\.\.\. done\.")

    def logout(self, conn) -> None:  # type: ignore[no-untyped-def]
        conn.write_channel("exit" + conn.RETURN)

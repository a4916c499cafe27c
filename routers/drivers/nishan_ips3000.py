"""Nishan IPS 3000 (SoIP) driver, over telnet. THE CLI GRAMMAR IS SYNTHETIC.

No public IPS 3000 CLI transcript exists: the grammar is the one flexzone's simulator defines
(routers/sim/nishan_ips3000.py, designed from RFC 4172). The IPS writes every change to flash as it
is made, so ``save_config()`` has nothing to send.
"""

from __future__ import annotations

import re

from routers.drivers.base import GarbledOutput, LinkSpec, Platform, RouterLink, Transport
from routers.drivers.netmiko_base import NetmikoDriver

HEADER = re.compile(r"^FCPORT\s+ZONE\s+REMOTE\s+STATUS\s*$")
ROW = re.compile(r"^(\d+)\s+(\d+)\s+(\S+)\s+(ACTIVE|DOWN)\s*$")
COUNT = re.compile(r"^\((\d+) connections?\)\s*$")


class NishanDriver(NetmikoDriver):
    """SoIP (synthetic): `ifcp create|delete fcport=P zone=Z remote=IP`, `ifcp list`."""

    platform = Platform.NISHAN_IPS3000
    device_types = {Transport.TELNET: "nishan_ips3000_telnet"}
    error_pattern = r"(?m)^Error: E_[A-Z]+ "

    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        return [f"ifcp create fcport={spec.port} zone={spec.zone} remote={spec.remote_ip}"]

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        return [f"ifcp delete fcport={spec.port} zone={spec.zone} remote={spec.remote_ip}"]

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

    def list_links(self) -> list[RouterLink]:
        output = self.run("ifcp list")
        try:
            return self.parse_links(output)
        except GarbledOutput as exc:
            raise GarbledOutput(str(exc), transcript=self._peek_transcript()) from None

    def add_link(self, spec: LinkSpec) -> None:
        (command,) = self.render_add(spec)
        self.classify(command, self.run(command), ok=r"^OK\s*$", exists=r"^Error: E_EXISTS ")

    def remove_link(self, spec: LinkSpec) -> None:
        (command,) = self.render_remove(spec)
        self.classify(command, self.run(command), ok=r"^OK\s*$", absent=r"^Error: E_NOTFOUND ")

    def save_config(self) -> None:
        """Nothing to send: the IPS has no separate saved configuration."""

    def logout(self, conn) -> None:  # type: ignore[no-untyped-def]
        conn.write_channel("logout" + conn.RETURN)

"""What the two iFCP gateway drivers share (McData Eclipse, Nishan IPS 3000), over telnet.

An iFCP gateway zones by itself (RFC 4172: a zone is the gateway's own object), so a link is one
command to add and one to remove, and the gateway lists its sessions in one table. THE CLI GRAMMARS
ARE SYNTHETIC: no public transcript of either CLI exists, so each is the one flexzone's simulator of
it defines (simulators/). A vendor module gives its command templates, the patterns of its answers
and its table parser; ``IfcpDriver`` does the rest.
"""

from __future__ import annotations

from typing import ClassVar

from netmiko.no_config import NoConfig
from netmiko.no_enable import NoEnable

from routers.drivers.base import GarbledOutput, LinkSpec, RouterLink
from routers.drivers.netmiko_base import NetmikoDriver
from routers.drivers.telnet_login import PatientTelnet


class IfcpTelnet(NoEnable, NoConfig, PatientTelnet):
    """An iFCP gateway's telnet CLI: no enable and no configuration mode; subclasses set the login patterns."""


class IfcpDriver(NetmikoDriver):
    """One command per add or remove, one listing command; subclasses set the grammar below."""

    # Command templates, formatted with the link's port, zone and remote_ip.
    add_template: ClassVar[str]
    remove_template: ClassVar[str]
    list_command: ClassVar[str]
    # What the gateway answers (regular expressions): success, and the two refusals the engine
    # treats as done (the link is already there / already gone).
    add_ok: ClassVar[str]
    add_exists: ClassVar[str]
    remove_ok: ClassVar[str]
    remove_absent: ClassVar[str]
    # A remove that asks for confirmation first (answered y); None: it does not ask.
    remove_question: ClassVar[str | None] = None

    @classmethod
    def render_add(cls, spec: LinkSpec) -> list[str]:
        return [cls.add_template.format(port=spec.port, zone=spec.zone, remote_ip=spec.remote_ip)]

    @classmethod
    def render_remove(cls, spec: LinkSpec) -> list[str]:
        return [cls.remove_template.format(port=spec.port, zone=spec.zone, remote_ip=spec.remote_ip)]

    @staticmethod
    def parse_links(output: str) -> list[RouterLink]:
        """The links in the listing's output; GarbledOutput for anything that is not exactly the table."""
        raise NotImplementedError

    def list_links(self) -> list[RouterLink]:
        output = self.run(self.list_command)
        try:
            return self.parse_links(output)
        except GarbledOutput as exc:
            raise GarbledOutput(str(exc), transcript=self._peek_transcript()) from None

    def add_link(self, spec: LinkSpec) -> None:
        (command,) = self.render_add(spec)
        self.classify(command, self.run(command), ok=self.add_ok, exists=self.add_exists)

    def remove_link(self, spec: LinkSpec) -> None:
        (command,) = self.render_remove(spec)
        output = self.run_confirmed(command, self.remove_question) if self.remove_question else self.run(command)
        self.classify(command, output, ok=self.remove_ok, absent=self.remove_absent)

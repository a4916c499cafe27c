"""The simulator framework: telnet and SSH servers, login, echo, newlines, timing, faults, state.

``SimRouter`` (simulators.server.router) serves one personality, one platform's CLI. Its parts:
the terminal a user sees (terminal.py: echo, prompt, paging, the command loop), the transports that
reach it (transports.py: telnet, SSH, the addresses a simulator may bind) and what it keeps
(state.py: configuration, transcript, host key, in its state directory).
"""

from simulators.server.router import SimRouter
from simulators.server.transports import check_bind_host

__all__ = ["SimRouter", "check_bind_host"]

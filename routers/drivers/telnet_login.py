"""Telnet login that waits up to a deadline and tells failures apart (a netmiko connection mixin).

Why a custom telnet login: netmiko's ``telnet_login`` gives up after ~20 polls (10-13 s), and the
McData Eclipse needs ~12 s from connect to prompt (netmiko issues #2563, #3339). ``PatientTelnet``
polls until a deadline (the target's ``connect_timeout``) and tells a refused login (the device says
so: auth error), a dropped connection (connect error) and a silent device (timeout) apart. The
vendor modules subclass it for the platforms netmiko has no telnet class for.
"""

from __future__ import annotations

import re
import time
from typing import Any, ClassVar

from netmiko.base_connection import BaseConnection
from netmiko.exceptions import NetmikoAuthenticationException, NetmikoTimeoutException, ReadException


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


class SessionClosed(ReadException):
    """The device closed the connection during login without saying why."""


class PatientTelnet(BaseConnection):
    """Telnet login that waits up to a deadline and classifies failures (a netmiko connection mixin).

    Subclasses set the patterns; ``login_patience`` (seconds) is a connect argument.
    """

    username_pattern: ClassVar[str] = r"(?:[Uu]sername|[Ll]ogin|[Uu]ser):\s*$"
    password_pattern: ClassVar[str] = r"[Pp]assword:\s*$"
    prompt_pattern: ClassVar[str] = r"[#>]\s*$"
    refusal_pattern: ClassVar[str] = r"(?i)login incorrect|authentication failed|access denied|session"

    def __init__(self, *args: Any, login_patience: float = 30.0, **kwargs: Any) -> None:
        self.login_patience = login_patience
        super().__init__(*args, **kwargs)

    def telnet_login(self, *args: Any, **kwargs: Any) -> str:
        deadline = time.monotonic() + self.login_patience
        output = pending = ""
        password_sent = False
        while time.monotonic() < deadline:
            try:
                chunk = self.read_channel()
            except EOFError:
                if re.search(self.refusal_pattern, output):
                    reason = last_line(output)
                    raise NetmikoAuthenticationException(f"Login refused by {self.host}: {reason}") from None
                raise SessionClosed(f"{self.host} closed the connection during login") from None
            if not chunk:
                time.sleep(0.05)
                continue
            output += chunk
            pending += chunk
            if re.search(self.refusal_pattern, pending) and not password_sent:
                raise NetmikoAuthenticationException(f"Login refused by {self.host}: {last_line(pending)}")
            if re.search(self.username_pattern, pending):
                if password_sent and re.search(self.refusal_pattern, output):
                    raise NetmikoAuthenticationException(f"Login refused by {self.host}: wrong credentials")
                self.write_channel(self.username + "\r")
                pending, password_sent = "", False
            elif re.search(self.password_pattern, pending):
                assert isinstance(self.password, str)
                self.write_channel(self.password + "\r")
                pending, password_sent = "", True
            elif password_sent and re.search(self.refusal_pattern, pending):
                raise NetmikoAuthenticationException(f"Login refused by {self.host}: {last_line(pending)}")
            elif password_sent and re.search(self.prompt_pattern, pending):
                return output
        raise NetmikoTimeoutException(
            f"{self.host}: no {'prompt' if password_sent else 'login prompt'} within {self.login_patience:.0f} s"
        )

    def session_preparation(self) -> None:
        self._test_channel_read(pattern=self.prompt_pattern)
        self.set_base_prompt()

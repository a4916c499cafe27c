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
        self.login_prompt = ""  # the prompt the login ended on, as the device printed it
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
                self.login_prompt = last_line(pending)
                return output
        raise NetmikoTimeoutException(
            f"{self.host}: no {'prompt' if password_sent else 'login prompt'} within {self.login_patience:.0f} s"
        )

    def _try_session_preparation(self, force_data: bool = True) -> None:
        # netmiko sends an empty line first (and sleeps 0.1 s) so that session_preparation has data to read;
        # a login that ended on the prompt has read it already, and the device would only print it again.
        super()._try_session_preparation(force_data=force_data and not self.login_prompt)

    def session_preparation(self) -> None:
        self.take_login_prompt(self.prompt_pattern)

    def take_login_prompt(self, pattern: str) -> None:
        """Set the base prompt from the prompt the login ended on (the device's own words, the prompt and
        nothing after it). netmiko's way, which a login that saw no prompt still takes, sends an empty
        line twice and reads the prompt again: two round trips per login for what was already read."""
        prompt = self.login_prompt
        # Anything after it means the login stopped on a line that only looked like the prompt (a banner's).
        if prompt[-1:] in ("#", ">") and re.search(pattern, prompt) and not self.read_channel():
            self.base_prompt = prompt[:-1]
            return
        self._test_channel_read(pattern=pattern)
        self.set_base_prompt()

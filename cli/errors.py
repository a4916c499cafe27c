"""Exit codes and the one error type the clients raise; `main` turns it into one line on stderr."""

from __future__ import annotations

DONE = 0
OPERATION_FAILED = 1
USAGE = 2
REFUSED = 3
UNREACHABLE = 4


class CliError(Exception):
    """Something the user must hear about: one sentence, a hint saying what to do, and the exit code."""

    def __init__(self, message: str, hint: str = "", exit_code: int = OPERATION_FAILED,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code
        self.status = status  # the HTTP status when the server answered; None when it did not (TLS, network)

    def line(self, program: str) -> str:
        text = f"{program}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        # One line, whatever the server or the TLS library put in the message.
        return " ".join(text.split())

"""Errors the engine raises to its callers (the API maps them to HTTP answers)."""

from __future__ import annotations

from operations.planner import PlanError


class DeviceBusy(PlanError):
    """The device is locked by another site (answer 409 Conflict). A PlanError, so 400 at worst."""


class OperationFailed(Exception):
    """Ends an operation early with a final state and the message to journal (router's text included)."""

    def __init__(self, message: str, *, state: str = "failed") -> None:
        super().__init__(message)
        self.state = state


class StepFailed(Exception):
    """A router step gave up: a permanent refusal, or transient errors beyond the retry budget.

    `untouched` says no attempt can have changed the router (it was busy every time: another
    operation held it, or another admin held the fabric's zoning; or it never let a session in:
    refused, unreachable, a failed login), so there is nothing to undo.
    """

    def __init__(self, router: str, message: str, *, permanent: bool, untouched: bool = False,
                 timed_out: bool = False) -> None:
        super().__init__(f"router {router}: {message}")
        self.router = router
        self.permanent = permanent
        self.untouched = untouched
        self.timed_out = timed_out  # the operation's time ran out: another look would only wait again

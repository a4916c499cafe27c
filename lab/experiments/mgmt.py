"""Management sessions across the emulated WAN, for the latency and loss experiments.

A simulated router runs at the remote site's management address; the probe (lab.experiments.probe)
runs at the primary site and opens real telnet sessions to it through the WAN, adding, listing and
removing links with the flexzone drivers. What is measured is the router phase of an operation as the
service would see it (session set-up, commands, save); the registry and invocation phases need the
REST service in front (see latency.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from lab.experiments.base import ROOT, json_lines, python_env, wait_listening
from lab.xdd import SitePlace

SIM_PORT = 2323


@dataclass(frozen=True)
class Session:
    platform: str = "mcdata_eclipse"
    timing_scale: float = 0.05
    op_timeout: float = 30.0


class RemoteRouter:
    """A simulator process at the remote site's management address (fresh state each start)."""

    def __init__(self, lab: Any, session: Session, name: str = "mgmt-sim") -> None:
        self.lab = lab
        self.session = session
        self.name = name
        self.place = SitePlace(lab, "remote")
        self.host = lab.site("remote").mgmt_addr

    def start(self) -> RemoteRouter:
        argv = [sys.executable, "-m", "simulators", "--platform", self.session.platform, "--telnet",
                f"{self.host}:{SIM_PORT}", "--timing-scale", f"{self.session.timing_scale:g}", "--seed", "7"]
        self.place.spawn(self.name, argv, cwd=ROOT, env=python_env())
        wait_listening(self.place, SIM_PORT, timeout=30)
        return self

    def stop(self) -> None:
        self.place.stop(self.name)

    def __enter__(self) -> RemoteRouter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def probe(lab: Any, router: RemoteRouter, reps: int, *, zone_base: int = 100,
          ops: str = "add,list,remove") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run the probe at the primary site; return its operation rows and its final agreement record."""
    session = router.session
    argv = [sys.executable, "-m", "lab.experiments.probe", "--platform", session.platform, "--host", router.host,
            "--port", str(SIM_PORT), "--reps", str(reps), "--zone-base", str(zone_base), "--op-timeout",
            f"{session.op_timeout:g}", "--ops", ops]
    # Worst case: every operation runs into its timeouts (connect + command), plus the read-back retries.
    timeout = reps * len(ops.split(",")) * 3 * session.op_timeout + 5 * 2 * session.op_timeout + 30
    proc = lab.run("primary", ["env", f"PYTHONPATH={python_env()['PYTHONPATH']}", *argv], check=False,
                   timeout=timeout)
    rows, final = json_lines(proc.stdout, "final")
    final = final or {}
    if not rows:
        raise RuntimeError(f"the probe produced nothing (rc {proc.returncode}): {proc.stderr[-600:]}")
    return rows, final


def agreement(final: dict[str, Any]) -> bool | None:
    """Router and probe agree on the links that exist (None if the router could not be read back)."""
    if final.get("router") is None:
        return None
    return final["router"] == final.get("believed")

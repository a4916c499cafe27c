"""The lab's experiments: block transfers through the SAN link (transfer, filesizes, effective, clients), the
service's operations across the emulated WAN (latency, loss, api_clients), several sites at once (sites)
and the report.

Each experiment is one function `run(bench, plan, folder, out) -> Outcome` plus a QUICK and a FULL plan,
driven by `python -m lab <name> [--quick]` (or `python -m lab.experiments <name>`).
"""

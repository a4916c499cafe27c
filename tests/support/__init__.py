"""Helpers the tests share: plain functions and constants, imported as `tests.support.<module>`.

No test module imports another test module; what more than one needs lives here:
- `sims`: the simulators' account, and the one way to point a registry router at a simulator;
- `agreement`: what routers and registry hold, and changes made behind the registry's back;
- `fabric`: flexzone's zones on a simulated FCIP switch;
- `mtls`: raw HTTPS requests with a client certificate;
- `worker`: the environment of a `manage.py worker` a test starts;
- `registry`: variations of the demo cast;
- `lab`: `python -m lab` as a user runs it;
- `docs`: the README and the pages under docs/, and the shell lines they show.
Fixtures stay in the conftests.
"""

"""Helpers the tests share: plain functions and constants, imported as `tests.support.<module>`.

No test module imports another test module, nor a conftest; what more than one needs lives here:
- `sims`: the simulators' account, and the one way to point at a simulator, from a registry router
  (`wire`, `play_the_demo`) or from a driver (`target`);
- `servers`: a real API server over mutual TLS (its PKI, its process) and the lab a CLI test drives;
- `agreement`: what routers and registry hold, and changes made behind the registry's back;
- `fabric`: flexzone's zones on a simulated FCIP switch;
- `mtls`: raw HTTPS requests with a client certificate;
- `worker`: the environment of a `manage.py worker` a test starts;
- `registry`: variations of the demo cast;
- `lab`: `python -m lab` as a user runs it, and the namespaces a lab leaves;
- `docs`: the README and the pages under docs/, and the shell lines they show.
Fixtures more than one directory uses are pytest plugins in `fixtures/` (declared in tests/conftest.py,
never imported); the others stay in their directory's conftest.
"""

"""The operator console: pages over the registry and the journal (see views.py)."""

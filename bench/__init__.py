"""Benchmarks and the soak: flexzone measured from outside, never imported by the service itself.

    python -m bench planner|routers|ops|api|soak [options]     (each NAME --help lists its options)

Each benchmark is a module here with `main(argv) -> int`; `python -m bench` prepares what it needs
first (bench/database.py: a temporary PostgreSQL database of its own, migrated and dropped after)
and the simulators it starts are its own processes or threads.
"""

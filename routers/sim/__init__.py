"""CLI simulators of storage routers: real telnet/SSH servers with platform personalities."""

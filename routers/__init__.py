"""Storage-router drivers (netmiko) and the CLI simulators that stand in for the hardware."""

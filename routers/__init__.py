"""Storage-router drivers (netmiko): one per platform, and the platforms and transports they speak."""

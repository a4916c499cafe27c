"""The lab: emulated WAN sites in network namespaces, impairment backends and experiments."""

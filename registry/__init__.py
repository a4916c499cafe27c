"""The registry: the source of truth for sites, zones, devices, routers, links and the journal."""

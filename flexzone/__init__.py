"""flexzone project package: settings, URLs and the WSGI entry point."""

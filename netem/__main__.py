"""`python -m netem ...`: the lab command line without Django (same code as `manage.py lab`)."""

import sys

from netem.cli import main

sys.exit(main())

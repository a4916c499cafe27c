"""`python -m lab ...`: the lab's command line (lab.command)."""

import sys

from lab.command import main

sys.exit(main())

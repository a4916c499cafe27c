"""`python -m lab ...`: the lab's command line, as the `flexzone-lab` console script runs it."""

import sys

from lab.command import main

sys.exit(main())

"""`python -m lab.experiments transfer --quick`: the experiments alone, without the testbed's other actions."""

import sys

from lab.experiments.commands import main

sys.exit(main())

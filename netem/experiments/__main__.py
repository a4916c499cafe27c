"""`python -m netem.experiments transfer --quick`: the experiments without Django."""

import sys

from netem.experiments.commands import main

sys.exit(main())

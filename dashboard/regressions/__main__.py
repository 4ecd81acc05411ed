"""python -m dashboard.regressions: the CI gate (see cli.py)."""

import sys

from dashboard.regressions.cli import main

sys.exit(main())

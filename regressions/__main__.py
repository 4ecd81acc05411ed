"""python -m regressions: the CI gate (see cli.py)."""

import sys

from regressions.cli import main

sys.exit(main())

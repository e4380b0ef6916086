"""``python -m ragkit``: the command line."""

import sys

from ragkit.cli import main

sys.exit(main())

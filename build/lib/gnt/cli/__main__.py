"""``python -m gnt.cli COMMAND ...``: the ``gnt`` console script without installing it."""

import sys

from gnt.cli import main

sys.exit(main())

#!/usr/bin/env python
"""Build SFT/DPO training data and held-out evaluation files.

The command line lives in ``gnt/cli/build.py`` (``gnt build`` runs the same; ``--help`` lists the flags).
The path line runs this checkout's ``gnt`` even where another checkout is the installed one.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnt.cli.build import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

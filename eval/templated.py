#!/usr/bin/env python
"""Run the templated sensitivity suite (docs/templated-suite.md).

The command line lives in ``gnt/cli/templated.py`` (``gnt templated`` runs the same; ``--help`` lists the flags).
The path line runs this checkout's ``gnt`` even where another checkout is the installed one.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnt.cli.templated import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Judge translations for gender neutrality, validate a judge, check judge prompt files.

The command line lives in ``gnt/cli/judge.py`` (``gnt judge`` runs the same; ``--help`` lists the flags).
The path line runs this checkout's ``gnt`` even where another checkout is the installed one.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnt.cli.judge import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Write the evaluation report of a results folder (Markdown + HTML, optional W&B).

The command line lives in ``gnt/cli/report.py`` (``gnt report`` runs the same; ``--help`` lists the flags).
The path line runs this checkout's ``gnt`` even where another checkout is the installed one.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnt.cli.report import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

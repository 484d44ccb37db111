#!/usr/bin/env python
"""Write the evaluation report of a results folder (Markdown + HTML, optional W&B).

The command line lives in ``gnt/cli/report.py`` (``gnt report`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.report import main

if __name__ == "__main__":
    sys.exit(main())

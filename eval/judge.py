#!/usr/bin/env python
"""Judge translations for gender neutrality, validate a judge, check judge prompt files.

The command line lives in ``gnt/cli/judge.py`` (``gnt judge`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.judge import main

if __name__ == "__main__":
    sys.exit(main())

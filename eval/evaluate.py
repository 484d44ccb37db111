#!/usr/bin/env python
"""Evaluate a base model and every checkpoint over the mGeNTE prompt grid.

The command line lives in ``gnt/cli/evaluate.py`` (``gnt eval`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main())

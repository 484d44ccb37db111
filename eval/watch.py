#!/usr/bin/env python
"""Evaluate checkpoints while training runs, from the training callback's queue.

The command line lives in ``gnt/cli/watch.py`` (``gnt watch`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.watch import main

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Score an evaluation results folder with xCOMET.

The command line lives in ``gnt/cli/comet.py`` (``gnt comet`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.comet import main

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Build SFT/DPO training data and held-out evaluation files.

The command line lives in ``gnt/cli/build.py`` (``gnt build`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.build import main

if __name__ == "__main__":
    sys.exit(main())

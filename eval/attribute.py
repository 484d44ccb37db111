#!/usr/bin/env python
"""Context attribution of an evaluated model (docs/attribution.md).

The command line lives in ``gnt/cli/attribute.py`` (``gnt attribute`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.attribute import main

if __name__ == "__main__":
    sys.exit(main())

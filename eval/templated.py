#!/usr/bin/env python
"""Run the templated sensitivity suite (docs/templated-suite.md).

The command line lives in ``gnt/cli/templated.py`` (``gnt templated`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.templated import main

if __name__ == "__main__":
    sys.exit(main())

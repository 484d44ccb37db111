#!/usr/bin/env python
"""Build an offline model (tiny, smollm, gemma) into a folder.

The command line lives in ``gnt/cli/models.py`` (``gnt model`` runs the same; ``--help`` lists every key).
The project is installed editable (scripts/install.sh); run another checkout with PYTHONPATH=that/checkout.
"""

import sys

from gnt.cli.models import main

if __name__ == "__main__":
    sys.exit(main())

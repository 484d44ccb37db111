#!/usr/bin/env python
"""Print (or run) this machine's ``accelerate launch`` command for a training run over several machines.

The command line lives in ``gnt/cli/launch.py`` (``gnt launch`` runs the same; ``--help`` lists every key).
scripts/slurm/train.sbatch runs it on every node with exec=true.
"""

import sys

from gnt.cli.launch import main

if __name__ == "__main__":
    sys.exit(main())

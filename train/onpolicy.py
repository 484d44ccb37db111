"""On-policy preference optimisation: rounds of sampling the policy, scoring with GNT rewards, DPO on its pairs.

    python train/onpolicy.py recipes/gemma270m-onpolicy.yaml
    python train/onpolicy.py recipes/gemma270m-onpolicy.yaml rounds=2

The command line lives in gnt/cli/onpolicy.py (``gnt onpolicy`` runs the same); see `python train/onpolicy.py --help`.
"""

import sys

from gnt.cli.onpolicy import COMMAND

if __name__ == "__main__":
    sys.exit(COMMAND.main())

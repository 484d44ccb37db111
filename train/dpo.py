"""DPO of an SFT adapter (the SFT adapter is also the frozen reference policy).

    accelerate launch train/dpo.py recipes/qwen-dpo.yaml sft_adapter=runs/qwen-sft
    python train/dpo.py recipes/tiny-dpo.yaml sft_adapter=runs/tiny-sft   # one process (CPU demo)
    python train/dpo.py recipes/qwen-dpo.yaml --dry-run  # print the resolved config and exit

The command line lives in gnt/cli/train.py (``gnt dpo`` runs the same); see `python train/dpo.py --help`.
"""

import sys

from gnt.cli.train import DPO

if __name__ == "__main__":
    sys.exit(DPO.main())

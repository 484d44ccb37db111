"""DPO of an SFT adapter (the reference policy is a frozen copy of the SFT adapter).

    accelerate launch train/dpo.py recipes/qwen-dpo.yaml [sft_adapter=runs/qwen-sft ...]
    python train/dpo.py recipes/tiny-dpo.yaml            # one process (CPU demo)
    python train/dpo.py recipes/qwen-dpo.yaml --dry-run  # print the resolved config and exit

Everything lives in gnt.training; see `python train/dpo.py --help`.
"""

import sys

from gnt.training.cli import main

if __name__ == "__main__":
    sys.exit(main("dpo"))

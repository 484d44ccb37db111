"""Supervised fine-tuning of a LoRA/QLoRA adapter for gender-neutral translation.

    accelerate launch train/sft.py recipes/qwen.yaml [--learning_rate 1e-4 | learning_rate=1e-4 ...]
    python train/sft.py recipes/tiny.yaml            # one process (CPU demo)
    python train/sft.py recipes/qwen.yaml --dry-run  # print the resolved config and exit

The command line lives in gnt/cli/train.py (``gnt sft`` runs the same); see `python train/sft.py --help`.
"""

import sys

from gnt.cli.train import SFT

if __name__ == "__main__":
    sys.exit(SFT.main())

"""GRPO of an SFT adapter with the GNT rewards (label, the learned judge's verdict, adequacy).

    python train/grpo.py recipes/gemma270m-grpo.yaml                      # one process (CPU)
    accelerate launch train/grpo.py recipes/qwen-grpo.yaml                # GPUs; use_vllm: true samples with vLLM

The command line lives in gnt/cli/train.py (``gnt grpo`` runs the same); see `python train/grpo.py --help`.
"""

import sys

from gnt.cli.train import GRPO

if __name__ == "__main__":
    sys.exit(GRPO.main())

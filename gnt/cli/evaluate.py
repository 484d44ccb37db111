"""Evaluate a base model and every checkpoint of training runs over the mGeNTE prompt grid.

    python eval/evaluate.py recipes/eval.yaml --run runs/sft --run runs/dpo
    python eval/evaluate.py recipes/eval-tiny.yaml --model Qwen/Qwen2.5-0.5B-Instruct --mgente data/sample
    python eval/evaluate.py recipes/eval.yaml --run runs/sft langs=it,de shots=4 backend=vllm
    python eval/evaluate.py recipes/eval.yaml --run runs/sft backend=vllm shard=0/4   # worker 0 of 4 (+ 1/4 ...)
    python eval/evaluate.py recipes/eval.yaml --run runs/sft backend=vllm shard=merge # results from the cache

Flags name what to evaluate; anything else is a recipe key as ``key=value`` (or ``--key value``). Results go to
``out_dir`` (see gnt/evaluation/results.py for the layout); a rerun only computes what is missing.
``shard=i/n`` workers share one ``out_dir`` (one filesystem); the last one to finish merges, or run shard=merge.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gnt.data.errors import DataError, DataErrors
from gnt.evaluation.cli import parse_eval_args, recipe_overrides, run_eval_main
from gnt.evaluation.config import load_eval_config
from gnt.evaluation.shard import ShardsIncomplete
from gnt.evaluation.sweep import GenerationFailure, run_sweep
from gnt.recipe import RecipeError


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    return parse_eval_args(
        argv,
        prog="eval/evaluate.py",
        description=__doc__.split("\n\n")[0],
        epilog="Other recipe keys: key=value, e.g. langs=it,de shots=4 backend=vllm rows_per_lang=50",
        recipe_help="evaluation recipe (recipes/eval*.yaml)",
        model_help="base model (hub id or folder); alone: a base-only sweep",
        source=("--mgente", "rows from mGeNTE (folder, TSV or hub id) instead of the runs' held-out rows"),
        leakage_help="score checkpoints trained on evaluated rows",
        quiet_help="no progress bars or table",
    )


def main(argv: list[str] | None = None) -> int:
    args, rest = parse_args(sys.argv[1:] if argv is None else argv)

    def run() -> Path:
        config = load_eval_config(
            args.recipe, recipe_overrides(rest), runs=args.run, adapters=args.adapter, model=args.model,
            mgente=args.mgente, out_dir=args.out, allow_leakage=args.allow_leakage,
        )
        if args.quiet:
            config.progress = False
        return run_sweep(config)

    # a dead server or a model that does not load exits 1
    return run_eval_main(
        run, usage_errors=(RecipeError, DataError, DataErrors), failures=(GenerationFailure, ShardsIncomplete, OSError)
    )


if __name__ == "__main__":
    sys.exit(main())

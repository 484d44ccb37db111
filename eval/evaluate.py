#!/usr/bin/env python
"""Evaluate a base model and every checkpoint of training runs over the mGeNTE prompt grid.

    python eval/evaluate.py recipes/eval.yaml --run runs/sft --run runs/dpo
    python eval/evaluate.py recipes/eval-tiny.yaml --model Qwen/Qwen2.5-0.5B-Instruct --mgente data/sample
    python eval/evaluate.py recipes/eval.yaml --run runs/sft langs=it,de shots=4 backend=vllm

Flags name what to evaluate; anything else is a recipe key as ``key=value`` (or ``--key value``). Results go to
``out_dir`` (see gnt/evaluation/results.py for the layout); a rerun only computes what is missing.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnt.data.errors import DataError, DataErrors  # noqa: E402
from gnt.evaluation.config import load_eval_config  # noqa: E402
from gnt.evaluation.leakage import LeakageError  # noqa: E402
from gnt.evaluation.sweep import GenerationFailure, run_sweep  # noqa: E402
from gnt.recipe import RecipeError, parse_command_line  # noqa: E402


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="eval/evaluate.py", description=__doc__.split("\n\n")[0],
        epilog="Other recipe keys: key=value, e.g. langs=it,de shots=4 backend=vllm rows_per_lang=50",
    )
    parser.add_argument("recipe", help="evaluation recipe (recipes/eval*.yaml)")
    parser.add_argument("--run", action="append", default=[], help="training output folder (repeatable)")
    parser.add_argument("--adapter", action="append", default=[], help="an adapter folder (repeatable)")
    parser.add_argument("--model", help="base model (hub id or folder); alone: a base-only sweep")
    parser.add_argument("--mgente", help="rows from mGeNTE (folder, TSV or hub id) instead of the runs' held-out rows")
    parser.add_argument("--out", help="output folder (recipe key out_dir)")
    parser.add_argument("--allow-leakage", action="store_true", help="score checkpoints trained on evaluated rows")
    parser.add_argument("--quiet", action="store_true", help="no progress bars or table")
    return parser.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    args, rest = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        overrides = parse_command_line(rest).overrides
        config = load_eval_config(
            args.recipe, overrides, runs=args.run, adapters=args.adapter, model=args.model, mgente=args.mgente,
            out_dir=args.out, allow_leakage=args.allow_leakage,
        )
        if args.quiet:
            config.progress = False
        out = run_sweep(config)
    except (RecipeError, DataError, DataErrors) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LeakageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return LeakageError.exit_code
    except (GenerationFailure, OSError) as exc:  # a dead server, a model that does not load
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"results: {out}/summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

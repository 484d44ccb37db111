"""Run the templated sensitivity suite (ΔM, ΔF, ΔN, neutral strategies) on a base model and every checkpoint.

    python eval/templated.py recipes/templated-tiny.yaml
    python eval/templated.py recipes/eval.yaml --run runs/sft --run runs/dpo styles=plain,grid
    python eval/templated.py recipes/eval.yaml --model Qwen/Qwen2.5-7B-Instruct pairs_per_lang=200 langs=it,es
    python eval/templated.py wmt24 PATH/txt-ts --lang es --out OUT [--systems A,B] [--outputs FILE] [--run runs/x]

Any evaluation recipe works (backend, batch size, out_dir, langs, bootstrap keys are shared with eval/evaluate.py,
and so is the generation cache in ``out_dir``); the suite's own keys are suite, pairs_per_lang, suite_seed,
styles, grid_config, grid_shots, extra_forms and plots. Results: ``<out>/<model>/templated/`` and
``<out>/templated_suite/`` (see gnt/templated_suite/run.py). A rerun generates only what is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gnt.data.errors import DataError
from gnt.evaluation.cli import parse_eval_args, recipe_overrides, run_eval_main
from gnt.recipe import RecipeError


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    return parse_eval_args(
        argv,
        prog="eval/templated.py",
        description=__doc__.split("\n\n")[0],
        epilog="Other recipe keys: key=value, e.g. styles=plain pairs_per_lang=50 grid_shots=0 backend=vllm",
        recipe_help="evaluation recipe (recipes/templated-*.yaml or recipes/eval*.yaml)",
        model_help="base model (hub id, folder, 'tiny' or 'smollm')",
        source=("--suite", "suite JSONL (default: the runs' data build eval/templated_suite.jsonl)"),
        leakage_help="score checkpoints trained on suite sources",
        quiet_help="no progress bars",
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "wmt24":  # the published WMT24 gender-resolution suite (gnt/templated_suite/wmt24)
        from gnt.templated_suite.wmt24.cli import main as wmt24_main

        return wmt24_main(argv[1:])
    args, rest = parse_args(argv)

    def run() -> Path:
        from gnt.templated_suite.run import load_config, run_suite

        suite, evaluation = load_config(
            args.recipe, recipe_overrides(rest), runs=args.run, adapters=args.adapter, model=args.model,
            suite=args.suite, out_dir=args.out, allow_leakage=args.allow_leakage,
        )
        if args.quiet:
            evaluation.progress = False
        return run_suite(suite, evaluation)

    return run_eval_main(run, usage_errors=(RecipeError, DataError))


if __name__ == "__main__":
    sys.exit(main())

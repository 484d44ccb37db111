#!/usr/bin/env python
"""Run the templated sensitivity suite (ΔM, ΔF, ΔN, neutral strategies) on a base model and every checkpoint.

    python eval/templated.py recipes/templated-tiny.yaml
    python eval/templated.py recipes/eval.yaml --run runs/sft --run runs/dpo styles=plain,grid
    python eval/templated.py recipes/eval.yaml --model Qwen/Qwen2.5-7B-Instruct pairs_per_lang=200 langs=it,es

Any evaluation recipe works (backend, batch size, out_dir, langs, bootstrap keys are shared with eval/evaluate.py,
and so is the generation cache in ``out_dir``); the suite's own keys are suite, pairs_per_lang, suite_seed,
styles, grid_config, grid_shots, extra_forms and plots. Results: ``<out>/<model>/templated/`` and
``<out>/templated_suite/`` (see gnt/templated_suite/run.py). A rerun generates only what is missing.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnt.data.errors import DataError  # noqa: E402
from gnt.evaluation.leakage import LeakageError  # noqa: E402
from gnt.recipe import RecipeError, parse_command_line  # noqa: E402


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="eval/templated.py", description=__doc__.split("\n\n")[0],
        epilog="Other recipe keys: key=value, e.g. styles=plain pairs_per_lang=50 grid_shots=0 backend=vllm",
    )
    parser.add_argument("recipe", help="evaluation recipe (recipes/templated-*.yaml or recipes/eval*.yaml)")
    parser.add_argument("--run", action="append", default=[], help="training output folder (repeatable)")
    parser.add_argument("--adapter", action="append", default=[], help="an adapter folder (repeatable)")
    parser.add_argument("--model", help="base model (hub id, folder, 'tiny' or 'smollm')")
    parser.add_argument("--suite", help="suite JSONL (default: the runs' data build eval/templated_suite.jsonl)")
    parser.add_argument("--out", help="output folder (recipe key out_dir)")
    parser.add_argument("--allow-leakage", action="store_true", help="score checkpoints trained on suite sources")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    args, rest = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        from gnt.templated_suite.run import load_config, run_suite

        overrides = parse_command_line(rest).overrides
        suite, evaluation = load_config(
            args.recipe, overrides, runs=args.run, adapters=args.adapter, model=args.model, suite=args.suite,
            out_dir=args.out, allow_leakage=args.allow_leakage,
        )
        if args.quiet:
            evaluation.progress = False
        folder = run_suite(suite, evaluation)
    except (RecipeError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LeakageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return LeakageError.exit_code
    print(f"results: {folder}/summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

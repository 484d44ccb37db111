"""``python eval/templated.py wmt24 PATH/txt-ts --lang es --out OUT`` (the templated suite's script, sub-command).

Scores every WMT24 system of the direction (``--systems A,B`` for some, ``--systems none`` for none), a user's
``--outputs FILE`` (``seg_id<TAB>translation``), and, with ``--run``/``--adapter``/``--model``, our base model and
checkpoints translating the suite through the sweep's backends and cache (an evaluation recipe, ``--recipe``, and
``key=value`` overrides choose backend, batch size, max_new_tokens...). Bad input exits 2 with a located message.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from gnt.data.errors import DataError, DataErrors
from gnt.evaluation.bootstrap import DEFAULT_SAMPLES
from gnt.evaluation.cli import run_eval_main
from gnt.recipe import RecipeError, parse_command_line


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="eval/templated.py wmt24",
        description="Score the WMT24 gender-resolution test suite (WMT24 systems, an outputs file, our models).",
        epilog="Other evaluation recipe keys for --run/--model: key=value, e.g. backend=vllm max_new_tokens=128",
    )
    parser.add_argument("root", help="the WMT24 txt-ts folder (documents/, sources/, system-outputs/)")
    parser.add_argument("--lang", default="es", help="target language of the en-xx direction (default es)")
    parser.add_argument("--out", default="outputs/eval", help="output folder; results go to OUT/wmt24/")
    parser.add_argument("--systems", help="comma-separated WMT24 systems (default: all with outputs; 'none': none)")
    parser.add_argument("--outputs", help="TSV of seg_id<TAB>translation for another system")
    parser.add_argument("--name", default="outputs", help="system name for --outputs (default 'outputs')")
    parser.add_argument("--run", action="append", default=[], help="training output folder (repeatable)")
    parser.add_argument("--adapter", action="append", default=[], help="an adapter folder (repeatable)")
    parser.add_argument("--model", help="base model (hub id, folder, 'tiny' or 'smollm')")
    parser.add_argument("--recipe", help="evaluation recipe for --run/--model (backend, batch size, ...)")
    parser.add_argument("--limit", type=int, help="score at most N segments (spread over the template shapes)")
    parser.add_argument("--bootstrap", type=int, default=None, help=f"bootstrap samples (default: recipe's, else {DEFAULT_SAMPLES})")
    parser.add_argument("--no-plots", action="store_true", help="do not draw the ranking figure")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser.parse_known_args(argv)


def _systems(value: str | None) -> list[str] | None:
    if value is None:
        return None
    if value.strip().lower() == "none":
        return []
    return [s.strip() for s in value.split(",") if s.strip()]


def main(argv: list[str]) -> int:
    args, rest = parse_args(argv)
    if args.limit is not None and args.limit < 1:
        print("error: --limit must be positive", file=sys.stderr)
        return 2

    def run() -> Path:
        from gnt.evaluation.discovery import discover_models
        from gnt.templated_suite.run import load_config
        from gnt.templated_suite.wmt24.run import Wmt24Options, run_wmt24

        wants_models = bool(args.run or args.adapter or args.model)
        overrides = parse_command_line(rest).overrides
        if overrides and not wants_models:
            raise RecipeError(f"recipe keys ({', '.join(k for k, _ in overrides)}) only apply with --run/--model")
        evaluation, models = None, []
        if wants_models:
            _, evaluation = load_config(
                args.recipe, overrides, runs=args.run, adapters=args.adapter, model=args.model, out_dir=args.out,
            )
            if args.quiet:
                evaluation.progress = False
            models = discover_models(evaluation.runs, evaluation.adapters, evaluation.model, evaluation.include_base)
        samples = args.bootstrap or (evaluation.bootstrap_samples if evaluation else DEFAULT_SAMPLES)
        options = Wmt24Options(
            root=args.root, lang=args.lang, out=args.out, systems=_systems(args.systems), outputs=args.outputs,
            outputs_name=args.name, limit=args.limit, bootstrap_samples=samples,
            bootstrap_seed=evaluation.bootstrap_seed if evaluation else 0, plots=not args.no_plots,
        )
        return run_wmt24(options, evaluation=evaluation, models=models)

    logging.getLogger("gnt").setLevel(logging.INFO)
    return run_eval_main(run, usage_errors=(RecipeError, DataError, DataErrors))

"""Run the templated sensitivity suite (ΔM, ΔF, ΔN, neutral strategies) on a base model and every checkpoint.

    python eval/templated.py recipes/templated-tiny.yaml
    python eval/templated.py recipes/eval.yaml run=runs/sft run=runs/dpo styles=plain,grid
    python eval/templated.py recipes/eval.yaml model=Qwen/Qwen2.5-7B-Instruct pairs_per_lang=200 langs=it,es
    python eval/templated.py wmt24 PATH/txt-ts --lang es --out OUT [--systems A,B] [--outputs FILE] [--run runs/x]

Any evaluation recipe works (backend, batch size, out_dir, langs, bootstrap keys are shared with eval/evaluate.py,
and so is the generation cache in ``out_dir``; its ``steps`` are for eval/evaluate.py and are not run here); the
suite's own keys are suite, pairs_per_lang, suite_seed, styles, grid_config, grid_shots, extra_forms and plots.
Every setting is a recipe key (``key=value`` or ``--key value``, so ``--run X --suite F --quiet`` work as before).
Results: ``<out>/<model>/templated/`` and ``<out>/templated_suite/`` (see gnt/templated_suite/run.py). A rerun
generates only what is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gnt.data.errors import DataError
from gnt.evaluation.cli import EvalCommand, eval_main, parse_eval_command
from gnt.recipe import RecipeError

SUMMARY_LINE = __doc__.split("\n\n")[0]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "wmt24":  # the published WMT24 gender-resolution suite (gnt/templated_suite/wmt24)
        from gnt.templated_suite.wmt24.cli import main as wmt24_main

        return wmt24_main(argv[1:])
    from gnt.evaluation.config import EvalConfig
    from gnt.evaluation.steps import PipelineKeys
    from gnt.templated_suite.run import SuiteConfig, load_config, run_suite

    def prepare() -> EvalCommand | None:
        return parse_eval_command(argv, (SuiteConfig, EvalConfig, PipelineKeys), prog="eval/templated.py",
                                  summary=SUMMARY_LINE)

    def run(command: EvalCommand) -> Path:
        suite, evaluation = load_config(None, [*command.values(SuiteConfig).items(),
                                               *command.values(EvalConfig).items()])
        evaluation.recipe = command.recipe
        return run_suite(suite, evaluation)

    return eval_main(prepare, run, usage_errors=(RecipeError, DataError))


if __name__ == "__main__":
    sys.exit(main())

"""Evaluate a base model and every checkpoint of training runs: the grid sweep, then the steps the recipe names.

    python eval/evaluate.py recipes/eval.yaml run=runs/sft run=runs/dpo
    python eval/evaluate.py recipes/eval-tiny.yaml model=Qwen/Qwen2.5-0.5B-Instruct mgente=data/sample steps=grid
    python eval/evaluate.py recipes/eval.yaml run=runs/sft langs=it,de shots=4 backend=vllm
    python eval/evaluate.py recipes/eval-tiny.yaml run=runs/sft judge.judge=lexical   # one setting of one step
    python eval/evaluate.py recipes/eval.yaml run=runs/sft backend=vllm shard=0/4   # worker 0 of 4 (+ 1/4 ...)
    python eval/evaluate.py recipes/eval.yaml run=runs/sft backend=vllm shard=merge # results from the cache

Every setting is a recipe key, given as ``key=value`` or ``--key value`` (``--run runs/sft --out X --quiet`` as
before); ``--help`` lists them all. A recipe with ``steps: [grid, judge, xcomet, attribution, templated,
report]`` runs each of them in order (gnt/evaluation/pipeline.py), skipping those whose files are complete; a
recipe without ``steps`` runs the grid sweep only. Results go to ``out_dir`` (layout: gnt/evaluation/results.py);
a rerun only computes what is missing. ``shard=i/n`` workers share one ``out_dir`` (one filesystem) and run the
grid only; the last one to finish merges, or run shard=merge.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gnt.data.errors import DataError, DataErrors
from gnt.evaluation.cli import eval_main
from gnt.evaluation.pipeline import Pipeline, PipelineError, load_pipeline
from gnt.evaluation.shard import ShardsIncomplete
from gnt.evaluation.sweep import GenerationFailure
from gnt.recipe import RecipeError

USAGE_ERRORS = (RecipeError, DataError, DataErrors)


def _run(pipeline: Pipeline) -> Path:
    pipeline.run()
    return pipeline.out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # a dead server, a model that does not load or a failed step exits 1
    return eval_main(lambda: load_pipeline(argv, prog="eval/evaluate.py"), _run, usage_errors=USAGE_ERRORS,
                     failures=(GenerationFailure, ShardsIncomplete, PipelineError, OSError))


if __name__ == "__main__":
    sys.exit(main())

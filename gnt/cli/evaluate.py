"""Evaluate a base model and every checkpoint of training runs: the grid sweep, then the steps the recipe names.

    python eval/evaluate.py recipes/eval.yaml runs=runs/sft,runs/dpo
    python eval/evaluate.py recipes/eval-tiny.yaml model=Qwen/Qwen2.5-0.5B-Instruct mgente=data/sample steps=grid
    python eval/evaluate.py recipes/eval.yaml runs=runs/sft langs=it,de shots=4 backend=vllm
    python eval/evaluate.py recipes/eval-tiny.yaml runs=runs/sft judge.judge=lexical   # one setting of one step
    python eval/evaluate.py recipes/eval.yaml runs=runs/sft backend=vllm shard=0/4   # worker 0 of 4 (+ 1/4 ...)
    python eval/evaluate.py recipes/eval.yaml runs=runs/sft backend=vllm shard=merge # results from the cache

Every setting is a recipe key, given as ``key=value`` or ``--key value``; ``--help`` lists them all. A recipe
with ``steps: [grid, judge, xcomet, attribution, templated, report]`` runs each of them in order
(gnt/pipeline/), skipping those whose files are complete; a recipe without ``steps`` runs the grid sweep only.
Results go to ``out_dir`` (layout: gnt/filenames.py); a rerun only computes what is missing. ``shard=i/n``
workers share one ``out_dir`` (one filesystem) and run the grid only; the last one to finish merges, or run
shard=merge. Exit status 2 on bad input, 3 when the evaluated rows leak into training data, 1 when a step fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gnt.cli.command import Call, Command

SUMMARY_LINE = "evaluate the base model and every checkpoint over the prompt grid (and the recipe's later steps)"


def _settings() -> tuple[type, ...]:
    from gnt.evaluation.config import EvalConfig
    from gnt.pipeline.keys import PipelineKeys

    return (EvalConfig, PipelineKeys)


def pipeline_of(call: Call) -> Any:
    """The pipeline a resolved evaluation command line asks for, every step's settings checked."""
    from gnt.evaluation.config import EvalConfig, eval_config
    from gnt.pipeline import build_pipeline
    from gnt.pipeline.keys import PipelineKeys

    config = eval_config(call.owned(EvalConfig))
    config.recipe = call.recipe.path
    return build_pipeline(config, call.build(PipelineKeys), recipe=call.recipe.path, given=call.where)


def load_pipeline(argv: Sequence[str]) -> Any:
    """The pipeline of an ``eval/evaluate.py`` command line (None when it asked for ``--help``)."""
    call = COMMAND.call(argv)
    return None if call is None else pipeline_of(call)


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "null" if value is None else str(value)


def load_eval_config(recipe: str | Path | None = None, overrides: Iterable[tuple[str, Any]] = (), **keys: Any) -> Any:
    """The sweep's config of the command line ``eval/evaluate.py [RECIPE] key=value ...``, each of ``overrides``
    and then ``keys`` one ``key=value`` word: resolved and checked by the command users run, so a test, a
    benchmark or a script cannot resolve a recipe another way (a ``None`` key is left out)."""
    argv = [] if recipe is None else [str(recipe)]
    argv += [f"{key}={_word(value)}" for key, value in [*overrides, *keys.items()] if value is not None]
    return load_pipeline(argv).config


def _run(call: Call) -> None:
    from gnt.filenames import SUMMARY

    pipeline = pipeline_of(call)
    pipeline.run()
    summary = pipeline.out / SUMMARY
    if summary.is_file():
        print(f"results: {summary}")
    else:  # a shard whose siblings are still generating: nothing merged yet
        print(f"shard {pipeline.config.shard} done; {summary} is written when the last shard finishes (or by "
              "shard=merge)")


COMMAND = Command(
    name="eval", script="eval/evaluate.py", line=SUMMARY_LINE, settings=_settings, run=_run, summary=__doc__ or "",
    recipe="an evaluation recipe (recipes/eval*.yaml): the sweep's keys, steps and each step's settings",
    exclude=("recipe",), exits={OSError: 1},
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)

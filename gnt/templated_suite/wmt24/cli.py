"""``python eval/templated.py wmt24 TXT_TS [RECIPE] [key=value ...]``: the WMT24 gender-resolution suite.

    python eval/templated.py wmt24 PATH/txt-ts lang=es out=OUT                     # every WMT24 system's outputs
    python eval/templated.py wmt24 PATH/txt-ts out=OUT systems=GPT-4,ONLINE-W      # some of them
    python eval/templated.py wmt24 PATH/txt-ts out=OUT outputs=mine.tsv name=mine  # seg_id<TAB>translation
    python eval/templated.py wmt24 PATH/txt-ts recipes/eval-smollm.yaml run=runs/sft out=OUT   # + our models

The subject is the suite's ``txt-ts`` folder; everything else is a key, as in every command (``--lang es`` and the
other old flags are the same keys written as ``--key value``). Our base model and checkpoints (``run=``,
``adapter=``, ``model=``) translate the suite through the sweep's backends and cache; the evaluation keys of the
recipe and the command line (backend, batch size, max_new_tokens...) apply to them. Bad input exits 2 with a
located message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from gnt.data.errors import DataError, DataErrors
from gnt.evaluation.bootstrap import DEFAULT_ALPHA, DEFAULT_SAMPLES, DEFAULT_SEED
from gnt.evaluation.cli import EvalCommand, EvalTargets, command_help, eval_main, parse_eval_command
from gnt.recipe import RecipeError, RecipeSchema

PROG = "eval/templated.py wmt24"
SUMMARY = "Score the WMT24 gender-resolution test suite: the WMT24 systems, an outputs file, our models."
NOT_MODEL_KEYS = {"out_dir", "progress", "bootstrap_samples", "bootstrap_seed", "alpha"}
"""Evaluation keys that also apply when no model of ours is scored (where results go, how intervals are drawn)."""


@dataclass
class Wmt24Keys:
    """The suite's own keys (what to score and how); ``out`` and the bootstrap keys are the evaluation's."""

    lang: str = field(default="es", metadata={"help": "target language of the en-xx direction"})
    systems: str | None = field(default=None, metadata={
        "help": "comma-separated WMT24 systems to score (null: every system with outputs; none: none)"})
    outputs: str | None = field(default=None, metadata={"help": "a TSV of seg_id<TAB>translation of another system"})
    name: str = field(default="outputs", metadata={"help": "the system name of the outputs file"})
    limit: int | None = field(default=None, metadata={
        "help": "score at most N segments, spread over the template shapes"})
    plots: bool = field(default=True, metadata={"help": "draw the ranking figure"})


def _classes() -> tuple[type, ...]:
    from gnt.evaluation.config import EvalConfig
    from gnt.evaluation.steps import PipelineKeys
    from gnt.templated_suite.run import SuiteConfig

    return (Wmt24Keys, SuiteConfig, EvalConfig, PipelineKeys)


def _old_spellings(words: list[str]) -> list[str]:
    """The flags the command had before every setting was a key: ``--recipe F`` (the positional recipe),
    ``--no-plots`` and ``--bootstrap N`` (``bootstrap_samples``)."""
    out: list[str] = []
    recipe: list[str] = []
    tokens = iter(words)
    for word in tokens:
        if word == "--recipe":
            recipe.append(next(tokens, ""))
        elif word.startswith("--recipe="):
            recipe.append(word.split("=", 1)[1])
        elif word in ("--no-plots", "--no_plots"):
            out.append("plots=false")
        elif word == "--bootstrap":
            out += ["--bootstrap_samples", next(tokens, "")]
        elif word.startswith(("--bootstrap=", "bootstrap=")):
            out.append("bootstrap_samples=" + word.split("=", 1)[1])
        else:
            out.append(word)
    return recipe + out


def _systems(value: str | None) -> list[str] | None:
    if value is None:
        return None
    if value.strip().lower() == "none":
        return []
    return [s.strip() for s in value.split(",") if s.strip()]


def main(argv: list[str]) -> int:
    words = list(argv)
    if any(word in ("-h", "--help") for word in words):
        schema = RecipeSchema.from_dataclasses([EvalTargets, *_classes()])
        print(command_help(f"{PROG} TXT_TS", SUMMARY, schema).replace(
            "positional:\n", "positional:\n  TXT_TS\n      the WMT24 txt-ts folder (documents/, sources/, system-outputs/)\n"))
        return 0

    def prepare() -> tuple[str, EvalCommand] | None:
        if not words or words[0].startswith("-") or "=" in words[0] or words[0].endswith((".yaml", ".yml")):
            raise RecipeError(f"give the WMT24 txt-ts folder first\nusage: {PROG} TXT_TS [RECIPE] [key=value ...]")
        command = parse_eval_command(_old_spellings(words[1:]), _classes(), prog=PROG, summary=SUMMARY)
        return None if command is None else (words[0], command)

    def run(prepared: tuple[str, EvalCommand]) -> Path:
        from gnt.evaluation.config import EvalConfig
        from gnt.evaluation.discovery import discover_models
        from gnt.templated_suite.run import SuiteConfig, load_config
        from gnt.templated_suite.wmt24.run import Wmt24Options, run_wmt24

        root, command = prepared
        keys = Wmt24Keys(**command.values(Wmt24Keys))
        if keys.limit is not None and keys.limit < 1:
            raise RecipeError("limit must be positive")
        given = command.values(EvalConfig)
        wants_models = bool(given.get("runs") or given.get("adapters") or given.get("model"))
        evaluation, models = None, []
        if wants_models:
            _, evaluation = load_config(None, [*command.values(SuiteConfig).items(), *given.items()])
            evaluation.recipe = command.recipe
            models = discover_models(evaluation.runs, evaluation.adapters, evaluation.model, evaluation.include_base)
        else:
            own = {*Wmt24Keys.__dataclass_fields__, *EvalTargets.__dataclass_fields__, *NOT_MODEL_KEYS}
            model_keys = sorted(key for key, entry in command.where if not entry and key not in own)
            if model_keys:
                raise RecipeError(f"evaluation keys ({', '.join(model_keys)}) only apply with run=, adapter= or model=")
        options = Wmt24Options(
            root=root, lang=keys.lang, out=given.get("out_dir", EvalConfig.__dataclass_fields__["out_dir"].default), systems=_systems(keys.systems),
            outputs=keys.outputs, outputs_name=keys.name, limit=keys.limit,
            bootstrap_samples=given.get("bootstrap_samples", DEFAULT_SAMPLES),
            bootstrap_seed=given.get("bootstrap_seed", DEFAULT_SEED), alpha=given.get("alpha", DEFAULT_ALPHA),
            plots=keys.plots,
        )
        return run_wmt24(options, evaluation=evaluation, models=models)

    logging.getLogger("gnt").setLevel(logging.INFO)
    from gnt.evaluation.sweep import GenerationFailure

    return eval_main(prepare, run, usage_errors=(RecipeError, DataError, DataErrors), failures=(GenerationFailure,))

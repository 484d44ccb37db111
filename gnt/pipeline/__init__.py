"""One command for the whole post-training evaluation: the steps an evaluation recipe names, run in order (the
user-facing description: docs/evaluation-pipeline.md).

    steps: [grid, judge, templated, attribution, report]
    judge: {judge: lexical}                                 # judge recipe keys (or recipe: recipes/judge-tiny.yaml)
    templated: {pairs_per_lang: 6, grid_shots: 0}           # suite keys, and evaluation keys for the suite only
    attribution: {models: [last], cells: [it/G+S/4], max_rows: 2}
    report: {wandb: true}                                   # also log into each evaluated run's W&B run

``gnt eval RECIPE runs=runs/sft`` runs those steps over the base model and every checkpoint of the runs. Each
step is a :class:`gnt.results.step.Step` that its own package registers (:mod:`gnt.pipeline.registry`); its
settings are its own command's config and its run is the function that command calls, so the pipeline adds
ordering and resumption, not a second implementation. A step is skipped when its files are complete (each step
says what that means, in its ``step`` module), so an interrupted evaluation resumes where it stopped and a
finished one costs seconds.

A recipe without ``steps`` runs the grid only. A sharded worker (``shard=i/n``) runs the grid only: the later
steps read the merged results.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from gnt.evaluation.config import EvalConfig
from gnt.output_folder import check_output_folder, claim_output_folder
from gnt.pipeline.keys import DEFAULT_STEPS, STEP_SETTINGS, STEPS, PipelineKeys
from gnt.pipeline.registry import step_of
from gnt.recipe import RecipeError, RecipeSchema
from gnt.results.folder import ResultsFolder


class PipelineError(RuntimeError):
    """A step failed (its own error was printed); the later steps did not run."""

    exit_code = 1


# ------------------------------------------------------------------------------------------------ step settings
def _recipe_lines(path: str | None) -> dict[tuple[str, str], int]:
    """The line of each entry of each top-level mapping and list of a recipe (``(judge, judge)`` → 12)."""
    if path is None or not Path(path).is_file():
        return {}
    try:
        root = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}  # the recipe loader has already reported malformed YAML
    lines: dict[tuple[str, str], int] = {}
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            lines[(str(key.value), "")] = key.start_mark.line + 1
            if isinstance(value, yaml.MappingNode):
                items = [(k, k.value) for k, _ in value.value]
            elif isinstance(value, yaml.SequenceNode):
                items = [(v, v.value) for v in value.value if isinstance(v, yaml.ScalarNode)]
            else:
                items = []
            for node, text in items:
                lines[(str(key.value), str(text))] = node.start_mark.line + 1
    return lines


def _where(recipe: str | None, lines: dict[tuple[str, str], int], given: Mapping[tuple[str, str], str],
           key: str, entry: str) -> str:
    for place in ((key, entry), (key, "")):
        if place in given:
            return given[place]
    line = lines.get((key, entry)) or lines.get((key, ""))
    return f"{recipe}:{line}" if recipe and line else f"{recipe or 'recipe'}: {key}"


def check_steps(steps: Iterable[str], where: Callable[[str], str]) -> list[str]:
    """The step names, checked: an unknown one fails naming the closest step; a repeated one fails too."""
    names = [str(s) for s in steps] or list(DEFAULT_STEPS)
    for name in names:
        if name not in STEPS:
            close = difflib.get_close_matches(name, STEPS, n=1, cutoff=0.5)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise RecipeError(f"{where(name)}: unknown step '{name}'.{hint} Steps: {', '.join(STEPS)}.")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise RecipeError(f"{where(repeated[0])}: step '{repeated[0]}' is listed twice")
    return names


def step_schema(name: str) -> RecipeSchema:
    """The valid settings of one step: its command's keys, less those the pipeline sets (each with a hint)."""
    step = step_of(name)
    schema = RecipeSchema.from_dataclasses(list(step.settings))
    for key, hint in step.not_settings.items():
        schema.keys.pop(key, None)
        schema.elsewhere[key] = hint
    schema.aliases = {old: new for old, new in schema.aliases.items() if new in schema.keys}
    return schema


def check_settings(step: str, settings: Any, where: Callable[[str], str]) -> dict[str, Any]:
    """One step's settings with canonical names and coerced values; an unknown key names the closest valid keys."""
    if not isinstance(settings, dict):
        raise RecipeError(f"{where('')}: {step}: the settings of a step are a mapping of keys to values")
    schema = step_schema(step)
    checked: dict[str, Any] = {}
    for raw_key, value in settings.items():
        key = schema.canonical(str(raw_key), f"{where(str(raw_key))}: {step} setting")
        checked[key] = schema.coerce(key, value, f"{where(str(raw_key))}: {step}")
    return checked


# ------------------------------------------------------------------------------------------------ the pipeline
@dataclass
class StepOutcome:
    """What one step did: ``ran`` or ``skipped`` (and why), and how long it took."""

    step: str
    status: str
    seconds: float
    detail: str = ""

    def line(self) -> str:
        return f"step {self.step}: {self.status} in {self.seconds:.1f} s" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Pipeline:
    """The steps of one evaluation, with the sweep's config and each step's config (built from its settings)."""

    config: EvalConfig
    steps: list[str]
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def out(self) -> Path:
        return Path(self.config.out_dir)

    @cached_property
    def models(self) -> list[str]:
        """The model folders of this evaluation: the base model(s), then every checkpoint, as the sweep names them."""
        from gnt.evaluation.discovery import discover_models

        config = self.config
        return [m.name for m in discover_models(config.runs, config.adapters, config.model, config.include_base)]

    @property
    def folder(self) -> ResultsFolder:
        return ResultsFolder(self.out, tuple(self.models))

    def step_config(self, name: str) -> Any:
        """The config the step ``name`` runs with: its settings over the evaluation's own keys."""
        return step_of(name).config(dict(self.settings.get(name, {})), self.config)

    def run(self, say: Callable[[str], None] = print) -> list[StepOutcome]:
        """Run every step in order, skipping complete ones; one line per step. A failing step stops the rest."""
        from gnt.evaluation.config import Shard, parse_shard

        steps = self.steps
        if isinstance(parse_shard(self.config.shard), Shard) and steps != ["grid"]:
            say(f"shard {self.config.shard}: this worker runs the grid only; the other steps read the merged results")
            steps = [s for s in steps if s == "grid"]
        outcomes = []
        claim_output_folder(self.out, "results", "out_dir")  # new, empty or a results folder (gnt.output_folder)
        for name in steps:
            started = time.perf_counter()
            step, config = step_of(name), self.step_config(name)
            done = step.complete(config, self.folder)
            if done is None:
                step.run(config, self.folder)
                outcome = StepOutcome(name, "ran", time.perf_counter() - started)
            else:
                step.skipped(config, self.folder)
                outcome = StepOutcome(name, "skipped", time.perf_counter() - started, done)
            say(outcome.line())
            outcomes.append(outcome)
        return outcomes


def build_pipeline(config: EvalConfig, keys: PipelineKeys, *, recipe: str | None = None,
                   given: Mapping[tuple[str, str], str] | None = None) -> Pipeline:
    """Check the steps and their settings before anything runs; errors name the recipe line or the override."""
    lines = _recipe_lines(recipe)
    given_at: Mapping[tuple[str, str], str] = given or {}

    def where(step: str) -> Callable[[str], str]:
        return lambda key: _where(recipe, lines, given_at, step, key)

    steps = check_steps(keys.steps, where("steps"))
    settings = {step: check_settings(step, getattr(keys, step), where(step)) for step in STEP_SETTINGS}
    pipeline = Pipeline(config, steps, settings)
    worker = parse_shard_is_worker(config.shard)  # a shard worker runs the grid only: the rest is the merge's
    for name in steps:  # a step whose own recipe file or keys do not hold together fails now, not after the sweep
        step_config = pipeline.step_config(name)
        if not worker or name == "grid":
            step_of(name).check(step_config, pipeline)
    check_output_folder(config.out_dir, "results", "out_dir")
    check_grid_results(pipeline)
    return pipeline


READS_THE_GRID = ("judge", "xcomet", "attribution", "report")
"""Steps that work on the grid sweep's model folders."""


def check_grid_results(pipeline: Pipeline) -> None:
    """Steps that read the grid's results, without the grid among the steps, need those results already there."""
    from gnt.results.folder import model_names

    readers = [name for name in pipeline.steps if name in READS_THE_GRID]
    if not readers or "grid" in pipeline.steps or parse_shard_is_worker(pipeline.config.shard):
        return
    if not pipeline.out.is_dir() or not model_names(pipeline.out):
        raise RecipeError(f"steps {', '.join(readers)} read the grid sweep's results, and {pipeline.out} holds none: "
                          "add grid to steps (steps=grid," + ",".join(readers) + ") or point out_dir at an evaluated "
                          "results folder")


def parse_shard_is_worker(shard: Any) -> bool:
    from gnt.evaluation.config import Shard, parse_shard

    return isinstance(parse_shard(shard), Shard)


__all__ = ["Pipeline", "PipelineError", "StepOutcome", "build_pipeline"]

"""One command for the whole post-training evaluation: the steps an evaluation recipe names, run in order (the
user-facing description: docs/evaluation-pipeline.md).

    steps: [grid, judge, templated, attribution, report]
    judge: {judge: lexical}                                 # judge recipe keys (or recipe: recipes/judge-tiny.yaml)
    templated: {pairs_per_lang: 6, grid_shots: 0}           # suite keys, and evaluation keys for the suite only
    attribution: {models: [last], cells: [it/G+S/4], max_rows: 2}
    report: {wandb: true}                                   # also log into each evaluated run's W&B run

``gnt eval RECIPE run=runs/sft`` runs those steps over the base model and every checkpoint of the runs. Each step
calls the function its own command calls (the sweep, the judge, xCOMET, attribution, the templated suite, the
report), so the pipeline adds ordering and resumption, not a second implementation. A step is skipped when the
files it writes are complete, so an interrupted evaluation resumes where it stopped and a finished one costs
seconds:

- ``grid``: every model folder has its ``record.json`` (written last), with status ok and the same recipe (the
  keys that name which models are evaluated aside);
- ``judge`` / ``xcomet``: every model folder's summary counts as many rows as its ``generations.jsonl`` holds,
  and is newer than it;
- ``attribution``: every selected model has the record of each requested cell (any cell when none is named);
- ``templated``: every model has ``templated/record.json`` for the same suite and recipe, and the suite summary
  exists;
- ``report``: ``report.html`` and ``report.md`` are newer than every file of the results folder, so any step that
  rewrote a result also brings the report up to date.

A recipe without ``steps`` runs the grid only. A sharded worker (``shard=i/n``) runs the grid only: the later
steps read the merged results.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from gnt.evaluation.config import EvalConfig
from gnt.evaluation.steps import DEFAULT_STEPS, STEP_SETTINGS, STEPS, PipelineKeys
from gnt.filenames import (
    GENERATIONS,
    JUDGE_SUMMARY,
    METRICS,
    RECORD,
    REPORT_HTML,
    REPORT_MARKDOWN,
    SUMMARY,
    XCOMET_ROWS,
    XCOMET_SUMMARY,
)
from gnt.recipe import RecipeError, RecipeSchema
from gnt.report import DEFAULT_SAMPLES_PER_CELL

LAST = "last"
"""In the attribution step's ``models``: the last model of the sweep (the final checkpoint of the last run)."""

_NOT_THE_RECIPE = ("runs", "adapters", "include_base", "out_dir", "progress", "recipe", "shard")
"""EvalConfig keys that say which models a command evaluates, not how: a model's record stays valid across them."""


class PipelineError(RuntimeError):
    """A step failed (its command's own error was printed); the later steps did not run."""


# ------------------------------------------------------------------------------------------------ step settings
@dataclass
class StepRecipe:
    """A step that has its own recipe language may read a recipe file of it; its keys then override that file."""

    recipe: str | None = field(default=None, metadata={"help": "the step's own recipe file"})


@dataclass
class AttributionModels:
    """Which model folders the attribution step explains: attribution is the slowest step per model."""

    models: list[str] = field(default_factory=list, metadata={"help": "model folder names, or last; empty: all"})


@dataclass
class ReportSettings:
    """The report step's keys (eval/report.py's options)."""

    out: str | None = field(default=None, metadata={"help": "report folder (default <results>/report)"})
    samples_per_cell: int = field(default=DEFAULT_SAMPLES_PER_CELL, metadata={
        "help": "rows per cell in the sample browser"})
    bootstrap_samples: int | None = field(default=None, metadata={
        "help": "resamples of the paired tests (default: the recipe's bootstrap_samples)"})
    title: str | None = None
    judge_validation: list[str] = field(default_factory=list, metadata={"help": "judge validation reports to show"})
    wandb: bool = field(default=False, metadata={"help": "log the metrics into each evaluated run's W&B run"})
    wandb_mode: str | None = field(default=None, metadata={"choices": ("offline", "online", "disabled")})


def _step_schema(step: str) -> RecipeSchema:
    """The valid settings of one step: the config classes its own command reads (imported only when used)."""
    if step == "judge":
        from gnt.judge.config import JudgeRecipe

        return RecipeSchema.from_dataclasses([StepRecipe, JudgeRecipe])
    if step == "xcomet":
        from gnt.cli.comet import CometCli
        from gnt.comet.scorer import CometConfig

        return RecipeSchema.from_dataclasses([StepRecipe, CometConfig, CometCli])
    if step == "attribution":
        from gnt.attribution.run import AttributionConfig

        schema = RecipeSchema.from_dataclasses([AttributionModels, AttributionConfig])
        for key in ("result_dir", "out_dir"):  # one per model folder, set by the pipeline
            schema.keys.pop(key)
            schema.elsewhere[key] = "The pipeline sets it: each model folder's attribution/ (choose them with models)."
        return schema
    if step == "templated":
        from gnt.templated_suite.run import SuiteConfig

        schema = RecipeSchema.from_dataclasses([SuiteConfig, EvalConfig])
        for key in (*_NOT_THE_RECIPE, "model"):  # the suite runs on the models and results folder of the pipeline
            schema.keys.pop(key)
            schema.elsewhere[key] = "It is a key of the whole evaluation: set it at the top level of the recipe."
        return schema
    return RecipeSchema.from_dataclasses([ReportSettings])


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


def _where(recipe: str | None, lines: dict[tuple[str, str], int], given: dict[tuple[str, str], str],
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


def check_settings(step: str, settings: dict[str, Any], where: Callable[[str], str]) -> dict[str, Any]:
    """One step's settings with canonical names and coerced values; an unknown key names the closest valid keys."""
    if not isinstance(settings, dict):
        raise RecipeError(f"{where('')}: {step}: the settings of a step are a mapping of keys to values")
    schema = _step_schema(step)
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
    """The steps of one evaluation, with the sweep's config and each step's checked settings."""

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

    def folder(self, name: str) -> Path:
        from gnt.evaluation.results import model_dir

        return model_dir(self.out, name)

    def run(self, say: Callable[[str], None] = print) -> list[StepOutcome]:
        """Run every step in order, skipping complete ones; one line per step. A failing step stops the rest."""
        from gnt.evaluation.shard import Shard, parse_shard

        steps = self.steps
        if isinstance(parse_shard(self.config.shard), Shard) and steps != ["grid"]:
            say(f"shard {self.config.shard}: this worker runs the grid only; the other steps read the merged results")
            steps = [s for s in steps if s == "grid"]
        outcomes = []
        for name in steps:
            started = time.perf_counter()
            done = STEP_RUNNERS[name].complete(self)
            if done is None:
                STEP_RUNNERS[name].run(self)
                outcome = StepOutcome(name, "ran", time.perf_counter() - started)
            else:
                if STEP_RUNNERS[name].skipped is not None:
                    STEP_RUNNERS[name].skipped(self)
                outcome = StepOutcome(name, "skipped", time.perf_counter() - started, done)
            say(outcome.line())
            outcomes.append(outcome)
        return outcomes


def build_pipeline(config: EvalConfig, keys: PipelineKeys, *, recipe: str | None = None,
                   given: dict[tuple[str, str], str] | None = None) -> Pipeline:
    """Check the steps and their settings before anything runs; errors name the recipe line or the override."""
    lines = _recipe_lines(recipe)
    given = given or {}
    steps = check_steps(keys.steps, lambda name: _where(recipe, lines, given, "steps", name))
    settings = {}
    for step in STEP_SETTINGS:
        raw = getattr(keys, step)
        settings[step] = check_settings(step, raw, lambda key, step=step: _where(recipe, lines, given, step, key))
    return Pipeline(config, steps, settings)


# ------------------------------------------------------------------------------------------------ the steps
def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _newer(path: Path, than: Path) -> bool:
    return path.is_file() and than.is_file() and path.stat().st_mtime >= than.stat().st_mtime


def _selected(pipeline: Pipeline, names: Iterable[str]) -> list[str]:
    """``models`` settings as folder names (``last`` is the sweep's last model); empty: every model."""
    chosen: list[str] = []
    for item in names:
        for name in str(item).split(","):
            name = pipeline.models[-1] if name == LAST else name.strip()
            if name and name not in chosen:
                chosen.append(name)
    return chosen or list(pipeline.models)


def _as_arguments(settings: dict[str, Any]) -> list[str]:
    """Settings as the ``key=value`` words of a command line (lists comma-joined, mappings as JSON)."""
    words = []
    for key, value in settings.items():
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        elif isinstance(value, dict):
            value = json.dumps(value)
        elif isinstance(value, bool):
            value = str(value).lower()
        words.append(f"{key}={'null' if value is None else value}")
    return words


@dataclass(frozen=True)
class StepRunner:
    """How to tell that a step's files are complete (None: not complete, else why it is) and how to run it."""

    complete: Callable[[Pipeline], str | None]
    run: Callable[[Pipeline], None]
    skipped: Callable[[Pipeline], None] | None = None
    """What a skipped step still shows (the grid's table: a rerun of a finished sweep prints its results)."""


def _recipe_of_record(recipe: dict) -> dict:
    """The keys of a recorded recipe that decide results, as JSON reads them back (tuples become lists)."""
    return {k: v for k, v in json.loads(json.dumps(recipe)).items() if k not in _NOT_THE_RECIPE}


def _grid_complete(p: Pipeline) -> str | None:
    if not (p.out / SUMMARY).is_file():
        return None
    wanted = _recipe_of_record(p.config.to_json())
    for name in p.models:
        record = _read_json(p.folder(name) / RECORD)
        if not record or record.get("status") != "ok" or _recipe_of_record(record.get("eval_recipe", {})) != wanted:
            return None
    return f"{len(p.models)} model folder(s) with their {RECORD}"


def _grid_run(p: Pipeline) -> None:
    from gnt.evaluation.sweep import run_sweep

    run_sweep(p.config)


def _grid_table(p: Pipeline) -> None:
    if p.config.progress:
        from gnt.evaluation.table import print_metrics_table

        print_metrics_table([(name, _read_json(p.folder(name) / METRICS)) for name in p.models])


def _scored_complete(p: Pipeline, names: Iterable[str], summary: str, count: Callable[[Path], int | None]) -> bool:
    for name in _selected(p, names):
        folder = p.folder(name)
        generations = folder / GENERATIONS
        if not _newer(folder / summary, generations) or count(folder) != _count_lines(generations):
            return False
    return True


def _judge_complete(p: Pipeline) -> str | None:
    def judged(folder: Path) -> int | None:
        return (_read_json(folder / JUDGE_SUMMARY) or {}).get("n_records")

    if _scored_complete(p, p.settings["judge"].get("models", ()), JUDGE_SUMMARY, judged):
        return f"every generation judged ({JUDGE_SUMMARY})"
    return None


def _judge_run(p: Pipeline) -> None:
    from gnt.cli.judge import cmd_judge
    from gnt.judge.config import load_judge_recipe

    settings = dict(p.settings["judge"])
    recipe = load_judge_recipe(settings.pop("recipe", None), list(settings.items()))
    if cmd_judge(str(p.out), recipe) != 0:
        raise PipelineError("step judge failed")


def _xcomet_complete(p: Pipeline) -> str | None:
    def scored(folder: Path) -> int | None:
        return _count_lines(folder / XCOMET_ROWS) if (folder / XCOMET_ROWS).is_file() else None

    if _scored_complete(p, p.settings["xcomet"].get("models", ()), XCOMET_SUMMARY, scored):
        return f"every generation scored ({XCOMET_ROWS})"
    return None


def _xcomet_run(p: Pipeline) -> None:
    from gnt.cli.comet import main as comet_main

    settings = dict(p.settings["xcomet"])
    recipe = settings.pop("recipe", None)
    for key in ("bootstrap_samples", "bootstrap_seed", "alpha"):  # the recipe's statistics unless the step says
        settings.setdefault(key, getattr(p.config, key))
    status = comet_main([str(p.out), *([recipe] if recipe else []), *_as_arguments(settings)])
    if status != 0:
        raise PipelineError(f"step xcomet failed with exit status {status}")


def _attribution_records(p: Pipeline, name: str) -> bool:
    from gnt.attribution.run import cell_dir_name

    settings = p.settings["attribution"]
    root = p.folder(name) / "attribution"
    method = settings.get("method", "gradxinput")
    cells = settings.get("cells") or []
    if cells:
        return all((root / cell_dir_name(cell) / method / RECORD).is_file() for cell in cells)
    return any(root.glob(f"*/{method}/{RECORD}"))


def _attribution_complete(p: Pipeline) -> str | None:
    names = _selected(p, p.settings["attribution"].get("models", ()))
    if all(_attribution_records(p, name) for name in names):
        return f"{len(names)} model(s) attributed"
    return None


def _attribution_run(p: Pipeline) -> None:
    from gnt.attribution.run import AttributionConfig, run_attribution

    settings = dict(p.settings["attribution"])
    names = _selected(p, settings.pop("models", ()))
    settings = {k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()}
    for name in names:
        if not _attribution_records(p, name):
            run_attribution(AttributionConfig(result_dir=str(p.folder(name)), **settings))


def _templated_configs(p: Pipeline) -> tuple[Any, EvalConfig]:
    """The suite's config and the evaluation config it runs with: the recipe's, with the step's keys on top."""
    from gnt.templated_suite.run import SuiteConfig

    suite_keys = {f.name for f in dataclasses.fields(SuiteConfig)}
    settings = p.settings["templated"]
    suite = SuiteConfig(**{k: v for k, v in settings.items() if k in suite_keys}).validate()
    evaluation = dataclasses.replace(p.config, **{k: v for k, v in settings.items() if k not in suite_keys})
    return suite, evaluation.validate()


def _templated_complete(p: Pipeline) -> str | None:
    from gnt.templated_suite.run import SUBDIR, SUMMARY_DIR

    if not (p.out / SUMMARY_DIR / SUMMARY).is_file():
        return None
    suite, evaluation = _templated_configs(p)
    wanted = (json.loads(json.dumps(dataclasses.asdict(suite))), _recipe_of_record(evaluation.to_json()))
    for name in p.models:
        record = _read_json(p.folder(name) / SUBDIR / RECORD)
        if not record or (record.get("suite_config"), _recipe_of_record(record.get("eval_recipe", {}))) != wanted:
            return None
    return f"{len(p.models)} model(s) with {SUBDIR}/{RECORD}"


def _templated_run(p: Pipeline) -> None:
    from gnt.templated_suite.run import run_suite

    run_suite(*_templated_configs(p))


def _report_folder(p: Pipeline) -> Path:
    out = p.settings["report"].get("out")
    return Path(out) if out else p.out / "report"


def _report_complete(p: Pipeline) -> str | None:
    folder = _report_folder(p)
    written = [folder / REPORT_HTML, folder / REPORT_MARKDOWN]
    if not all(path.is_file() for path in written):
        return None
    oldest = min(path.stat().st_mtime for path in written)
    inputs = (path for path in p.out.rglob("*") if folder not in path.parents and path.is_file())
    if any(path.stat().st_mtime > oldest for path in inputs):
        return None
    return "newer than every result"


def _report_run(p: Pipeline) -> None:
    from gnt.report.build import build_report

    settings = p.settings["report"]
    build_report(p.out, _report_folder(p),
                 samples_per_cell=settings.get("samples_per_cell", DEFAULT_SAMPLES_PER_CELL),
                 bootstrap_samples=settings.get("bootstrap_samples") or p.config.bootstrap_samples,
                 title=settings.get("title"), judge_validation=settings.get("judge_validation", []))
    if settings.get("wandb"):
        from gnt.report.wandb_log import log_eval_to_wandb

        for run in p.config.runs:
            log_eval_to_wandb(p.out, run, mode=settings.get("wandb_mode"))


STEP_RUNNERS: dict[str, StepRunner] = {
    "grid": StepRunner(_grid_complete, _grid_run, _grid_table),
    "judge": StepRunner(_judge_complete, _judge_run),
    "xcomet": StepRunner(_xcomet_complete, _xcomet_run),
    "attribution": StepRunner(_attribution_complete, _attribution_run),
    "templated": StepRunner(_templated_complete, _templated_run),
    "report": StepRunner(_report_complete, _report_run),
}


# ------------------------------------------------------------------------------------------------ entry
SUMMARY_LINE = ("Evaluate a base model and every checkpoint of training runs: the grid sweep, then the steps the "
                "recipe names (steps: [grid, judge, xcomet, attribution, templated, report]).")


def load_pipeline(argv: Sequence[str], *, prog: str = "gnt eval") -> Pipeline | None:
    """The pipeline an ``eval/evaluate.py`` command line asks for, checked; None when it asked for ``--help``."""
    from gnt.evaluation.cli import parse_eval_command
    from gnt.evaluation.config import load_eval_config

    command = parse_eval_command(argv, (EvalConfig, PipelineKeys), prog=prog, summary=SUMMARY_LINE)
    if command is None:
        return None
    config = load_eval_config(None, list(command.values(EvalConfig).items()))
    config.recipe = command.recipe
    keys = PipelineKeys(**command.values(PipelineKeys))
    return build_pipeline(config, keys, recipe=command.recipe, given=command.where)

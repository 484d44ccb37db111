"""Attribution as a step of the pipeline, on the folder driver the judge and xCOMET use.

Its settings are ``eval/attribute.py``'s keys (the pipeline sets the result folder and the output root: each
model folder's ``attribution/``) plus ``models``, which model folders are explained (attribution is the slowest
step per model: ``last`` is the sweep's last model). A model's files are complete when it holds the record of
each requested cell (any cell when none is named).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.attribution.config import DEFAULT_CONFIG, DEFAULT_SHOTS, AttributionConfig, cell_dir_name
from gnt.evaluation.driver import run_folders
from gnt.filenames import ATTRIBUTION_DIR, RECORD
from gnt.recipe import construct
from gnt.results.folder import LAST, ResultsFolder
from gnt.results.model_folder import ModelFolder
from gnt.results.part import Payload, check_part
from gnt.results.step import FolderStep

log = logging.getLogger("gnt.attribution")


@dataclass
class AttributionModels:
    """Which model folders the attribution step explains."""

    models: list[str] = field(default_factory=list, metadata={"help": "model folder names, or last; empty: all"})


@dataclass(frozen=True)
class AttributionStepConfig:
    models: tuple[str, ...]
    attribution: AttributionConfig
    """The settings of every model's run (its result folder set per model)."""


class AttributionTask:
    """Attribution plugged into the folder driver: each folder's model explained on its own (one adapter each)."""

    part = None  # one part per cell, each with its record among the files

    def __init__(self, config: AttributionConfig) -> None:
        self.config = config

    @staticmethod
    def load(folder: ModelFolder) -> list[dict]:
        return []

    @staticmethod
    def run_batch(items: list[dict]) -> None:
        return None

    def score(self, folder: ModelFolder, items: list[dict], batch: None) -> tuple[dict[str, Payload], dict, dict]:
        from gnt.attribution.run import attribution_files

        _, files, summary = attribution_files(dataclasses.replace(self.config, result_dir=str(folder.path)))
        return {f"{ATTRIBUTION_DIR}/{path}": write for path, write in files.items()}, {}, summary


def attributed(config: AttributionConfig, model_dir: Path) -> bool:
    """Whether each requested cell (any cell when none is named) has a whole part: its record and the files it
    lists, with their recorded sizes and hashes (a damaged one is reported and attributed again)."""
    root = model_dir / ATTRIBUTION_DIR
    if config.cells:
        records = [root / cell_dir_name(cell) / config.method / RECORD for cell in config.cells]
    else:
        records = sorted(root.glob(f"*/{config.method}/{RECORD}"))
    for record in records:
        found = check_part(record.parent, RECORD)
        if not found.ok:
            if found.state != "absent":
                log.warning("%s: attributed again", found.problem)
            return False
    return bool(records)


class AttributionStep(FolderStep):
    name = "attribution"
    settings = (AttributionModels, AttributionConfig)
    not_settings = dict.fromkeys(
        ("result_dir", "out_dir"), "The pipeline sets it: each model folder's attribution/ (choose them with models).")

    def config(self, settings: dict[str, Any], evaluation: Any) -> AttributionStepConfig:
        models = tuple(settings.pop("models", ()))
        return AttributionStepConfig(models, construct(AttributionConfig, settings))

    def check(self, config: AttributionStepConfig, pipeline: Any) -> None:
        """The cells must be cells of this evaluation's grid, the models its models, before the sweep runs."""
        from gnt.attribution.config import SETS, check_choices
        from gnt.attribution.spans import TARGETS
        from gnt.prompts.grid import Cell
        from gnt.recipe import RecipeError

        check_choices("attribution.targets", config.attribution.targets, TARGETS)
        check_choices("attribution.sets", config.attribution.sets, SETS)
        judged_before = "judge" in pipeline.steps[:pipeline.steps.index(self.name)] if self.name in pipeline.steps else False
        if config.attribution.balance_by in ("judged", "gnt") and "grid" in pipeline.steps and not judged_before:
            raise RecipeError(f"attribution.balance_by={config.attribution.balance_by} needs the judge's judgments: "
                              "put judge before attribution in steps, or balance_by=label")
        for cell in config.attribution.cells:
            try:
                Cell.parse(cell)
            except ValueError as exc:
                detail = "" if "unpack" in str(exc) else f": {exc}"
                raise RecipeError(f"attribution.cells: {cell!r} is not a grid cell (language/configuration/shots, "
                                  f"e.g. it/G+S/4){detail}") from None
        evaluated = pipeline.config.runs or pipeline.config.adapters  # a watcher's evaluation gains them later
        models = list(pipeline.models) if evaluated else []
        unknown = [m.strip() for item in config.models for m in str(item).split(",")
                   if m.strip() and m.strip() != LAST and m.strip() not in models]
        if unknown and evaluated:
            raise RecipeError(f"attribution.models: no model {', '.join(unknown)} in this evaluation (models: "
                              f"{', '.join(models) or 'none'}, or last)")
        if "grid" not in pipeline.steps:
            return  # the cells are checked against the results on disk when the step runs
        grid = [cell.name for cell in pipeline.config.cells()]
        requested = list(config.attribution.cells) or sorted(
            {f"{Cell.parse(c).lang}/{DEFAULT_CONFIG}/{DEFAULT_SHOTS}" for c in grid})
        missing = [cell for cell in requested if cell not in grid]
        if missing:
            given = "" if config.attribution.cells else f" (by default <lang>/{DEFAULT_CONFIG}/{DEFAULT_SHOTS})"
            raise RecipeError(f"attribution.cells{given}: {', '.join(missing)} not in this evaluation's grid (its "
                              f"cells: {', '.join(grid)}): set attribution.cells to some of them, or drop "
                              "attribution from steps")

    def complete(self, config: AttributionStepConfig, folder: ResultsFolder) -> str | None:
        names = folder.select(config.models)
        if all(attributed(config.attribution, folder.model_dir(name)) for name in names):
            return f"{len(names)} model(s) attributed"
        return None

    def run(self, config: AttributionStepConfig, folder: ResultsFolder) -> None:
        todo = [name for name in folder.select(config.models) if not attributed(config.attribution, folder.model_dir(name))]
        run_folders(AttributionTask(config.attribution), folder, todo)


STEP = AttributionStep()

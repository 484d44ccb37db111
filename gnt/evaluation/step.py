"""The grid sweep as a step of the pipeline: its files are complete when every model folder's grid part is whole
(its ``record.json``, written last, of the current format, and every file it lists with the recorded size and
hash) with status ok and the same recipe (the keys that name which models are evaluated aside), beside the results
folder's ``summary.json``. A damaged part is reported and its model evaluated again (from the cache)."""

from __future__ import annotations

import json
import logging
from typing import Any

from gnt.evaluation.config import EvalConfig
from gnt.filenames import RECORD, SUMMARY
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import GRID
from gnt.results.step import FolderStep

log = logging.getLogger("gnt.evaluation")

NOT_THE_RECIPE = ("runs", "adapters", "include_base", "out_dir", "progress", "recipe", "shard")
"""EvalConfig keys that say which models a command evaluates, not how: a model's record stays valid across them."""


def recipe_of_record(recipe: dict) -> dict:
    """The keys of a recorded recipe that decide results, as JSON reads them back (tuples become lists)."""
    return {k: v for k, v in json.loads(json.dumps(recipe)).items() if k not in NOT_THE_RECIPE}


class GridStep(FolderStep):
    """The prompt-grid sweep over the base model and every checkpoint (:func:`gnt.evaluation.sweep.run_sweep`)."""

    name = "grid"
    settings = ()

    def config(self, settings: dict[str, Any], evaluation: EvalConfig) -> EvalConfig:
        return evaluation  # the grid's keys are the recipe's own

    def complete(self, config: EvalConfig, folder: ResultsFolder) -> str | None:
        if not (folder.path / SUMMARY).is_file():
            return None
        wanted = recipe_of_record(config.to_json())
        for name in folder.models:
            found = folder.model(name).check(GRID)
            if not found.ok:
                if found.state != "absent":
                    log.warning("%s: %s: evaluated again", name, found.problem)
                return None
            record = found.record
            if record.get("status") != "ok" or recipe_of_record(record.get("eval_recipe", {})) != wanted:
                return None
        return f"{len(folder.models)} model folder(s) with their {RECORD}"

    def run(self, config: EvalConfig, folder: ResultsFolder) -> None:
        from gnt.evaluation.sweep import run_sweep

        run_sweep(config)

    def skipped(self, config: EvalConfig, folder: ResultsFolder) -> None:
        """A rerun of a finished sweep still prints its results."""
        if config.progress:
            from gnt.evaluation.table import print_metrics_table

            composed = [(name, folder.model(name).metrics()[0]) for name in folder.models]
            print_metrics_table([(name, metrics) for name, metrics in composed if metrics is not None])


STEP = GridStep()

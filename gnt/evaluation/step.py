"""The grid sweep as a step of the pipeline: its files are complete when every model folder's grid part is whole
(its ``record.json``, written last, of the current format, and every file it lists with the recorded size and
hash) with status ok, the same recipe (the keys that name which models are evaluated aside), the same adapter
weights as the folder the model is found in now and the same local base model, beside the results folder's
``summary.json``. A damaged part is reported and its model evaluated again (from the cache); so is an adapter
retrained in place, or a local base model folder whose files were replaced, whose old results would otherwise be
served under the unchanged name."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from gnt.evaluation.config import EvalConfig
from gnt.evaluation.discovery import ModelUnderTest
from gnt.filenames import RECORD, SUMMARY
from gnt.generation.identity import model_identity
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import GRID
from gnt.results.step import FolderStep

log = logging.getLogger("gnt.evaluation")

NOT_THE_RECIPE = ("runs", "adapters", "include_base", "out_dir", "progress", "recipe", "shard")
"""EvalConfig keys that say which models a command evaluates, not how: a model's record stays valid across them."""


def recipe_of_record(recipe: dict) -> dict:
    """The keys of a recorded recipe that decide results, as JSON reads them back (tuples become lists)."""
    return {k: v for k, v in json.loads(json.dumps(recipe)).items() if k not in NOT_THE_RECIPE}


def weights_changed(record: dict, model: ModelUnderTest | None, base_ids: dict[str, str] | None = None) -> str | None:
    """Why a model's grid record was not computed from the weights found now, else None: its adapter's weights hash
    differs (or it names none where one is found, or the reverse), or its local base model folder holds other files
    (:func:`base_changed`). Compared by content, not path: a copied results folder keeps its records valid, and a
    checkpoint retrained in place does not. ``base_ids`` keeps each base model's identity for the caller, which checks
    every checkpoint of one base."""
    if model is None:
        return None
    recorded = (record.get("model") or {}).get("adapter") or {}
    found = model.adapter.weights_hash if model.adapter else None
    if recorded.get("weights_hash") != found:
        where = model.adapter.path if model.adapter else model.base_model
        return (f"its results are of adapter weights {recorded.get('weights_hash') or 'none'}, {where} holds "
                f"{found or 'none'} now")
    return base_changed(record, model.base_model, {} if base_ids is None else base_ids)


def base_changed(record: dict, base_model: str, base_ids: dict[str, str]) -> str | None:
    """Why a model's grid record was not computed from the local base model folder found now, else None: the
    record's ``base_identity`` (the base model's content identity, :func:`gnt.generation.identity.model_identity`)
    differs from the folder's now, so its weights, config or tokenizer were replaced in place. A hub id names itself;
    a record written before the identity was kept is not checked."""
    recorded = record.get("base_identity")
    if recorded is None or not Path(base_model).expanduser().is_dir():
        return None
    if base_model not in base_ids:
        base_ids[base_model] = model_identity(base_model)
    if recorded == base_ids[base_model]:
        return None
    return f"its results are of base model {recorded}, {base_model} holds {base_ids[base_model]} now"


class GridStep(FolderStep):
    """The prompt-grid sweep over the base model and every checkpoint (:func:`gnt.evaluation.sweep.run_sweep`)."""

    name = "grid"
    settings = ()

    def config(self, settings: dict[str, Any], evaluation: EvalConfig) -> EvalConfig:
        return evaluation  # the grid's keys are the recipe's own

    def complete(self, config: EvalConfig, folder: ResultsFolder) -> str | None:
        if not (folder.path / SUMMARY).is_file():
            return None
        from gnt.evaluation.driver import discover

        wanted = recipe_of_record(config.to_json())
        current = {model.name: model for model in discover(config)}
        base_ids: dict[str, str] = {}
        for name in folder.models:
            found = folder.model(name).check(GRID)
            if not found.ok:
                if found.state != "absent":
                    log.warning("%s: %s: evaluated again", name, found.problem)
                return None
            record = found.record
            if record.get("status") != "ok" or recipe_of_record(record.get("eval_recipe", {})) != wanted:
                return None
            changed = weights_changed(record, current.get(name), base_ids)
            if changed:
                log.warning("%s: %s: evaluated again", name, changed)
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

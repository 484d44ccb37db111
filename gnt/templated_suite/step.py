"""The templated sensitivity suite as a step of the pipeline: its settings are ``eval/templated.py``'s keys, the
suite's and, for the suite only, the evaluation's (batch size, token cap, bootstrap...); the models and the
results folder are the whole evaluation's. Its files are complete when every model holds ``templated/record.json``
for the same suite and recipe, and the suite's summary exists."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from typing import Any

from gnt.evaluation.config import EvalConfig
from gnt.evaluation.step import NOT_THE_RECIPE, recipe_of_record
from gnt.filenames import RECORD, SUMMARY, TEMPLATED_DIR, TEMPLATED_SUITE_DIR
from gnt.results.folder import ResultsFolder
from gnt.results.part import check_part
from gnt.results.step import FolderStep
from gnt.templated_suite.run import SuiteConfig

log = logging.getLogger("gnt.templated_suite")


@dataclass(frozen=True)
class TemplatedStepConfig:
    suite: SuiteConfig
    evaluation: EvalConfig
    """The evaluation's config with the step's evaluation keys on top."""


class TemplatedStep(FolderStep):
    name = "templated"
    settings = (SuiteConfig, EvalConfig)
    not_settings = dict.fromkeys(
        (*NOT_THE_RECIPE, "model"), "It is a key of the whole evaluation: set it at the top level of the recipe.")

    def config(self, settings: dict[str, Any], evaluation: EvalConfig) -> TemplatedStepConfig:
        suite_keys = {f.name for f in dataclasses.fields(SuiteConfig)}
        suite = SuiteConfig(**{k: v for k, v in settings.items() if k in suite_keys}).validate()
        own = dataclasses.replace(evaluation, **{k: v for k, v in settings.items() if k not in suite_keys})
        return TemplatedStepConfig(suite, own.validate())

    def complete(self, config: TemplatedStepConfig, folder: ResultsFolder) -> str | None:
        if not (folder.path / TEMPLATED_SUITE_DIR / SUMMARY).is_file():
            return None
        wanted = (json.loads(json.dumps(dataclasses.asdict(config.suite))), recipe_of_record(config.evaluation.to_json()))
        for name in folder.models:
            found = check_part(folder.model_dir(name) / TEMPLATED_DIR, RECORD)  # the part whole, file by file
            if not found.ok:
                if found.state != "absent":
                    log.warning("%s: %s: the templated suite runs again", name, found.problem)
                return None
            record = found.record
            if (record.get("suite_config"), recipe_of_record(record.get("eval_recipe", {}))) != wanted:
                return None
        return f"{len(folder.models)} model(s) with {TEMPLATED_DIR}/{RECORD}"

    def run(self, config: TemplatedStepConfig, folder: ResultsFolder) -> None:
        from gnt.templated_suite.run import run_suite

        run_suite(config.suite, config.evaluation)


STEP = TemplatedStep()

"""The judge as a step of the pipeline: its settings are ``eval/judge.py``'s keys (optionally a judge recipe file
under ``recipe``); its files are complete when every selected model folder's judge part is whole (``judge_summary.json`` and the
judgments it lists, with their recorded sizes and hashes) and was computed from the generations the folder holds."""

from __future__ import annotations

from typing import Any

from gnt.filenames import JUDGE_SUMMARY
from gnt.judge.config import JudgeRecipe, load_judge_recipe
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import JUDGE
from gnt.results.step import PartStep


class JudgeStep(PartStep):
    name = "judge"
    settings = (JudgeRecipe,)
    part = JUDGE
    done = f"every generation judged ({JUDGE_SUMMARY})"

    def config(self, settings: dict[str, Any], evaluation: Any) -> JudgeRecipe:
        from gnt.judge.run import read_validation

        config = load_judge_recipe(settings.pop("recipe", None), list(settings.items()))
        read_validation(config.validation)  # an input here: checked before the first step runs
        return config

    def run(self, config: JudgeRecipe, folder: ResultsFolder) -> None:
        from gnt.judge.run import judge_folder

        judge_folder(folder, config)


STEP = JudgeStep()

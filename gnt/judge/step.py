"""The judge as a step of the pipeline: its settings are ``eval/judge.py``'s keys (optionally a judge recipe file
under ``recipe``); its files are complete when every selected model folder's ``judge_summary.json`` counts as
many rows as its ``generations.jsonl`` holds and is newer than it."""

from __future__ import annotations

from typing import Any

from gnt.filenames import JUDGE_SUMMARY
from gnt.io import read_json_or_none
from gnt.judge.config import JudgeRecipe, load_judge_recipe
from gnt.results.folder import ResultsFolder
from gnt.results.step import FolderStep


class JudgeStep(FolderStep):
    name = "judge"
    settings = (JudgeRecipe,)

    def config(self, settings: dict[str, Any], evaluation: Any) -> JudgeRecipe:
        from gnt.judge.run import read_validation

        config = load_judge_recipe(settings.pop("recipe", None), list(settings.items()))
        read_validation(config.validation)  # an input here: checked before the first step runs
        return config

    def complete(self, config: JudgeRecipe, folder: ResultsFolder) -> str | None:
        if folder.covered(config.models, JUDGE_SUMMARY, lambda d: (read_json_or_none(d / JUDGE_SUMMARY) or {}).get("n_records")):
            return f"every generation judged ({JUDGE_SUMMARY})"
        return None

    def run(self, config: JudgeRecipe, folder: ResultsFolder) -> None:
        from gnt.judge.run import judge_folder

        judge_folder(folder, config)


STEP = JudgeStep()

"""xCOMET as a step of the pipeline: its settings are ``eval/comet.py``'s keys (the bootstrap keys default to the
evaluation recipe's); its files are complete when every selected model folder's ``xcomet.jsonl`` holds a row per
generation and its ``xcomet_summary.json`` is newer than the generations."""

from __future__ import annotations

from typing import Any

from gnt.comet.config import CometConfig
from gnt.filenames import XCOMET_ROWS, XCOMET_SUMMARY
from gnt.recipe import construct
from gnt.results.folder import ResultsFolder, count_lines
from gnt.results.step import FolderStep
from gnt.settings import bootstrap_of


class XcometStep(FolderStep):
    name = "xcomet"
    settings = (CometConfig,)

    def config(self, settings: dict[str, Any], evaluation: Any) -> CometConfig:
        return construct(CometConfig, {**bootstrap_of(evaluation), **settings}).validate()

    def check(self, config: CometConfig, pipeline: Any) -> None:
        """A comet environment that is not built and may not be built here fails now, not after the grid."""
        from gnt.comet.env import check_buildable

        check_buildable(config.xcomet_auto_install)

    def complete(self, config: CometConfig, folder: ResultsFolder) -> str | None:
        if folder.covered(config.models, XCOMET_SUMMARY, lambda d: count_lines(d / XCOMET_ROWS)):
            return f"every generation scored ({XCOMET_ROWS})"
        return None

    def run(self, config: CometConfig, folder: ResultsFolder) -> None:
        from gnt.comet.folder import score_folder

        score_folder(folder, config)


STEP = XcometStep()

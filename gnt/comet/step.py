"""xCOMET as a step of the pipeline: its settings are ``eval/comet.py``'s keys (the bootstrap keys default to the
evaluation recipe's); its files are complete when every selected model folder's xCOMET part is whole (``xcomet_summary.json`` and the
``xcomet.jsonl`` it lists, with their recorded sizes and hashes) and was computed from the folder's generations."""

from __future__ import annotations

from typing import Any

from gnt.comet.config import CometConfig
from gnt.filenames import XCOMET_ROWS
from gnt.recipe import construct
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import XCOMET
from gnt.results.step import PartStep
from gnt.settings import bootstrap_of


class XcometStep(PartStep):
    """The bootstrap keys default to the evaluation's; a comet environment that cannot be built fails early."""

    name, part = "xcomet", XCOMET
    settings = (CometConfig,)
    done = f"every generation scored ({XCOMET_ROWS})"

    def config(self, settings: dict[str, Any], evaluation: Any) -> CometConfig:
        return construct(CometConfig, {**bootstrap_of(evaluation), **settings}).validate()

    def check(self, config: CometConfig, pipeline: Any) -> None:
        """A comet environment that is not built and may not be built here fails now, not after the grid."""
        from gnt.comet.env import check_buildable

        check_buildable(config.xcomet_auto_install)

    def run(self, config: CometConfig, folder: ResultsFolder) -> None:
        from gnt.comet.folder import score_folder

        score_folder(folder, config)


STEP = XcometStep()

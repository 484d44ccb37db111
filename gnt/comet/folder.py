"""xCOMET over a results folder, on the folder driver the judge uses (:func:`gnt.evaluation.driver.run_folders`).

Every selected model folder's ``generations.jsonl`` is planned first; the items none of them has in the cache
are scored in one pass of the comet environment (XCOMET-XL loads once, not once per checkpoint), then each folder
gets xCOMET's part: ``xcomet.jsonl`` (per generation: score_matching, score_ref_g, error spans, failure) and, last,
``xcomet_summary.json`` (its record: the ``xcomet`` metric per block, composed into the folder's metrics by a
reader). It never writes another step's file.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from gnt.comet.config import CometConfig
from gnt.comet.scoring import CometCache, model_identity, plan, score_items, scored_rows
from gnt.comet.summary import summarize
from gnt.evaluation.driver import run_folders
from gnt.filenames import CACHE_DIR, GENERATIONS, XCOMET_CACHE, XCOMET_LOG, XCOMET_ROWS
from gnt.results.folder import ResultsFolder
from gnt.results.model_folder import XCOMET, ModelFolder
from gnt.results.part import Payload


class XcometTask:
    """xCOMET plugged into the folder driver: one comet pass over every folder's missing items, then each
    folder's ``xcomet.jsonl`` and summary (its part's record)."""

    part = XCOMET

    def __init__(self, config: CometConfig, cache: CometCache, log_path: Path, python: Path | None = None) -> None:
        self.config, self.cache, self.log_path, self.python = config, cache, log_path, python
        self.model_id = model_identity(config.xcomet_model)
        self.started = time.time()

    def load(self, folder: ModelFolder) -> list[dict]:
        records = folder.generations()
        plan(records, self.model_id, f"{folder.path / GENERATIONS}: record")  # a bad record fails before scoring
        return records

    def run_batch(self, items: list[dict]) -> dict[str, Any]:
        """Score what the cache lacks of every folder's items, in one pass of the comet environment."""
        _, needed = plan(items, self.model_id)
        return score_items(needed, self.config, self.cache, log_path=self.log_path, python=self.python)

    def score(self, folder: ModelFolder, records: list[dict], stats: dict[str, Any]) -> tuple[dict[str, Payload], dict, dict]:
        rows = scored_rows(plan(records, self.model_id)[0], self.cache)
        summary = summarize(rows, self.config)
        summary.update({
            "model": self.config.xcomet_model, "model_identity": self.model_id, "results": str(folder.path),
            "cache": str(self.cache.path), "scoring": {**stats, "seconds": round(time.time() - self.started, 3)},
            "config": {k: v for k, v in dataclasses.asdict(self.config).items() if k.startswith("xcomet_")},
        })
        return {XCOMET_ROWS: rows}, dict(summary), dict(summary)


def score_folder(folder: ResultsFolder, config: CometConfig, *, python: Path | None = None) -> dict[str, dict]:
    """Score the model folders ``config.models`` selects (all by default); returns each folder's summary."""
    if python is None:
        from gnt.comet.env import check_buildable

        check_buildable(config.xcomet_auto_install)  # before any folder is read
    if config.tiny:
        from gnt.comet.env import ensure_comet_env
        from gnt.comet.tiny import ensure_tiny_xcomet

        python = python or ensure_comet_env(config.xcomet_auto_install)
        config = dataclasses.replace(config, xcomet_model=str(ensure_tiny_xcomet(python=python)))
    cache = CometCache(Path(config.xcomet_cache) if config.xcomet_cache else folder.path / XCOMET_CACHE)
    task = XcometTask(config, cache, folder.path / CACHE_DIR / XCOMET_LOG, python)
    return run_folders(task, folder, folder.select(config.models))

"""xCOMET over a results folder, on the folder driver the judge uses (:func:`gnt.evaluation.driver.run_folders`).

Every selected model folder's ``generations.jsonl`` is planned first; the items none of them has in the cache
are scored in one pass of the comet environment (XCOMET-XL loads once, not once per checkpoint), then each folder
gets ``xcomet.jsonl`` (per generation: score_matching, score_ref_g, error spans, failure), its metrics' ``xcomet``
blocks (when ``update_metrics``) and, last, ``xcomet_summary.json``: a folder with a summary is complete.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gnt.comet.config import CometConfig
from gnt.comet.scoring import CometCache, Planned, model_identity, plan, score_items, scored_rows
from gnt.comet.summary import merge_into_metrics, summarize
from gnt.evaluation.driver import run_folders
from gnt.filenames import (
    CACHE_DIR,
    GENERATIONS,
    METRICS,
    XCOMET_CACHE,
    XCOMET_LOG,
    XCOMET_ROWS,
    XCOMET_SUMMARY,
)
from gnt.io import read_json, read_jsonl, write_json, write_jsonl
from gnt.results.folder import ResultsFolder


class XcometTask:
    """xCOMET plugged into the folder driver."""

    record_name = XCOMET_SUMMARY

    def __init__(self, config: CometConfig, cache: CometCache, log_path: Path, python: Path | None = None) -> None:
        self.config, self.cache, self.log_path, self.python = config, cache, log_path, python
        self.model_id = model_identity(config.xcomet_model)
        self.planned: dict[str, list[Planned]] = {}
        self.stats: dict[str, Any] = {}
        self.started = time.time()

    def load(self, name: str, folder: Path) -> list[dict]:
        records = read_jsonl(folder / GENERATIONS)
        self.planned[name] = plan(records, self.model_id, f"{folder / GENERATIONS}: record")[0]
        return records

    def run_batch(self, items: list[dict]) -> None:
        """Score what the cache lacks of every folder's items, in one pass of the comet environment."""
        _, needed = plan(items, self.model_id)
        self.stats = score_items(needed, self.config, self.cache, log_path=self.log_path, python=self.python)

    def score(self, name: str, folder: Path, records: list[dict]) -> tuple[dict[str, Callable[[Path], Any]], dict, dict]:
        rows = scored_rows(self.planned[name], self.cache)
        summary = summarize(rows, self.config)
        summary.update(
            model=self.config.xcomet_model, model_identity=self.model_id, results=str(folder),
            cache=str(self.cache.path), scoring={**self.stats, "seconds": round(time.time() - self.started, 3)},
            config={k: v for k, v in dataclasses.asdict(self.config).items() if k.startswith("xcomet_")},
        )
        files: dict[str, Callable[[Path], Any]] = {XCOMET_ROWS: lambda path: write_jsonl(path, rows)}
        if self.config.update_metrics and (folder / METRICS).is_file():
            metrics = merge_into_metrics(read_json(folder / METRICS), summary)
            files[METRICS] = lambda path: write_json(path, metrics)
        return files, summary, summary


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
    names = folder.select(config.models)
    return run_folders(task, [(name, folder.model_dir(name)) for name in names])

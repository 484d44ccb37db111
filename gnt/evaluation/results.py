"""The results layout of a sweep (what the judge, xCOMET and report steps read), and its index ``summary.json``::

    <out>/
      summary.json                         every evaluated model: kind, step, leakage, paths, headline metrics
      cache/generations.jsonl              shared content-addressed generation cache (append-only)
      base/                                the base model
        generations.jsonl                  one record per row × cell (gnt.evaluation.generation_records)
        metrics.json                       the grid's metrics per cell, per language, overall (gnt.evaluation.metrics)
        record.json                        recipe, model + adapter hash, backend, decoding, shot orders, counts,
                                           and the size and hash of each file above (written last)
        judge_summary.json, xcomet_summary.json ...   the later steps' parts (gnt.results.model_folder)
      <run name>/checkpoint-<step>/        one folder per checkpoint, same files
      <parent>/<adapter folder>/           an explicitly given adapter

A model folder is written by :class:`gnt.results.model_folder.ModelFolder` alone; this module writes the index.
"""

from __future__ import annotations

import logging
from pathlib import Path

from gnt.filenames import GENERATION_CACHE as CACHE
from gnt.filenames import GENERATIONS, METRICS, RECORD, SUMMARY
from gnt.io import file_lock, read_json, write_json
from gnt.results_schema import SUMMARY_FORMAT, Summary, SummaryEntry

log = logging.getLogger("gnt.evaluation")
#: Re-exported for the sweep, which imports the names from here.
__all__ = ["CACHE", "GENERATIONS", "METRICS", "RECORD", "SUMMARY", "SUMMARY_FORMAT", "cache_path", "load_summary",
           "model_dir", "update_summary"]


def model_dir(out_dir: str | Path, name: str) -> Path:
    return Path(out_dir) / name


def cache_path(out_dir: str | Path) -> Path:
    return Path(out_dir) / CACHE


def load_summary(out_dir: str | Path) -> Summary:
    """``summary.json``, or an empty one when it is missing or unreadable (it is an index, rebuilt by each sweep;
    the report lists the model folders themselves)."""
    path = Path(out_dir) / SUMMARY
    empty: Summary = {"format": SUMMARY_FORMAT, "cache": str(CACHE), "models": []}
    if not path.is_file():
        return empty
    try:
        summary = read_json(path)
    except (OSError, ValueError) as exc:
        log.warning("%s is unreadable (%s); starting it afresh from this sweep's models", path, exc)
        return empty
    if not isinstance(summary, dict) or not isinstance(summary.get("models"), list):
        log.warning("%s is not a summary (no list of models); starting it afresh", path)
        return empty
    known: Summary = summary  # type: ignore[assignment]  # checked above: an object with a list of models
    return known


def update_summary(out_dir: str | Path, entries: list[SummaryEntry]) -> Path:
    """Merge this sweep's model entries into ``summary.json`` (a model evaluated again replaces its entry)."""
    path = Path(out_dir) / SUMMARY
    with file_lock(path.with_name(SUMMARY + ".lock")):  # concurrent sweeps on one folder must not drop entries
        summary = load_summary(out_dir)
        fresh = {e["name"] for e in entries}
        kept = [
            e for e in summary["models"]
            if isinstance(e, dict) and e.get("name") not in fresh and (Path(out_dir) / str(e.get("record"))).is_file()
        ]
        fresh_summary: Summary = {"format": SUMMARY_FORMAT, "cache": str(CACHE), "models": kept + entries}
        write_json(path, fresh_summary)
    return path

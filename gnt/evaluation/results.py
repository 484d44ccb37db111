"""The results layout of a sweep (what the judge, xCOMET and report steps read)::

    <out>/
      summary.json                         every evaluated model: kind, step, leakage, paths, headline metrics
      cache/generations.jsonl              shared content-addressed generation cache (append-only)
      base/                                the base model
        generations.jsonl                  one record per row × cell (gnt.evaluation.generation_records)
        metrics.json                       per cell, per language, overall (gnt.evaluation.metrics)
        record.json                        recipe, model + adapter hash, backend, decoding, shot orders, counts
      <run name>/checkpoint-<step>/        one folder per checkpoint, same three files
      <parent>/<adapter folder>/           an explicitly given adapter

Each file is written atomically; a model folder is complete once its ``record.json`` exists (written last).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from gnt.bootstrap import BootstrapSettings
from gnt.filenames import GENERATION_CACHE as CACHE
from gnt.filenames import GENERATIONS, METRICS, RECORD, SUMMARY
from gnt.io import file_lock, read_json, read_jsonl, write_json
from gnt.results_schema import METRIC_SECTIONS, SUMMARY_FORMAT, EvalRecord, Metrics, Summary, SummaryEntry

log = logging.getLogger("gnt.evaluation")
#: Re-exported for the sweep, which imports the names from here.
__all__ = ["CACHE", "GENERATIONS", "METRICS", "RECORD", "SUMMARY", "SUMMARY_FORMAT", "cache_path", "headline",
           "load_generations", "load_summary", "model_dir", "recompute_metrics", "update_summary"]


def model_dir(out_dir: str | Path, name: str) -> Path:
    return Path(out_dir) / name


def cache_path(out_dir: str | Path) -> Path:
    return Path(out_dir) / CACHE


def load_generations(folder: str | Path) -> list[dict]:
    """The generation records of one model folder."""
    return read_jsonl(Path(folder) / GENERATIONS)


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
    return summary


def headline(metrics: Metrics) -> dict:
    """The few overall numbers a summary or table shows."""
    overall = metrics["overall"]
    return {
        "n": overall["n"],
        "extraction_error_rate": overall["extraction_errors"]["rate"]["value"],
        "label_accuracy_set_g": overall["label_accuracy"]["Set-G"]["value"],
        "label_accuracy_set_n": overall["label_accuracy"]["Set-N"]["value"],
        "label_macro_f1": overall["label_macro_f1"]["value"],
        "label_macro_f1_ci": overall["label_macro_f1"]["ci"],
        "preference_accuracy": ((metrics.get("preference_accuracy") or {}).get("all") or {}).get("value"),
    }


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


def recompute_metrics(
    folder: str | Path, judgments: Mapping[str, Mapping] | None = None, *, write: bool = True
) -> Metrics:
    """Recompute a model folder's ``metrics.json`` from its generations (+ judgments keyed by record ``key``).

    The judge step calls this to fill ``gnt_accuracy`` and ``coherence``. Bootstrap settings come from the folder's
    record, so intervals match the sweep's; the model name, step and leakage status are kept, and ``xcomet``
    values already written by the xCOMET step are carried over.
    """
    from gnt.evaluation.metrics import compute_metrics

    folder = Path(folder)
    record: EvalRecord = read_json(folder / RECORD)
    recipe = record.get("eval_recipe", {})
    metrics = compute_metrics(load_generations(folder), judgments, bootstrap=BootstrapSettings.of(recipe))
    old = read_json(folder / METRICS) if (folder / METRICS).is_file() else {}
    for group in METRIC_SECTIONS:
        for name, block in metrics[group].items():
            block["xcomet"] = old.get(group, {}).get(name, {}).get("xcomet")
    metrics["overall"]["xcomet"] = old.get("overall", {}).get("xcomet")
    metrics.update(model=record["model"]["name"], global_step=record.get("global_step"), leakage=record.get("leakage"))
    if write:
        write_json(folder / METRICS, metrics)
    return metrics

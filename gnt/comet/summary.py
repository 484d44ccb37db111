"""xCOMET rows summarised: means with bootstrap intervals per cell, per language and overall, in the shape of the
grid metrics (:func:`gnt.evaluation.metrics.compute_metrics`), so each block drops into the ``xcomet`` slot of the
metrics block of the same name.

System and per-cell means include the failures (scored 0.0); the ``*_scored_only`` means (extracted translations
only) are reported beside them so both readings are available, and ``n_failures`` says how many zeros went in.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from gnt.bootstrap import BootstrapSettings, block_seed, mean_ci
from gnt.filenames import METRICS
from gnt.io import read_json, write_json
from gnt.results_schema import XCOMET_SUMMARY_FORMAT as SUMMARY_FORMAT


def _mean_ci(rows: Sequence[dict], field: str, name: str, bootstrap: BootstrapSettings) -> dict:
    """Mean of ``field`` with a percentile bootstrap CI, rows resampled by (lang, id) as in the grid metrics."""
    scored = [r for r in rows if r[field] is not None]
    return mean_ci([r[field] for r in scored], [(r["lang"], r["id"]) for r in scored], bootstrap,
                   block_seed(bootstrap.bootstrap_seed, name, "xcomet"))


def _block(rows: Sequence[dict], name: str, bootstrap: BootstrapSettings) -> dict:
    """One block: means over every record (failures = 0.0), over scored records only, and per set."""
    scored = [r for r in rows if r["failure"] is None]
    block = {
        "n": len(rows),
        "n_failures": len(rows) - len(scored),
        "matching": _mean_ci(rows, "score_matching", f"{name}|m", bootstrap),
        "ref_g": _mean_ci(rows, "score_ref_g", f"{name}|g", bootstrap),
        "matching_scored_only": _mean_ci(scored, "score_matching", f"{name}|ms", bootstrap),
        "ref_g_scored_only": _mean_ci(scored, "score_ref_g", f"{name}|gs", bootstrap),
        "by_set": {},
    }
    for set_name in ("Set-G", "Set-N"):
        subset = [r for r in rows if r["set"] == set_name]
        if subset:
            block["by_set"][set_name] = {
                "n": len(subset),
                "n_failures": sum(r["failure"] is not None for r in subset),
                "matching": _mean_ci(subset, "score_matching", f"{name}|{set_name}|m", bootstrap),
                "ref_g": _mean_ci(subset, "score_ref_g", f"{name}|{set_name}|g", bootstrap),
            }
    return block


def _plain_mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return math.fsum(values) / len(values) if values else None


def summarize(rows: Sequence[dict], bootstrap: BootstrapSettings) -> dict:
    """The summary of per-generation xCOMET rows (see the module docstring)."""
    by_cell: dict[str, list] = defaultdict(list)
    by_lang: dict[str, list] = defaultdict(list)
    for row in rows:
        by_cell[row["cell"]].append(row)
        by_lang[row["lang"]].append(row)
    scored = [r for r in rows if r["failure"] is None]
    return {
        "format": SUMMARY_FORMAT,
        "n": len(rows),
        "n_failures": len(rows) - len(scored),
        "failures_by_code": dict(sorted(Counter(r["failure"] for r in rows if r["failure"]).items())),
        "system_matching": _plain_mean(r["score_matching"] for r in rows),
        "system_ref_g": _plain_mean(r["score_ref_g"] for r in rows),
        "system_matching_scored_only": _plain_mean(r["score_matching"] for r in scored),
        "system_ref_g_scored_only": _plain_mean(r["score_ref_g"] for r in scored),
        "per_cell": {
            cell: {
                "matching": _plain_mean(r["score_matching"] for r in rs),
                "ref_g": _plain_mean(r["score_ref_g"] for r in rs),
                "n": len(rs),
                "n_failures": sum(r["failure"] is not None for r in rs),
            }
            for cell, rs in sorted(by_cell.items())
        },
        "cells": {cell: _block(rs, f"cell:{cell}", bootstrap) for cell, rs in sorted(by_cell.items())},
        "languages": {lang: _block(rs, f"lang:{lang}", bootstrap) for lang, rs in sorted(by_lang.items())},
        "overall": _block(rows, "overall", bootstrap),
        "bootstrap": {"samples": bootstrap.bootstrap_samples, "seed": bootstrap.bootstrap_seed, "alpha": bootstrap.alpha,
                      "method": "percentile, rows resampled"},
    }


def update_metrics(model_dir: Path, summary: dict) -> bool:
    """Fill the ``xcomet`` blocks of ``<model_dir>/metrics.json`` if it exists (atomic rewrite); True if updated.

    The judge's metric refill keeps filled ``xcomet`` blocks, so the two steps can run in either order.
    """
    path = Path(model_dir) / METRICS
    if not path.is_file():
        return False
    write_json(path, merge_into_metrics(read_json(path), summary))
    return True


def merge_into_metrics(metrics: dict, summary: dict) -> dict:
    """Fill the ``xcomet`` slot of every block of a ``metrics.json`` dict from an xCOMET summary (in place)."""
    for section in ("cells", "languages"):
        for name, block in metrics.get(section, {}).items():
            block["xcomet"] = summary.get(section, {}).get(name)
    if "overall" in metrics:
        metrics["overall"]["xcomet"] = summary.get("overall")
    return metrics

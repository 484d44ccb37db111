"""xCOMET rows summarised: plain system and per-cell means, and the ``xcomet`` metric per cell, per language and
overall with bootstrap intervals, computed as the catalog declares it (:mod:`gnt.evaluation.catalog`) in the
sections of the grid's metrics, so a reader composes it into the metrics block of the same name.

System and per-cell means include the failures (scored 0.0); the ``*_scored_only`` means (extracted translations
only) are reported beside them so both readings are available, and ``n_failures`` says how many zeros went in.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gnt.bootstrap import BootstrapSettings
from gnt.evaluation.metrics import compute_sections
from gnt.results_schema import XCOMET_SUMMARY_FORMAT as SUMMARY_FORMAT
from gnt.results_schema import XcometSummary


def _plain_mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return math.fsum(values) / len(values) if values else None


def summarize(rows: Sequence[Mapping[str, Any]], bootstrap: BootstrapSettings) -> XcometSummary:
    """The summary of per-generation xCOMET rows (see the module docstring)."""
    by_cell: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_cell[row["cell"]].append(row)
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
        **compute_sections(rows, "xcomet", bootstrap=bootstrap),
    }

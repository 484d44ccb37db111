"""Grid metrics (docs/metrics.md) from generation records, per cell and aggregated per language and overall.

Which metrics a block holds, and how each is computed, is :mod:`gnt.evaluation.catalog`'s; this module cuts the
records into blocks (each cell, each language, everything) and asks the catalog's metrics of one owner for their
values: the grid sweep computes the ``grid`` metrics, the judge the ``judge`` metrics (with its verdicts), xCOMET
the ``xcomet`` metric (from its rows). Each step writes its own blocks; a reader composes them
(:class:`gnt.results.model_folder.ModelFolder`).

Judgments map a record's ``key`` to ``{"neutral": bool, "label": ...}`` (the judge's binary neutrality). An
output with an extraction error counts as a failure everywhere; outputs without an extraction error and without
a judgment are left out of the judged metrics and counted as ``n_unjudged``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gnt.bootstrap import DEFAULT, PAIRED, BootstrapSettings, paired_bootstrap
from gnt.evaluation.block import BlockInputs, Judgments, judged_neutral
from gnt.evaluation.catalog import Owner, of_owner
from gnt.results_schema import METRICS_FORMAT, GridMetrics, MetricsBlock, Sections


def block_metrics(inputs: BlockInputs, owner: Owner) -> MetricsBlock:
    """The ``owner``'s metrics of one block (with the block's size for the grid, which owns the rows)."""
    block: MetricsBlock = {"n": inputs.n} if owner == "grid" else {}
    for metric in of_owner(owner):
        assert metric.compute is not None
        block[metric.name] = metric.compute(inputs)
    return block


def compute_sections(records: Iterable[Mapping[str, Any]], owner: Owner, *, judgments: Judgments | None = None,
                     bootstrap: BootstrapSettings = DEFAULT) -> Sections[MetricsBlock]:
    """The ``owner``'s metrics per cell, per language and overall, and the bootstrap that made their intervals."""
    rows = list(records)
    by_cell: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    by_lang: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in rows:
        by_cell[record["cell"]].append(record)
        by_lang[record["lang"]].append(record)

    def block(subset: Sequence[Mapping[str, Any]], name: str) -> MetricsBlock:
        return block_metrics(BlockInputs(subset, name, bootstrap, judgments), owner)

    return {
        "cells": {cell: block(rs, f"cell:{cell}") for cell, rs in by_cell.items()},
        "languages": {lang: block(rs, f"lang:{lang}") for lang, rs in by_lang.items()},
        "overall": block(rows, "overall"),
        "bootstrap": bootstrap.record("percentile, rows resampled"),  # type: ignore[typeddict-item]
    }


def grid_metrics(records: Iterable[Mapping[str, Any]], *, model: str, global_step: int | None,
                 leakage: Mapping[str, Any], bootstrap: BootstrapSettings = DEFAULT) -> GridMetrics:
    """A model folder's metrics.json: the grid's metrics of its generations."""
    sections = compute_sections(records, "grid", bootstrap=bootstrap)
    return {"format": METRICS_FORMAT, "model": model, "global_step": global_step, "leakage": dict(leakage),
            **sections}


def compute_metrics(records: Iterable[Mapping[str, Any]], judgments: Judgments | None = None, *,
                    bootstrap: BootstrapSettings = DEFAULT) -> dict[str, Any]:
    """The grid's and (with ``judgments``) the judge's metrics of ``records`` in one view, as a reader of a model
    folder composes them: for callers that hold records and verdicts in memory (tests, benchmarks)."""
    rows = list(records)
    view: dict[str, Any] = {"format": METRICS_FORMAT, **compute_sections(rows, "grid", bootstrap=bootstrap)}
    if judgments is not None:
        judged = compute_sections(rows, "judge", judgments=judgments, bootstrap=bootstrap)
        for name, block in judged["cells"].items():
            view["cells"][name].update(block)
        for name, block in judged["languages"].items():
            view["languages"][name].update(block)
        view["overall"].update(judged["overall"])
    view["judged"] = judgments is not None
    return view


def _paired_key(record: Mapping) -> tuple:
    return record["lang"], record["id"], record["cell"]


def paired_comparison(
    records_a: Iterable[Mapping],
    records_b: Iterable[Mapping],
    *,
    metric: str = "label",
    judgments: Mapping[str, Mapping] | None = None,
    bootstrap: BootstrapSettings = PAIRED,
) -> dict:
    """Paired bootstrap of model A − model B on the (row, cell) pairs both evaluated.

    ``metric``: ``label`` (label accuracy) or ``gnt`` (GNT accuracy; needs ``judgments`` covering both models'
    keys; pairs where either clean output is unjudged are left out). Rows are the resampling clusters.
    """
    if metric not in ("label", "gnt"):
        raise ValueError(f"metric must be 'label' or 'gnt', got {metric!r}")
    if metric == "gnt" and judgments is None:
        raise ValueError("metric 'gnt' needs judgments")

    def score(record: Mapping) -> float | None:
        if record["error"] is not None:
            return 0.0
        if metric == "label":
            return float(record["label"] == ("GENDERED" if record["set"] == "Set-G" else "NEUTRAL"))
        neutral = judged_neutral(record, judgments)
        return None if neutral is None else float(neutral == (record["set"] == "Set-N"))

    b_by_key = {_paired_key(r): r for r in records_b}
    a_scores, b_scores, clusters = [], [], []
    for record in records_a:
        other = b_by_key.get(_paired_key(record))
        if other is None:
            continue
        sa, sb = score(record), score(other)
        if sa is None or sb is None:
            continue
        a_scores.append(sa)
        b_scores.append(sb)
        clusters.append((record["lang"], record["id"]))
    result = paired_bootstrap(a_scores, b_scores, clusters=clusters, bootstrap=bootstrap)
    result["metric"] = metric
    return result

"""Grid metrics (docs/metrics.md) from generation records, per cell and aggregated per language and overall.

Per block (a cell, a language, everything):

- ``n`` records; ``extraction_errors``: count, rate (with CI) and counts by error code;
- ``label_accuracy`` per set (Set-G → GENDERED, Set-N → NEUTRAL) and over all records;
- ``label_macro_f1``: mean of the GENDERED and NEUTRAL F1 over both sets;
- ``set_g_by_gender``: Set-G label accuracy split by the source gender F / M;
- ``gnt_accuracy`` and ``coherence``: filled only when judgments are given, else null; ``xcomet``: null (filled
  by the xCOMET step).

An output with an extraction error counts as a failure everywhere (a wrong label, a non-neutral and incoherent
translation), even when a label could be read from it: errors are never silently dropped. Every value carries a
95% bootstrap CI resampled by row (:mod:`gnt.bootstrap`).

Judgments map a record's ``key`` to ``{"neutral": bool, "label": ...}`` (the judge's binary neutrality). GNT
accuracy: Set-N is correct iff the translation is judged neutral, Set-G iff judged gendered. Coherence, per
generated label: the share of outputs whose judged form agrees with the label. Outputs without an extraction error
and without a judgment are left out and counted as ``n_unjudged``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from gnt.bootstrap import (
    DEFAULT,
    PAIRED,
    BootstrapSettings,
    cluster_sums,
    estimate,
    macro_f1,
    mean_of_ratios,
    paired_bootstrap,
    ratio,
    rounded,
)
from gnt.evaluation.adequacy import ADEQUACY_THRESHOLD, record_chrf
from gnt.results_schema import METRICS_FORMAT, Metrics, MetricsBlock


def _column(records: Sequence[Mapping], key: str) -> np.ndarray:
    column = np.empty(len(records), dtype=object)
    column[:] = [r[key] for r in records]
    return column


def _judged_neutral(record: Mapping, judgments: Mapping[str, Mapping] | None) -> bool | None:
    judgment = judgments.get(record["key"]) if judgments else None
    if not judgment or judgment.get("neutral") is None:
        return None
    return bool(judgment["neutral"])


class _Block:
    """Metrics of one group of records, sharing one resampling matrix."""

    def __init__(self, records: Sequence[Mapping], name: str, bootstrap: BootstrapSettings) -> None:
        self.records = records
        self.alpha = bootstrap.alpha
        self.clusters = [(r["lang"], r["id"]) for r in records]
        self.weights = bootstrap.weights(len(set(self.clusters)), name)

    def estimate(self, columns: Sequence[np.ndarray], statistic, included: np.ndarray | None = None) -> dict:
        per_record = np.stack(columns, axis=1).astype(float) if len(self.records) else np.zeros((0, len(columns)))
        result = estimate(cluster_sums(per_record, self.clusters), statistic, self.weights, self.alpha)
        result["n"] = int(included.sum()) if included is not None else len(self.records)
        if result["n"] == 0:
            result.update(value=None, ci=None)
        return rounded(result)

    def rate(self, hits: np.ndarray, included: np.ndarray) -> dict:
        return self.estimate([hits & included, included], ratio, included)


def _block_metrics(records: Sequence[Mapping], judgments, name: str, bootstrap: BootstrapSettings) -> MetricsBlock:
    block = _Block(records, name, bootstrap)
    n = len(records)
    is_g = _column(records, "set") == "Set-G"
    is_n = ~is_g
    ok = _column(records, "error") == None  # noqa: E711 - elementwise on an object array
    labels = _column(records, "label")
    pred = np.where(ok, labels, None)
    gold = np.where(is_g, "GENDERED", "NEUTRAL")
    correct = ok & (pred == gold)
    everyone = np.ones(n, dtype=bool)
    gender = _column(records, "gender")

    f1_columns = []
    for label in ("GENDERED", "NEUTRAL"):
        predicted, actual = pred == label, gold == label
        f1_columns += [predicted & actual, predicted & ~actual, actual & ~predicted]

    result: MetricsBlock = {
        "n": n,
        "extraction_errors": {
            "n": int((~ok).sum()),
            "rate": block.rate(~ok, everyone),
            "by_code": dict(sorted(Counter(r["error"] for r in records if r["error"] is not None).items())),
        },
        "label_accuracy": {
            "Set-G": block.rate(correct, is_g),
            "Set-N": block.rate(correct, is_n),
            "all": block.rate(correct, everyone),
        },
        "label_macro_f1": block.estimate(f1_columns, macro_f1, everyone),
        "label_balanced_accuracy": block.estimate([correct & is_g, is_g, correct & is_n, is_n], mean_of_ratios,
                                                  everyone),
        "label_distribution": label_distribution(pred[ok]),
        "label_baselines": constant_label_baselines(int(is_g.sum()), int(is_n.sum())),
        "set_g_by_gender": {g: block.rate(correct, is_g & (gender == g)) for g in ("F", "M")},
        "adequacy": None,
        "gnt_accuracy": None,
        "gnt_accuracy_adequate": None,
        "coherence": None,
        "xcomet": None,
    }
    chrf = np.array([record_chrf(r) for r in records], dtype=float)
    adequate = ok & (chrf >= ADEQUACY_THRESHOLD)
    result["adequacy"] = {
        "threshold": ADEQUACY_THRESHOLD,
        "chrf": block.estimate([chrf, everyone], ratio, everyone),
        "chrf_extracted": block.estimate([np.where(ok, chrf, 0.0), ok], ratio, ok),
        "adequate": block.rate(adequate, everyone),
        "adequate_among_extracted": block.rate(adequate, ok),
        "n_inadequate": int((ok & ~adequate).sum()),
    }
    if judgments is not None:
        neutral = [_judged_neutral(r, judgments) for r in records]
        judged = np.array([v is not None for v in neutral], dtype=bool)
        is_neutral = np.array([bool(v) for v in neutral], dtype=bool)
        included = ~ok | judged  # extraction errors are failures; unjudged clean outputs are left out
        gnt_ok = ok & judged & (is_neutral == is_n)
        result["gnt_accuracy"] = {
            "Set-G": block.rate(gnt_ok, included & is_g),
            "Set-N": block.rate(gnt_ok, included & is_n),
            "all": block.rate(gnt_ok, included),
            "n_unjudged": int((ok & ~judged).sum()),
        }
        # An inadequate translation is a failure like an extraction error; adequate unjudged ones are left out.
        adequate_included = ~adequate | judged
        adequate_ok = gnt_ok & adequate
        result["gnt_accuracy_adequate"] = {
            "Set-G": block.rate(adequate_ok, adequate_included & is_g),
            "Set-N": block.rate(adequate_ok, adequate_included & is_n),
            "all": block.rate(adequate_ok, adequate_included),
            "among_adequate": {
                "Set-G": block.rate(adequate_ok, adequate & judged & is_g),
                "Set-N": block.rate(adequate_ok, adequate & judged & is_n),
            },
            "n_unjudged": int((adequate & ~judged).sum()),
        }
        coherence: dict = {}
        for label in ("GENDERED", "NEUTRAL"):
            has_label = labels == label
            agrees = ok & judged & (is_neutral == (label == "NEUTRAL"))
            coherence[label] = block.rate(agrees, has_label & included)
        coherence["n_unjudged"] = int((ok & ~judged & (labels != None)).sum())  # noqa: E711
        result["coherence"] = coherence
    return result


COLLAPSE_SHARE = 0.95
"""A model whose readable labels are at least this share one class has collapsed onto a constant label."""


def label_distribution(labels: np.ndarray) -> dict:
    """Counts and shares of the labels a model gave (outputs with an extraction error excluded), and whether they
    collapsed onto one class (``collapsed``: the majority label, or null; undefined without any label)."""
    counts = {label: int((labels == label).sum()) for label in ("GENDERED", "NEUTRAL")}
    total = sum(counts.values())
    shares = {label: (round(count / total, 6) if total else None) for label, count in counts.items()}
    majority = max(counts, key=counts.get) if total else None
    collapsed = majority if total and counts[majority] / total >= COLLAPSE_SHARE else None
    return {"counts": counts, "shares": shares, "n": total, "collapse_share": COLLAPSE_SHARE,
            "majority_share": round(counts[majority] / total, 6) if total else None,
            "collapsed": collapsed, "collapse": (1.0 if collapsed else 0.0) if total else None}


def constant_label_baselines(n_gendered: int, n_neutral: int) -> dict:
    """What the best constant label scores on a block with these gold counts: a model must beat these to have
    learnt the decision. Balanced accuracy of any constant is 0.5; accuracy and macro-F1 favour the majority."""
    total = n_gendered + n_neutral
    if not total:
        return {"balanced_accuracy": None, "accuracy": None, "macro_f1": None, "label": None}
    f1 = {"GENDERED": n_gendered / (2 * n_gendered + n_neutral) if n_gendered else 0.0,
          "NEUTRAL": n_neutral / (2 * n_neutral + n_gendered) if n_neutral else 0.0}  # (other class's F1 is 0) / 2
    best = max(f1, key=f1.get)
    return {"balanced_accuracy": 0.5, "accuracy": round(max(n_gendered, n_neutral) / total, 6),
            "macro_f1": round(f1[best], 6), "label": best}


def compute_metrics(
    records: Iterable[Mapping],
    judgments: Mapping[str, Mapping] | None = None,
    *,
    bootstrap: BootstrapSettings = DEFAULT,
) -> Metrics:
    """Metrics per cell, per language and overall from generation records (+ optional judgments by record key)."""
    records = list(records)
    by_cell: dict[str, list] = defaultdict(list)
    by_lang: dict[str, list] = defaultdict(list)
    for record in records:
        by_cell[record["cell"]].append(record)
        by_lang[record["lang"]].append(record)
    def block(rs: list, name: str) -> MetricsBlock:
        return _block_metrics(rs, judgments, name, bootstrap)

    return {
        "format": METRICS_FORMAT,
        "cells": {cell: block(rs, f"cell:{cell}") for cell, rs in by_cell.items()},
        "languages": {lang: block(rs, f"lang:{lang}") for lang, rs in by_lang.items()},
        "overall": block(records, "overall"),
        "bootstrap": bootstrap.record("percentile, rows resampled"),
        "judged": judgments is not None,
    }


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
        neutral = _judged_neutral(record, judgments)
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

"""Paired significance of a checkpoint against the base on the same rows: "did it really change, or is it noise?".

Every headline metric is a ratio of per-row sums: label accuracy on Set-N is (rows labelled NEUTRAL) / (Set-N
rows), coherence for NEUTRAL labels is (neutral translations among NEUTRAL-labelled rows) / (NEUTRAL-labelled
rows), xCOMET is (sum of segment scores) / (scored rows). Writing each row as a (numerator, denominator) pair lets
one paired bootstrap serve all of them: outputs are matched across the two models by (row id, cell), and the
*rows* are resampled jointly for both models (the pairing removes the between-sentence variance; resampling the
row, not the output, respects that one row appears in every cell of a language, as :mod:`gnt.evaluation.bootstrap`
does), and the metric is recomputed for both models on each resample. Label and GNT accuracy go through the
evaluator's own :func:`gnt.evaluation.metrics.paired_comparison` when it is installed, so the report and the
evaluator can never disagree on them. The two-sided p-value is the share of resampled differences on the other side of zero
(with the +1 correction, so it is never exactly 0), and the 95% interval is the percentile interval of the
difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gnt.evaluation.bootstrap import DEFAULT_ALPHA, DEFAULT_SAMPLES, DEFAULT_SEED
from gnt.report.collect import ModelResult

GENDERED, NEUTRAL = "GENDERED", "NEUTRAL"
#: (metric, group) pairs the report tests; the same names as the metrics files use.
RowMetric = tuple[str, str | None]


@dataclass(frozen=True)
class PairedResult:
    """Checkpoint minus base on matched rows: difference, its 95% interval, two-sided p-value, matched rows."""

    delta: float
    lo: float
    hi: float
    p_value: float
    n_pairs: int

    def marker(self, alpha: float = DEFAULT_ALPHA, higher_is_better: bool = True) -> str:
        """``▲`` (significantly better) / ``▼`` (significantly worse) at ``alpha``, else empty.

        The arrow says better or worse, not up or down: for a rate where lower is better (extraction errors) a
        significant drop is ``▲``.
        """
        if self.p_value >= alpha or self.delta == 0:
            return ""
        return "▲" if (self.delta > 0) == higher_is_better else "▼"


def _neutral(judgment: dict | None) -> bool | None:
    if not judgment or judgment.get("judge_error") or judgment.get("error"):
        return None
    value = judgment.get("neutral")
    if isinstance(value, bool):
        return value
    label = judgment.get("label")
    return None if not isinstance(label, str) or not label else label.upper() == "NEUTRAL"


def row_values(model: ModelResult, metric: RowMetric, lang: str | None) -> dict[str, tuple[float, float]]:
    """``{lang|row id|cell: (numerator, denominator)}`` of one metric for one model's rows (one language or all)."""
    name, group = metric
    judgments = model.judgment_index() if name in ("gnt_accuracy", "coherence") else {}
    xcomet = model.xcomet_index() if name == "xcomet" else {}
    out: dict[str, tuple[float, float]] = {}
    for row in model.rows_for(lang):
        pair_key = f"{row['lang']}|{row['id']}|{row['cell']}"
        row_set, label, error = row["set"], row["label"], bool(row["error"])
        expected = GENDERED if row_set == "Set-G" else NEUTRAL
        value: tuple[float, float] | None = None
        if name == "label_accuracy":
            if row_set == group:
                value = (float(not error and label == expected), 1.0)
        elif name == "gnt_accuracy":
            if row_set == group:
                neutral = None if error else _neutral(judgments.get(row["key"]))
                if error:
                    value = (0.0, 1.0)
                elif neutral is not None:
                    value = (float(neutral == (row_set == "Set-N")), 1.0)
        elif name == "coherence":
            neutral = _neutral(judgments.get(row["key"]))
            if not error and label == group and neutral is not None:
                value = (float(neutral == (label == NEUTRAL)), 1.0)
        elif name == "xcomet":
            if row["key"] in xcomet:
                value = (xcomet[row["key"]] or 0.0, 1.0)
        elif name in ("extraction_errors", "extraction_error_rate"):
            value = (float(error), 1.0)
        if value is not None:
            out[pair_key] = value
    if name == "preference_accuracy":  # pairs, not generations: one value per (row, pair kind)
        kind = group[len("kind:"):] if group and group.startswith("kind:") else None
        for pair in model.preference:
            if (lang is None or pair["lang"] == lang) and (kind is None or pair["kind"] == kind):
                out[f"{pair['lang']}|{pair['id']}|{pair['kind']}"] = (float(bool(pair["won"])), 1.0)
    return out


def paired_bootstrap(
    base: dict[str, tuple[float, float]],
    other: dict[str, tuple[float, float]],
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    chunk: int = 100,
) -> PairedResult | None:
    """Paired bootstrap of a ratio-of-sums metric over the outputs both models have; None without overlap.

    Keys are ``lang|row id|cell``; outputs of one row (all its cells) are summed into one cluster and clusters are
    resampled.
    """
    keys = sorted(set(base) & set(other))
    if not keys:
        return None
    cluster_of: dict[str, int] = {}
    ids = np.array([cluster_of.setdefault(k.rsplit("|", 1)[0], len(cluster_of)) for k in keys])
    a = np.zeros((len(cluster_of), 2))
    b = np.zeros((len(cluster_of), 2))
    np.add.at(a, ids, np.array([base[k] for k in keys], dtype=np.float64))
    np.add.at(b, ids, np.array([other[k] for k in keys], dtype=np.float64))

    def ratio(values: np.ndarray, axis: int = 0) -> np.ndarray:
        num, den = values[..., 0].sum(axis), values[..., 1].sum(axis)
        return np.divide(num, den, out=np.full(np.shape(num), np.nan), where=den > 0)

    observed = float(ratio(b) - ratio(a))
    rng = np.random.default_rng(seed)
    deltas: list[np.ndarray] = []
    n = len(cluster_of)
    for start in range(0, samples, chunk):
        index = rng.integers(0, n, size=(min(chunk, samples - start), n))
        deltas.append(ratio(b[index], axis=1) - ratio(a[index], axis=1))
    diff = np.concatenate(deltas)
    diff = diff[~np.isnan(diff)]
    if diff.size == 0 or np.isnan(observed):
        return None
    below, above = float((diff <= 0).sum()), float((diff >= 0).sum())
    p_value = min(1.0, 2 * (min(below, above) + 1) / (diff.size + 1))
    if np.allclose(diff, 0) and observed == 0:
        p_value = 1.0  # identical outputs: no difference, by construction
    lo, hi = np.percentile(diff, [2.5, 97.5])
    return PairedResult(observed, float(lo), float(hi), p_value, len(keys))


def _evaluator_compare(
    base: ModelResult, other: ModelResult, metric: RowMetric, lang: str | None, samples: int, seed: int
) -> PairedResult | None:
    """Label/GNT accuracy through the evaluator's paired test (None when it cannot answer for this metric)."""
    name, group = metric
    if name not in ("label_accuracy", "gnt_accuracy"):
        return None
    try:
        from gnt.evaluation.metrics import paired_comparison
    except ImportError:
        return None
    def rows(model: ModelResult) -> list[dict]:
        return [r for r in model.rows_for(lang) if r["set"] == group]

    mine, theirs = rows(other), rows(base)
    if not mine or not theirs:
        return None
    judgments = None
    if name == "gnt_accuracy":
        judgments = {**base.judgment_index(), **other.judgment_index()}
        if not judgments:
            return None
    result = paired_comparison(
        mine, theirs, metric="label" if name == "label_accuracy" else "gnt", judgments=judgments,
        n_boot=samples, seed=seed,
    )
    if result.get("diff") is None or result.get("ci") is None:
        return None
    return PairedResult(float(result["diff"]), float(result["ci"][0]), float(result["ci"][1]),
                        float(result["p_value"]), int(result["n"]))


def compare(
    base: ModelResult,
    other: ModelResult,
    metric: RowMetric,
    lang: str | None,
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairedResult | None:
    """Paired test of ``other`` against ``base`` for one metric and language (None when rows are missing)."""
    result = _evaluator_compare(base, other, metric, lang, samples, seed)
    if result is not None:
        return result
    return paired_bootstrap(row_values(base, metric, lang), row_values(other, metric, lang), samples=samples, seed=seed)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (the report tests many metrics × languages at once)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted

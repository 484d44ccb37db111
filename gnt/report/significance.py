"""Paired significance of a checkpoint against the base on the same rows: "did it really change, or is it noise?".

Every headline metric is a mean of one score per output: label accuracy on Set-N is the mean of "labelled
NEUTRAL" (1/0) over Set-N outputs, coherence for NEUTRAL labels the mean of "translation judged neutral" over
NEUTRAL-labelled outputs, xCOMET the mean segment score. So one paired test serves all of them: outputs are matched
across the two models by (row id, cell) and handed to the evaluator's paired bootstrap
(:func:`gnt.bootstrap.paired_bootstrap`) with the *row* as the resampling cluster (the pairing removes
the between-sentence variance; resampling the row, not the output, respects that one row appears in every cell of
a language). Label and GNT accuracy go through :func:`gnt.evaluation.metrics.paired_comparison`, so the report and
the evaluator can never disagree on them. The interval is the percentile interval at the results' ``alpha`` (the
one their metrics were computed with), and the p-value is the evaluator's two-sided bootstrap p-value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gnt import bootstrap as resampling
from gnt.bootstrap import DEFAULT_ALPHA, PAIRED, BootstrapSettings
from gnt.evaluation.adequacy import is_adequate, record_chrf
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


def row_values(model: ModelResult, metric: RowMetric, lang: str | None) -> dict[str, float]:
    """``{lang|row id|cell: score}`` of one metric for one model's outputs (one language or all); outputs the
    metric does not count (another set, an unjudged translation) are absent."""
    name, group = metric
    judgments = model.judgment_index() if name in ("gnt_accuracy", "gnt_accuracy_adequate", "coherence") else {}
    xcomet = model.xcomet_index() if name == "xcomet" else {}
    out: dict[str, float] = {}
    rows = model.rows_for(lang)
    # Balanced accuracy is the mean of the two sets' accuracies: each output weighs 1 / (2 · its set's size), so
    # the mean over all outputs of weight × correct is that statistic, and the paired test compares it as a mean.
    set_sizes = {s: sum(1 for r in rows if r["set"] == s) for s in ("Set-G", "Set-N")}
    for row in rows:
        pair_key = f"{row['lang']}|{row['id']}|{row['cell']}"
        row_set, label, error = row["set"], row["label"], bool(row["error"])
        expected = GENDERED if row_set == "Set-G" else NEUTRAL
        value: float | None = None
        if name == "label_accuracy":
            if row_set == group:
                value = float(not error and label == expected)
        elif name == "label_balanced_accuracy":
            if all(set_sizes.values()):
                weight = len(rows) / (2 * set_sizes[row_set])
                value = weight * float(not error and label == expected)
        elif name in ("gnt_accuracy", "gnt_accuracy_adequate"):
            if row_set == group:
                neutral = None if error else _neutral(judgments.get(row["key"]))
                failed = error or (name == "gnt_accuracy_adequate" and not is_adequate(record_chrf(row)))
                if failed:
                    value = 0.0
                elif neutral is not None:
                    value = float(neutral == (row_set == "Set-N"))
        elif name == "chrf":
            value = record_chrf(row)
        elif name == "adequate":
            value = float(not error and is_adequate(record_chrf(row)))
        elif name == "coherence":
            neutral = _neutral(judgments.get(row["key"]))
            if not error and label == group and neutral is not None:
                value = float(neutral == (label == NEUTRAL))
        elif name == "xcomet":
            if row["key"] in xcomet:
                value = xcomet[row["key"]] or 0.0
        elif name == "extraction_errors":
            value = float(error)
        if value is not None:
            out[pair_key] = value
    if name == "preference_accuracy":  # pairs, not generations: one value per (row, pair kind)
        kind = group[len("kind:"):] if group and group.startswith("kind:") else None
        for pair in model.preference:
            if (lang is None or pair["lang"] == lang) and (kind is None or pair["kind"] == kind):
                out[f"{pair['lang']}|{pair['id']}|{pair['kind']}"] = float(bool(pair["won"]))
    return out


def paired_bootstrap(
    base: dict[str, float],
    other: dict[str, float],
    *,
    bootstrap: BootstrapSettings = PAIRED,
) -> PairedResult | None:
    """Paired bootstrap of mean(other) − mean(base) over the outputs both models have; None without overlap.

    Keys are ``lang|row id|cell``; the outputs of one row (all its cells) form one resampling cluster.
    """
    keys = sorted(set(base) & set(other))
    if not keys:
        return None
    result = resampling.paired_bootstrap(
        [other[k] for k in keys], [base[k] for k in keys], clusters=[k.rsplit("|", 1)[0] for k in keys],
        bootstrap=bootstrap,
    )
    return _paired(result)


def _paired(result: dict) -> PairedResult | None:
    """A :class:`PairedResult` from the evaluator's paired-bootstrap dict (None when it had nothing to compare)."""
    if result.get("diff") is None or result.get("ci") is None:
        return None
    return PairedResult(float(result["diff"]), float(result["ci"][0]), float(result["ci"][1]),
                        float(result["p_value"]), int(result["n"]))


def _evaluator_compare(
    base: ModelResult, other: ModelResult, metric: RowMetric, lang: str | None, bootstrap: BootstrapSettings
) -> PairedResult | None:
    """Label/GNT accuracy through the evaluator's paired test (None when it cannot answer for this metric)."""
    name, group = metric
    if name not in ("label_accuracy", "gnt_accuracy"):
        return None
    from gnt.evaluation.metrics import paired_comparison

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
        mine, theirs, metric="label" if name == "label_accuracy" else "gnt", judgments=judgments, bootstrap=bootstrap,
    )
    return _paired(result)


def compare(
    base: ModelResult,
    other: ModelResult,
    metric: RowMetric,
    lang: str | None,
    *,
    bootstrap: BootstrapSettings = PAIRED,
) -> PairedResult | None:
    """Paired test of ``other`` against ``base`` for one metric and language (None when rows are missing)."""
    result = _evaluator_compare(base, other, metric, lang, bootstrap)
    if result is not None:
        return result
    return paired_bootstrap(row_values(base, metric, lang), row_values(other, metric, lang), bootstrap=bootstrap)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (the report tests many metrics × languages at once)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted

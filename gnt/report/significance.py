"""Paired significance of a checkpoint against the base on the same rows: "did it really change, or is it noise?".

Every headline metric is a mean of one score per output: label accuracy on Set-N is the mean of "labelled
NEUTRAL" (1/0) over Set-N outputs, coherence for NEUTRAL labels the mean of "translation judged neutral" over
NEUTRAL-labelled outputs, xCOMET the mean segment score. So one paired test serves all of them: outputs are matched
across the two models by (row id, cell) and handed to the evaluator's paired bootstrap
(:func:`gnt.bootstrap.paired_bootstrap`) with the *row* as the resampling cluster (the pairing removes
the between-sentence variance; resampling the row, not the output, respects that one row appears in every cell of
a language). Each output's score is the one the metric catalog declares for the column's test
(:func:`gnt.evaluation.catalog.scorer`), so a new metric's column is tested without a line here. The interval is the percentile interval at the results' ``alpha`` (the
one their metrics were computed with), and the p-value is the evaluator's two-sided bootstrap p-value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gnt import bootstrap as resampling
from gnt.bootstrap import DEFAULT_ALPHA, PAIRED, BootstrapSettings
from gnt.evaluation.catalog import Output, scorer
from gnt.report.collect import ModelResult

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

    def record(self) -> dict[str, Any]:
        """The result as records and ``report_data.json`` keep it: difference, 95% CI, p-value, pairs."""
        return {"delta": self.delta, "ci": [self.lo, self.hi], "p": self.p_value, "n": self.n_pairs}

    def points(self) -> str:
        """The difference and its 95% CI in points (a share × 100), signed: ``+25.0 [+0.0, +75.0]``."""
        return f"{self.delta * 100:+.1f} [{self.lo * 100:+.1f}, {self.hi * 100:+.1f}]"


def _neutral(judgment: Mapping[str, Any] | None) -> bool | None:
    if not judgment or judgment.get("judge_error") or judgment.get("error"):
        return None
    value = judgment.get("neutral")
    return value if isinstance(value, bool) else None


def row_values(model: ModelResult, metric: RowMetric, lang: str | None) -> dict[str, float]:
    """``{lang|row id|cell: score}`` of one metric for one model's outputs (one language or all): each output's
    score as the metric catalog declares it for this test (:func:`gnt.evaluation.catalog.scorer`); outputs the
    test does not count (another set, an unjudged translation) are absent."""
    name, group = metric
    out: dict[str, float] = {}
    if name == "preference_accuracy":  # pairs, not generations: one value per (row, pair kind)
        kind = group[len("kind:"):] if group and group.startswith("kind:") else None
        for pair in model.preference:
            if (lang is None or pair["lang"] == lang) and (kind is None or pair["kind"] == kind):
                out[f"{pair['lang']}|{pair['id']}|{pair['kind']}"] = float(bool(pair["won"]))
        return out
    score = scorer(name)
    if score is None:
        return out
    judgments, xcomet = model.judgment_index(), model.xcomet_index()
    rows = model.rows_for(lang)
    set_sizes = {s: sum(1 for r in rows if r["set"] == s) for s in ("Set-G", "Set-N")}
    for row in rows:
        key = row["key"]
        output = Output(row, _neutral(judgments.get(key)), (xcomet.get(key) or 0.0) if key in xcomet else None,
                        set_sizes)
        value = score(output, group)
        if value is not None:
            out[f"{row['lang']}|{row['id']}|{row['cell']}"] = value
    return out


def paired_bootstrap(
    base: dict[str, float],
    other: dict[str, float],
    *,
    bootstrap: BootstrapSettings = PAIRED,
) -> PairedResult | None:
    """Paired bootstrap of mean(other) − mean(base) over the outputs both models have; None without overlap.

    Keys are ``lang|row id|cell``; the outputs of one row (all its cells) form one resampling cluster. Two models
    scored in different cells (a base prompted with shots, checkpoints at the zero shots they were trained on) are
    matched by row instead, each row's mean over its cells against the other's.
    """
    keys = sorted(set(base) & set(other))
    if not keys:
        base, other = _by_row(base), _by_row(other)
        keys = sorted(set(base) & set(other))
        if not keys:
            return None
    result = resampling.paired_bootstrap(
        [other[k] for k in keys], [base[k] for k in keys], clusters=[_row(k) for k in keys],
        bootstrap=bootstrap,
    )
    return _paired(result)


def _row(key: str) -> str:
    """``lang|row id`` of an output key (``lang|row id|cell``) or of a row key."""
    return "|".join(key.split("|")[:2])


def _by_row(values: dict[str, float]) -> dict[str, float]:
    """Each row's mean over the cells it was scored in."""
    rows: dict[str, list[float]] = {}
    for key, value in values.items():
        rows.setdefault(_row(key), []).append(value)
    return {row: sum(vs) / len(vs) for row, vs in rows.items()}


def _paired(result: dict) -> PairedResult | None:
    """A :class:`PairedResult` from the evaluator's paired-bootstrap dict (None when it had nothing to compare)."""
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
    bootstrap: BootstrapSettings = PAIRED,
) -> PairedResult | None:
    """Paired test of ``other`` against ``base`` for one metric and language (None when rows are missing)."""
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

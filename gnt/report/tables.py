"""The report's tables as data: headline (base vs each checkpoint per language), per cell, templated suite.

Tables are built once as plain structures and rendered twice (Markdown and HTML), so the two reports cannot
disagree, and a test can compare every printed number with the metrics files. Their columns are the metric
catalog's (:mod:`gnt.evaluation.catalog`): a metric declared there with a column shows up here. Point estimates and CIs are taken
from ``metrics.json`` as written by the evaluator (never recomputed here); only the paired test against the base
is computed by the report (:mod:`gnt.report.significance`), because it needs two models at once.

Percent columns print ``value [lo, hi]`` in percent with one decimal; xCOMET prints three decimals on its own
0–1 scale; extraction errors print the count and the rate. A significant change against the base (paired
bootstrap, Holm-adjusted over the table's tests, α = 0.05) is marked with its p-value: ``▲`` when the
checkpoint is significantly *better* (higher accuracy, fewer extraction errors), ``▼`` when it is worse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gnt.bootstrap import DEFAULT_ALPHA, BootstrapSettings
from gnt.evaluation import catalog
from gnt.evaluation.catalog import Column
from gnt.report.collect import MetricRow, ModelResult, Results
from gnt.report.significance import PairedResult, compare, holm
from gnt.results_schema import TemplatedMetrics, read_stat

COLUMNS: tuple[Column, ...] = catalog.columns()
"""The headline and per-cell columns, as the metric catalog declares them (:func:`gnt.evaluation.catalog.columns`)."""


def preference_columns(results: Results) -> tuple[Column, ...]:
    """One column per held-out preference-pair kind found in the results (empty without preference scores)."""
    kinds = sorted({r.group[len("kind:"):] for r in results.metrics
                    if r.metric == "preference_accuracy" and r.group and r.group.startswith("kind:")})
    return tuple(
        Column(f"pref:{kind}", kind, ("preference_accuracy",), (f"kind:{kind}",),
               test=("preference_accuracy", f"kind:{kind}"))
        for kind in kinds
    )


@dataclass
class Cell:
    """One printed table cell with the numbers behind it (for renderers and for tests)."""

    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    count: float | None = None
    test: PairedResult | None = None
    p_adjusted: float | None = None
    kind: str = "percent"
    higher_is_better: bool = True
    alpha: float = DEFAULT_ALPHA  # the significance level of the mark

    def text(self) -> str:
        """The cell as printed: ``81.2 [78.1, 84.3]`` (+ ``▲ p=0.003`` when significant against the base)."""
        if self.value is None:
            return "—"
        if self.kind == "errors":
            count = "" if self.count is None else f"{int(self.count)} "
            text = f"{count}({self.value * 100:.1f}%)"
            if self.lo is not None and self.hi is not None:
                text += f" [{self.lo * 100:.1f}, {self.hi * 100:.1f}]"
        else:
            scale, digits = {"percent": (100.0, 1), "points": (1.0, 1)}.get(self.kind, (1.0, 3))
            text = f"{self.value * scale:.{digits}f}"
            if self.lo is not None and self.hi is not None:
                text += f" [{self.lo * scale:.{digits}f}, {self.hi * scale:.{digits}f}]"
        if self.test is not None and self.p_adjusted is not None and self.p_adjusted < self.alpha and self.test.delta:
            arrow = "▲" if (self.test.delta > 0) == self.higher_is_better else "▼"
            text += f" {arrow} p={self.p_adjusted:.3f}"
        return text


@dataclass
class HeadlineRow:
    model: str
    stage: str
    step: int | None
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class HeadlineTable:
    """Headline for one language (``lang``) or all languages (``lang=None``)."""

    lang: str | None
    columns: tuple[Column, ...]
    rows: list[HeadlineRow]

    @property
    def title(self) -> str:
        return f"en→{self.lang}" if self.lang else "All languages"


def lookup(results: Results, model: str, scope: str, lang: str | None, column: Column,
           cell: str | None = None) -> MetricRow | None:
    """The metrics row behind one column (its metric, the first of its groups that is present)."""
    candidates = [
        r for r in results.metrics
        if r.model == model and r.scope == scope and r.metric in column.metric
        and (scope != "language" or r.lang == lang) and (scope != "cell" or r.cell == cell)
    ]
    for group in column.groups:
        for row in candidates:
            if row.group == group:
                return row
    return None


def _cell(results: Results, model: ModelResult, scope: str, lang: str | None, column: Column,
          cell: str | None = None) -> Cell:
    row = lookup(results, model.name, scope, lang, column, cell)
    out = Cell(kind=column.kind, higher_is_better=column.higher_is_better)
    if row is not None:
        out.value, out.lo, out.hi = row.value, row.lo, row.hi
        if column.kind == "errors":
            count = next(
                (r.value for r in results.metrics if r.model == model.name and r.scope == scope
                 and r.metric in column.metric and r.group == "n"
                 and (scope != "language" or r.lang == lang) and (scope != "cell" or r.cell == cell)),
                None,
            )
            out.count = count
    return out


def headline_tables(results: Results, bootstrap: BootstrapSettings,
                    columns: tuple[Column, ...] = COLUMNS) -> list[HeadlineTable]:
    """One table per language plus one over all languages: base first, then each checkpoint by stage and step.

    ``bootstrap``: the settings of the paired tests (:meth:`BootstrapSettings.paired`: they resample at least
    ``DEFAULT_PAIRED_SAMPLES`` times): a bootstrap p-value cannot fall below
    1 / (resamples + 1), and Holm multiplies the smallest one by the number of tests in the table (columns ×
    checkpoints), so with 1,000 resamples a table of 50 tests could never show a significant change.
    """
    base = results.base
    tables: list[HeadlineTable] = []
    scopes: list[tuple[str, str | None]] = [("language", lang) for lang in results.languages] + [("overall", None)]
    for scope, lang in scopes:
        rows = []
        tests: list[Cell] = []
        for model in results.models:
            row = HeadlineRow(model.name, model.stage, model.global_step)
            for column in columns:
                cell = _cell(results, model, scope, lang, column)
                cell.alpha = bootstrap.alpha
                if base is not None and model is not base and column.test and cell.value is not None:
                    cell.test = compare(base, model, column.test, lang, bootstrap=bootstrap.paired())
                    if cell.test is not None and cell.test.lo == cell.test.hi == 0.0:
                        cell.test = None  # no pair differs (both models constant alike): nothing to test
                    if cell.test is not None:
                        tests.append(cell)
                row.cells[column.key] = cell
            rows.append(row)
        for cell, adjusted in zip(tests, holm([c.test.p_value for c in tests if c.test]), strict=True):
            cell.p_adjusted = adjusted
        if any(c.value is not None for r in rows for c in r.cells.values()):
            tables.append(HeadlineTable(lang, columns, rows))
    return tables


def cell_table(results: Results, columns: tuple[Column, ...] = COLUMNS) -> list[tuple[str, str, dict[str, Cell]]]:
    """``(cell, model, cells)`` for every evaluated cell and model: the fine-grained view below the headline."""
    out = []
    for cell in results.cells:
        for model in results.models:
            values = {c.key: _cell(results, model, "cell", cell.split("/")[0], c, cell) for c in columns}
            if any(v.value is not None for v in values.values()):
                out.append((cell, model.name, values))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Templated suite and judge validity: other producers' summaries, shown as small key → value tables.
# ----------------------------------------------------------------------------------------------------------------

TEMPLATED_COLUMNS = ("ΔM", "ΔF", "ΔN", "N_det", "ΔN omission", "ΔN active")


def _stat4(value: Any) -> tuple[float, float | None, float | None, int | None] | None:
    return read_stat(value)


def templated_rows(metrics: TemplatedMetrics | None) -> list[dict[str, Any]]:
    """Rows ``{"style", "lang", "ΔM", "ΔF", "ΔN", "N_det", "ΔN omission", "ΔN active", "unclassified"}`` of a templated-suite
    ``metrics.json`` (values are ``(value, lo, hi, n)``; absent ones missing).

    Reads the suite's format (gnt.templated_suite.metrics): ``styles → lang → subsets → {all, omission, active}
    → delta/N_det``.
    """
    if not isinstance(metrics, dict):
        return []
    rows: list[dict[str, Any]] = []
    for style, langs in (metrics.get("styles") or {}).items():
        for lang, lang_metrics in (langs or {}).items():
            subsets = (lang_metrics or {}).get("subsets") or {}
            block = subsets.get("all") or {}
            row: dict[str, Any] = {"style": style, "lang": lang}
            for c in ("M", "F", "N"):
                row[f"Δ{c}"] = _stat4((block.get("delta") or {}).get(c))
            row["N_det"] = _stat4(block.get("N_det"))
            for subset in ("omission", "active"):
                row[f"ΔN {subset}"] = _stat4(((subsets.get(subset) or {}).get("delta") or {}).get("N"))
            row["unclassified"] = _unclassified(block)
            rows.append({k: v for k, v in row.items() if v is not None})
    return rows


def _unclassified(block: dict) -> str | None:
    """``"72% (untranslated 23, no_form 9)"``: the outputs no class was read from, with their reasons, so a row of
    dashes (nothing classified: e.g. a base model that echoes its prompt) is explained, not a blank."""
    counts = block.get("counts") or {}
    total = sum(sum((counts.get(v) or {}).values()) for v in ("determined", "ambiguous"))
    if not total:
        return None
    unknown = sum(int((counts.get(v) or {}).get("unknown") or 0) for v in ("determined", "ambiguous"))
    reasons: dict[str, int] = {}
    for variant in ("determined", "ambiguous"):
        for reason, n in ((block.get("unknown_reasons") or {}).get(variant) or {}).items():
            reasons[reason] = reasons.get(reason, 0) + int(n)
    listed = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{100 * unknown / total:.0f}%" + (f" ({listed})" if listed else "")


def judge_validity(validation: dict) -> dict[str, Any]:
    """The few numbers that say how far to trust a judge: its identity, accuracy, macro-F1 and κ where reported.

    A validation report (gnt.judge.validation) puts these at its top level, under these names, for readers like
    this one.
    """
    out: dict[str, Any] = {}
    for label in ("judge", "format", "accuracy", "macro_f1", "kappa", "n"):
        value = validation.get(label)
        if value is None:
            continue
        if label in ("judge", "format"):
            out[label] = value if isinstance(value, str) else str(value)
        elif (stat := _stat4(value)) is not None:
            out[label] = stat[0]
    return out

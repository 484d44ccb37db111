"""How far to trust a judge: accuracy on mGeNTE references with known labels, and agreement with a gold TSV.

On references the gold label is known by construction (docs/judge.md): Ref-G of a Set-G row is CORRECTLY GENDERED (the
source states the gender the reference uses), Ref-G of a Set-N row is WRONGLY GENDERED (it genders a referent the
source leaves unknown), and every Ref-N is NEUTRAL. For MONO formats the two gendered labels fold into GENDERED.
:func:`validate_references` reports accuracy per set × reference × format (per language and over all), the
layout of the judge paper's tables. Rows whose source is a judge exemplar are left out: scoring a judge on its
own examples would flatter it.

On a user TSV of (source, translation, gold label[, lang]) :func:`validate_tsv` reports accuracy, macro-F1, the
confusion matrix and Cohen's κ in the format's label space and, because GNT accuracy only uses neutral vs
gendered, the same figures on that binary view. A judge error counts as a wrong prediction (see
:mod:`gnt.judge.agreement`) and the number of errors is reported beside the figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.data.entry import LANGUAGES, Entry
from gnt.data.errors import DataError, DataErrors
from gnt.judge.agreement import classification_report
from gnt.judge.llm_judge import JudgeItem
from gnt.judge.schema import (
    CORRECTLY_GENDERED,
    CROSS_LABELS,
    DEFAULT_FORMAT,
    GENDERED,
    MONO_LABELS,
    NEUTRAL,
    WRONGLY_GENDERED,
    JudgeFormat,
    judge_format,
    normalise_label,
    to_format_label,
)

ERROR_LABEL = "JUDGE_ERROR"
LEXICAL = "LEXICAL"
#: (set, reference) cells in the order of the paper's tables, with their 3-way gold label.
REFERENCE_CELLS: tuple[tuple[str, str, str], ...] = (
    ("Set-G", "Ref-G", CORRECTLY_GENDERED),
    ("Set-G", "Ref-N", NEUTRAL),
    ("Set-N", "Ref-G", WRONGLY_GENDERED),
    ("Set-N", "Ref-N", NEUTRAL),
)

#: Classifies judge items in one format: one label (in the format's label space) or None (judge error) per item.
Classifier = Callable[[Sequence[JudgeItem]], list[str | None]]


@dataclass(frozen=True)
class ReferenceItem:
    """One reference to judge, with the row it came from and its known 3-way label."""

    entry: Entry
    reference: str  # "Ref-G" or "Ref-N"
    gold: str

    @property
    def item(self) -> JudgeItem:
        text = self.entry.ref_g if self.reference == "Ref-G" else self.entry.ref_n[0]
        return JudgeItem(self.entry.lang, self.entry.source, text)

    @property
    def cell(self) -> str:
        return f"{self.entry.set}/{self.reference}"


def reference_items(entries: Iterable[Entry], exclude_source_keys: Iterable[str] = ()) -> list[ReferenceItem]:
    """Ref-G and (first) Ref-N of every row with its gold label, leaving out rows whose source is excluded."""
    excluded = set(exclude_source_keys)
    gold = {(s, r): g for s, r, g in REFERENCE_CELLS}
    items = []
    for entry in entries:
        if entry.source_key in excluded:
            continue
        for reference in ("Ref-G", "Ref-N"):
            items.append(ReferenceItem(entry, reference, gold[(entry.set, reference)]))
    return items


def _cell_scores(refs: Sequence[ReferenceItem], preds: Sequence[str | None], fmt: JudgeFormat) -> dict[str, Any]:
    cells: dict[str, Any] = {}
    for set_name, reference, gold3 in REFERENCE_CELLS:
        name = f"{set_name}/{reference}"
        gold = to_format_label(gold3, fmt)
        pairs = [(r, p) for r, p in zip(refs, preds, strict=True) if r.cell == name]
        correct = sum(p == gold for _, p in pairs)
        cells[name] = {
            "gold": gold,
            "n": len(pairs),
            "correct": correct,
            "errors": sum(p is None for _, p in pairs),
            "accuracy": correct / len(pairs) if pairs else None,
        }
    n = len(refs)
    correct = sum(c["correct"] for c in cells.values())
    cells["overall"] = {
        "n": n,
        "correct": correct,
        "errors": sum(p is None for p in preds),
        "accuracy": correct / n if n else None,
    }
    return cells


def validate_references(
    entries: Sequence[Entry],
    classifiers: dict[str, Classifier],
    exclude_source_keys: Iterable[str] = (),
    judge_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Accuracy per (format, language) × set × reference; ``classifiers`` maps a format name to its classifier
    (``LEXICAL`` for the lexical judge, scored like MONO-L).

    Returns a JSON-ready dict: ``results`` holds one entry per format and language (``lang`` ``all`` pools the
    languages), each with ``cells`` (``Set-G/Ref-G``, ``Set-G/Ref-N``, ``Set-N/Ref-G``, ``Set-N/Ref-N``,
    ``overall``) and the full classification report.
    """
    refs = reference_items(entries, exclude_source_keys)
    excluded = len({e.id for e in entries} - {r.entry.id for r in refs})
    results = []
    for name, classify in classifiers.items():
        fmt = judge_format("MONO-L" if name == LEXICAL else name)  # the lexical judge speaks GENDERED/NEUTRAL
        preds = classify([r.item for r in refs])
        langs = [lang for lang in LANGUAGES if any(r.entry.lang == lang for r in refs)]
        for lang in [*langs, "all"]:
            idx = [i for i, r in enumerate(refs) if lang == "all" or r.entry.lang == lang]
            sub_refs = [refs[i] for i in idx]
            sub_preds = [preds[i] for i in idx]
            gold = [to_format_label(r.gold, fmt) for r in sub_refs]
            pred = [p if p is not None else ERROR_LABEL for p in sub_preds]
            results.append(
                {
                    "format": name if name == LEXICAL else fmt.name,
                    "lang": lang,
                    "cells": _cell_scores(sub_refs, sub_preds, fmt),
                    "report": classification_report(gold, pred, fmt.labels),
                }
            )
    headline = next((r for r in results if r["lang"] == "all" and r["format"] == DEFAULT_FORMAT), None)
    headline = headline or next((r for r in results if r["lang"] == "all"), None)
    return {
        "kind": "references",
        **_headline(judge_info, headline["format"] if headline else None, headline["report"] if headline else None),
        "n_rows": len(entries),
        "excluded_exemplar_rows": excluded,
        "n_references": len(refs),
        "results": results,
    }


def _headline(judge_info: dict[str, Any] | None, fmt: str | None, report: dict[str, Any] | None) -> dict[str, Any]:
    """Top-level keys a reader (the evaluation report) finds first: who judged, in which format, how well."""
    info = dict(judge_info or {})
    return {
        "judge": str(info.get("judge_model") or info.get("kind") or "unknown"),
        "judge_info": info,
        "format": fmt,
        "accuracy": report["accuracy"] if report else None,
        "macro_f1": report["macro_f1"] if report else None,
        "kappa": report["kappa"] if report else None,
        "n": report["n"] if report else 0,
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def reference_table(report: dict[str, Any]) -> str:
    """Markdown table: one row per format × language, accuracy (%) per set × reference and overall."""
    header = "| Format | Lang | Set-G Ref-G (CG) | Set-G Ref-N (N) | Set-N Ref-G (WG) | Set-N Ref-N (N) | Overall | Errors |"
    lines = [header, "|" + "---|" * 8]
    for r in report["results"]:
        c = r["cells"]
        lines.append(
            f"| {r['format']} | {r['lang']} | "
            + " | ".join(_pct(c[name]["accuracy"]) for name in ("Set-G/Ref-G", "Set-G/Ref-N", "Set-N/Ref-G", "Set-N/Ref-N"))
            + f" | {_pct(c['overall']['accuracy'])} | {c['overall']['errors']} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- user TSV
@dataclass(frozen=True)
class GoldRow:
    line: int
    lang: str
    source: str
    translation: str
    gold: str  # normalised: one of CROSS_LABELS or GENDERED/NEUTRAL


TSV_COLUMNS = ("source", "translation", "gold")
_GOLD_ALIASES = ("gold", "label", "gold_label")


def read_gold_tsv(path: str | Path, default_lang: str | None = None) -> list[GoldRow]:
    """Read a hand-labelled TSV: header with ``source``, ``translation``, ``gold`` (or ``label``), optional ``lang``.

    Gold labels may be the CROSS labels, GENDERED/NEUTRAL, or the short forms CG/WG/N/G. Every problem is
    reported with its line and column in one :class:`DataErrors`.
    """
    from gnt.data.mgente import read_table

    path = Path(path)
    header, _ = read_table(path, ("source", "translation"))
    gold_col = next((c for c in _GOLD_ALIASES if c in header), None)
    if gold_col is None:
        raise DataError(f"missing gold column (one of {', '.join(_GOLD_ALIASES)})", path, 1)
    _, rows = read_table(path, ("source", "translation", gold_col))
    errors: list[DataError] = []
    out: list[GoldRow] = []
    for line, row in rows:
        lang = (row.get("lang") or "").strip() or (default_lang or "")
        gold = normalise_label(row[gold_col])
        row_errors = []
        if lang not in LANGUAGES:
            row_errors.append(
                DataError(f"language {lang!r} unknown or missing (a lang column or --lang); expected one of {LANGUAGES}",
                          path, line, "lang")
            )
        if gold not in (*CROSS_LABELS, GENDERED):
            row_errors.append(
                DataError(f"gold label {row[gold_col]!r} unknown; expected one of {[*CROSS_LABELS, GENDERED]} or CG/WG/N/G",
                          path, line, gold_col)
            )
        if not row["translation"].strip():
            row_errors.append(DataError("empty translation", path, line, "translation"))
        if row_errors:
            errors.extend(row_errors)
            continue
        out.append(GoldRow(line, lang, row["source"].strip(), row["translation"].strip(), gold))
    if errors:
        raise DataErrors(errors)
    if not out:
        raise DataError("no labelled rows", path)
    return out


def gold_report(
    gold_rows: Sequence[GoldRow],
    preds: Sequence[str | None],
    fmt: str | JudgeFormat,
    judge_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Figures in the format's label space and on the binary neutral-vs-gendered view, plus the error count."""
    fmt = judge_format(fmt)
    if fmt.cross and any(r.gold == GENDERED for r in gold_rows):
        raise ValueError(
            f"gold labels include GENDERED, which does not say correct or wrong: validate with a MONO format, not {fmt.name}"
        )
    gold = [to_format_label(r.gold, fmt) for r in gold_rows]
    pred = [p if p is not None else ERROR_LABEL for p in preds]
    gold_bin = [NEUTRAL if g == NEUTRAL else GENDERED for g in gold]
    pred_bin = [p if p in (NEUTRAL, ERROR_LABEL) else GENDERED for p in pred]
    labels = classification_report(gold, pred, fmt.labels)
    return {
        "kind": "gold_tsv",
        **_headline(judge_info, fmt.name, labels),
        "errors": sum(p is None for p in preds),
        "labels": labels,
        "binary": classification_report(gold_bin, pred_bin, MONO_LABELS),
    }


def validate_tsv(
    path: str | Path,
    classify: Classifier,
    fmt: str | JudgeFormat,
    default_lang: str | None = None,
    judge_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Judge every row of a gold TSV with ``classify`` and report the figures (see :func:`gold_report`)."""
    rows = read_gold_tsv(path, default_lang)
    preds = classify([JudgeItem(r.lang, r.source, r.translation) for r in rows])
    report = gold_report(rows, preds, fmt, judge_info)
    report["path"] = str(path)
    return report


def gold_summary(report: dict[str, Any]) -> str:
    """A few lines of text: accuracy, macro-F1, κ (format labels and binary) and the confusion matrix."""
    lab, binary = report["labels"], report["binary"]

    def fmt(v: float | None) -> str:
        return "–" if v is None else f"{v:.3f}"

    lines = [
        f"{report['format']} on {report['n']} rows ({report['errors']} judge errors)",
        f"  labels: accuracy {fmt(lab['accuracy'])}  macro-F1 {fmt(lab['macro_f1'])}  kappa {fmt(lab['kappa'])}",
        f"  binary: accuracy {fmt(binary['accuracy'])}  macro-F1 {fmt(binary['macro_f1'])}  kappa {fmt(binary['kappa'])}",
        "  confusion (rows gold, columns predicted):",
    ]
    matrix = lab["confusion"]
    columns = list(next(iter(matrix.values())).keys()) if matrix else []
    lines.append("    " + " | ".join(["gold \\ pred", *columns]))
    for g, row in matrix.items():
        lines.append("    " + " | ".join([g, *(str(row[c]) for c in columns)]))
    return "\n".join(lines)


def llm_classifier(judge: Any) -> Classifier:
    """Adapt an :class:`~gnt.judge.llm_judge.LLMJudge` to a :data:`Classifier` (errors become None)."""

    def classify(items: Sequence[JudgeItem]) -> list[str | None]:
        return [j.label if j.ok else None for j in judge.judge(items)]

    return classify

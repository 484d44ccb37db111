"""How far to trust a judge: accuracy on references with known labels (mGeNTE's, templated Set-N's), and agreement
with a gold TSV.

On references the gold label is known by construction (docs/judge.md): Ref-G of a Set-G row is CORRECTLY GENDERED (the
source states the gender the reference uses), Ref-G of a Set-N row is WRONGLY GENDERED (it genders a referent the
source leaves unknown), and every Ref-N is NEUTRAL. For MONO formats the two gendered labels fold into GENDERED.
:func:`validate_references` reports accuracy per set × reference × format (per language and over all), the
layout of the judge paper's tables. Rows whose source is a judge exemplar are left out: scoring a judge on its
own examples would flatter it.

On a gold file of the field (any layout :mod:`gnt.judge.gold` reads, or a folder of them) :func:`validate_tsv`
reports, overall and per language, the gold class counts, per-class precision and recall and macro-F1 with
bootstrap CIs (sources resampled), accuracy, the confusion matrix and Cohen's κ in the format's label space and,
because GNT accuracy only uses neutral vs gendered, the same on that binary view. Per-class figures come first:
gold sets of the field are very imbalanced (GENDEROUS: 34 NEUTRAL of 5,617 rows), where accuracy says little.
A judge error counts as a wrong prediction (see :mod:`gnt.judge.agreement`), as does an abstention; both are
counted beside the figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gnt.bootstrap import (
    DEFAULT,
    BootstrapSettings,
    cluster_sums,
    estimate,
    macro_f1,
    ratio,
    resampling_weights,
)
from gnt.data.entry import LANGUAGES, Entry
from gnt.data.errors import DataError
from gnt.judge.agreement import classification_report
from gnt.judge.gold import GoldRow, GoldSet, read_gold
from gnt.judge.llm_judge import JudgeItem
from gnt.judge.schema import (
    CORRECTLY_GENDERED,
    DEFAULT_FORMAT,
    GENDERED,
    MONO_LABELS,
    NEUTRAL,
    WRONGLY_GENDERED,
    JudgeFormat,
    judge_format,
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
    """Ref-G and (first) Ref-N of every row with its gold label, leaving out rows whose source is excluded.

    Templated Set-G entries are left out too: their "Ref-N" of a determined input only neutralises the adjective
    and keeps the gendered cue ("El hombre ..."), so the mGeNTE rule (every Ref-N is NEUTRAL) does not hold for
    them. Templated Set-N entries stay: an ambiguous input's Ref-N is neutral and its Ref-G gendered by
    construction, and they are most of the dev rows the stage choice reads, so the judge is validated on them too,
    except where their Ref-G is the Ref-N itself (:func:`ungendered_ref_g`).
    """
    excluded = set(exclude_source_keys)
    gold = {(s, r): g for s, r, g in REFERENCE_CELLS}
    items = []
    for entry in entries:
        if entry.source_key in excluded or templated_set_g(entry):
            continue
        for reference in ("Ref-N",) if ungendered_ref_g(entry) else ("Ref-G", "Ref-N"):
            items.append(ReferenceItem(entry, reference, gold[(entry.set, reference)]))
    return items


def templated_set_g(entry: Entry) -> bool:
    """A templated Set-G row: its Ref-N keeps the gendered cue, so it has no reference of known label pair."""
    return entry.origin == "templated" and entry.set == "Set-G"


def ungendered_ref_g(entry: Entry) -> bool:
    """A row whose Ref-G is its Ref-N word for word: an ambiguous templated input with an epicene adjective and no
    gendered noun ("Quizá soy sensible"). Its "Ref-G" genders nobody, so it is judged once, as the NEUTRAL Ref-N;
    judged twice, the same text would count as both labels and cost any judge one error."""
    return bool(entry.ref_n) and entry.ref_g == entry.ref_n[0]


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
    ``overall``) and the full classification report; ``misjudged`` lists the references the headline format got
    wrong (binary view), with their text.
    """
    refs = reference_items(entries, exclude_source_keys)
    left_out_templated = sum(templated_set_g(e) for e in entries)
    excluded = len({e.id for e in entries} - {r.entry.id for r in refs}) - left_out_templated
    results = []
    predictions: dict[str, tuple[list[str | None], JudgeFormat]] = {}
    for name, classify in classifiers.items():
        fmt = judge_format("MONO-L" if name == LEXICAL else name)  # the lexical judge speaks GENDERED/NEUTRAL
        preds = classify([r.item for r in refs])
        predictions[name if name == LEXICAL else fmt.name] = (preds, fmt)
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
                    "binary": classification_report([_binary(g) for g in gold], [_binary(p) for p in pred],
                                                    MONO_LABELS),
                }
            )
    headline = next((r for r in results if r["lang"] == "all" and r["format"] == DEFAULT_FORMAT), None)
    headline = headline or next((r for r in results if r["lang"] == "all"), None)
    by_origin: dict[str, Any] = {}
    origins = sorted({r.entry.origin for r in refs})
    if headline and len(origins) > 1:  # the judge errs differently on mGeNTE and on templated sentences
        preds, fmt = predictions[headline["format"]]
        for origin in origins:
            idx = [i for i, r in enumerate(refs) if r.entry.origin == origin]
            by_origin[origin] = _cell_scores([refs[i] for i in idx], [preds[i] for i in idx], fmt)
    misjudged = _misjudged(refs, *predictions[headline["format"]]) if headline else []
    return {
        "kind": "references",
        **_headline(judge_info, headline["format"] if headline else None, headline["report"] if headline else None),
        "n_rows": len(entries),
        "excluded_exemplar_rows": excluded,
        "excluded_templated_set_g_rows": left_out_templated,
        "excluded_ungendered_ref_g": sum(ungendered_ref_g(r.entry) for r in refs if r.reference == "Ref-N"),
        "n_references": len(refs),
        "results": results,
        **({"by_origin": by_origin} if by_origin else {}),
        "misjudged": misjudged,
    }


def _misjudged(refs: Sequence[ReferenceItem], preds: Sequence[str | None], fmt: JudgeFormat) -> list[dict[str, Any]]:
    """The references the headline format got wrong on the binary view (GENDERED vs NEUTRAL, what GNT accuracy
    uses), judge errors included: what a reader needs to see what the judge misses, not only how often."""
    wrong = []
    for ref, pred in zip(refs, preds, strict=True):
        gold = _binary(to_format_label(ref.gold, fmt))
        got = _binary(pred if pred is not None else ERROR_LABEL)
        if got != gold:
            wrong.append({"id": ref.entry.id, "lang": ref.entry.lang, "origin": ref.entry.origin,
                          "cell": ref.cell, "translation": ref.item.translation, "gold": gold, "judged": got})
    return wrong


def _binary(label: str) -> str:
    """GENDERED or NEUTRAL (what GNT accuracy uses); an error or abstention stays itself (counted as wrong)."""
    if label in (ERROR_LABEL, ABSTAIN):
        return label
    return NEUTRAL if label == NEUTRAL else GENDERED


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
    rows = [(r["format"], r["lang"], r["cells"]) for r in report["results"]]
    rows += [(report["format"], f"all, {origin} rows", cells) for origin, cells in report.get("by_origin", {}).items()]
    for fmt, lang, c in rows:
        lines.append(
            f"| {fmt} | {lang} | "
            + " | ".join(_pct(c[name]["accuracy"]) for name in ("Set-G/Ref-G", "Set-G/Ref-N", "Set-N/Ref-G", "Set-N/Ref-N"))
            + f" | {_pct(c['overall']['accuracy'])} | {c['overall']['errors']} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- gold files
TSV_COLUMNS = ("source", "translation", "gold")
#: What a classifier returns for an item it declines to judge (the lexical judge without known words).
ABSTAIN = "ABSTAIN"


def read_gold_tsv(path: str | Path, default_lang: str | None = None) -> list[GoldRow]:
    """The rows of a gold file in any layout :mod:`gnt.judge.gold` reads (see :func:`read_gold_files`)."""
    return read_gold(path, default_lang).rows


def gold_files(path: str | Path) -> list[Path]:
    """A gold file, or every ``*.tsv`` under a folder (sorted), e.g. a release's whole ``annotations/`` tree."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.tsv") if p.is_file())
        if not files:
            raise DataError("no .tsv gold files in this folder", path)
        return files
    if not path.is_file():
        raise DataError("gold file not found", path)
    return [path]


def read_gold_files(path: str | Path, default_lang: str | None = None) -> list[GoldSet]:
    """Read every gold file of ``path``; in a folder, files without rows in our languages are skipped (noted)."""
    files = gold_files(path)
    sets: list[GoldSet] = []
    for file in files:
        try:
            sets.append(read_gold(file, default_lang))
        except DataError as exc:
            if len(files) > 1 and "no labelled rows" in exc.message:
                sets.append(GoldSet(str(file), "empty", [], exc.message))
                continue
            raise
    return sets


def _row_counts(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """Per row, ``(tp, fp, fn)`` of each label: the sums every bootstrap statistic below is a function of."""
    out = np.zeros((len(gold), 3 * len(labels)))
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        for c, lab in enumerate(labels):
            out[i, 3 * c] = g == lab and p == lab
            out[i, 3 * c + 1] = g != lab and p == lab
            out[i, 3 * c + 2] = g == lab and p != lab
    return out


def bootstrap_figures(
    gold: Sequence[str], pred: Sequence[str], labels: Sequence[str], clusters: Sequence[Any],
    bootstrap: BootstrapSettings = DEFAULT,
) -> dict[str, Any]:
    """95% percentile CIs of per-label precision and recall and of macro-F1, resampling clusters (sources).

    As everywhere in :mod:`gnt.bootstrap`, a replicate where a statistic is undefined (a rare class
    drawn zero times) is left out of its interval, so a class of a few rows gives a wide or one-sided interval.
    """
    used = [lab for lab in labels if lab in set(gold) | set(pred)]
    counts = cluster_sums(_row_counts(gold, pred, used), clusters)
    weights = resampling_weights(counts.shape[0], bootstrap.bootstrap_samples, bootstrap.bootstrap_seed)
    per_label = {}
    for c, lab in enumerate(used):
        tp, fp, fn = counts[:, 3 * c], counts[:, 3 * c + 1], counts[:, 3 * c + 2]
        per_label[lab] = {
            "precision": estimate(np.stack([tp, tp + fp], axis=1), ratio, weights),
            "recall": estimate(np.stack([tp, tp + fn], axis=1), ratio, weights),
        }
    return {"samples": bootstrap.bootstrap_samples, "cluster": "source", "per_label": per_label, "macro_f1": estimate(counts, macro_f1, weights)}


def _figures(rows: Sequence[GoldRow], gold: list[str], pred: list[str], labels: Sequence[str]) -> dict[str, Any]:
    report = classification_report(gold, pred, labels)
    report["class_counts"] = {lab: gold.count(lab) for lab in labels if lab in gold}
    report["ci"] = bootstrap_figures(gold, pred, labels, [(r.lang, r.source) for r in rows])
    return report


def gold_report(
    gold_rows: Sequence[GoldRow],
    preds: Sequence[str | None],
    fmt: str | JudgeFormat,
    judge_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Figures in the format's label space and on the binary neutral-vs-gendered view, overall and per language.

    Each block has the gold class counts, per-label precision/recall/F1 with bootstrap CIs, macro-F1 with its
    CI, accuracy, κ and the confusion matrix. A judge error (None) and an abstention (:data:`ABSTAIN`) stay in the
    data as their own non-label categories (wrong for accuracy, lowering recall); ``covered`` repeats the label
    figures on the rows the judge did not abstain on, so a judge that abstains a lot is seen both ways.
    """
    fmt = judge_format(fmt)
    if fmt.cross and any(r.gold == GENDERED for r in gold_rows):
        raise ValueError(
            f"gold labels include GENDERED, which does not say correct or wrong: validate with a MONO format, not {fmt.name}"
        )
    gold = [to_format_label(r.gold, fmt) for r in gold_rows]
    pred = [p if p is not None else ERROR_LABEL for p in preds]
    gold_bin = [NEUTRAL if g == NEUTRAL else GENDERED for g in gold]
    pred_bin = [p if p in (NEUTRAL, ERROR_LABEL, ABSTAIN) else GENDERED for p in pred]
    labels = _figures(gold_rows, gold, pred, fmt.labels)
    abstained = pred.count(ABSTAIN)
    keep = [i for i, p in enumerate(pred) if p != ABSTAIN]
    per_lang = {}
    for lang in [lang for lang in LANGUAGES if any(r.lang == lang for r in gold_rows)]:
        idx = [i for i, r in enumerate(gold_rows) if r.lang == lang]
        per_lang[lang] = {
            "abstained": sum(pred[i] == ABSTAIN for i in idx),
            "labels": _figures([gold_rows[i] for i in idx], [gold[i] for i in idx], [pred[i] for i in idx], fmt.labels),
        }
    report = {
        "kind": "gold_tsv",
        **_headline(judge_info, fmt.name, labels),
        "errors": sum(p is None for p in preds),
        "abstained": abstained,
        "abstention_rate": abstained / len(pred) if pred else None,
        "labels": labels,
        "binary": classification_report(gold_bin, pred_bin, MONO_LABELS),
        "per_lang": per_lang,
    }
    if abstained:
        sub = [gold_rows[i] for i in keep]
        report["covered"] = _figures(sub, [gold[i] for i in keep], [pred[i] for i in keep], fmt.labels) if keep else None
    return report


def validate_tsv(
    path: str | Path,
    classify: Classifier,
    fmt: str | JudgeFormat,
    default_lang: str | None = None,
    judge_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Judge every row of a gold file (or of every gold file in a folder) and report (see :func:`gold_report`)."""
    sets = read_gold_files(path, default_lang)
    rows = [r for g in sets for r in g.rows]
    if not rows:
        raise DataError("no labelled rows in our languages in any gold file", path)
    preds = classify([JudgeItem(r.lang, r.source, r.translation) for r in rows])
    report = gold_report(rows, preds, fmt, judge_info)
    report["path"] = str(path)
    report["files"] = [
        {"path": g.path, "layout": g.layout, "rows": len(g.rows), "mapping": g.mapping, "skipped": dict(g.skipped)} for g in sets
    ]
    report["mapping"] = sorted({g.mapping.split(" (")[0] + ": " + g.mapping.split("); ", 1)[-1] for g in sets if g.rows})
    skipped: Counter = Counter()
    for g in sets:
        skipped.update(g.skipped)
    report["skipped"] = dict(skipped)
    return report


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _ci(block: dict[str, Any] | None) -> str:
    if not block or block.get("ci") is None:
        return ""
    low, high = block["ci"]
    return f" [{low:.3f}, {high:.3f}]"


def _label_lines(lab: dict[str, Any], indent: str = "  ") -> list[str]:
    """Per-class figures first (class counts, precision and recall with CIs), then macro-F1, accuracy and κ."""
    ci = lab.get("ci") or {}
    counts = lab.get("class_counts") or {}
    lines = [indent + "class counts: " + ", ".join(f"{k} {v}" for k, v in counts.items())] if counts else []
    for name, fig in lab["per_label"].items():
        cis = (ci.get("per_label") or {}).get(name, {})
        lines.append(
            f"{indent}{name:<20} P {_num(fig['precision'])}{_ci(cis.get('precision'))}  R {_num(fig['recall'])}{_ci(cis.get('recall'))}"
            f"  F1 {_num(fig['f1'])}  (support {fig['support']})"
        )
    lines.append(
        f"{indent}macro-F1 {_num(lab['macro_f1'])}{_ci(ci.get('macro_f1'))}  kappa {_num(lab['kappa'])}  accuracy {_num(lab['accuracy'])}"
    )
    return lines


def gold_summary(report: dict[str, Any]) -> str:
    """Text report: mapping, per-class figures first, then macro-F1, κ, accuracy, per language, and the confusion."""
    lab, binary = report["labels"], report["binary"]
    abst = f", {report['abstained']} abstained ({100 * report['abstention_rate']:.1f}%)" if report.get("abstained") else ""
    lines = [f"{report['format']} on {report['n']} rows ({report['errors']} judge errors{abst})"]
    lines += [f"  gold mapping: {m}" for m in report.get("mapping", [])]
    if report.get("skipped"):
        lines.append("  skipped (not a gender label): " + ", ".join(f"{k} {v}" for k, v in report["skipped"].items()))
    lines.append("  labels:")
    lines += _label_lines(lab, "    ")
    if report.get("covered"):
        lines.append("  labels on the rows the judge did not abstain on:")
        lines += _label_lines(report["covered"], "    ")
    lines.append(f"  binary: accuracy {_num(binary['accuracy'])}  macro-F1 {_num(binary['macro_f1'])}  kappa {_num(binary['kappa'])}")
    for lang, block in (report.get("per_lang") or {}).items():
        extra = f", {block['abstained']} abstained" if block.get("abstained") else ""
        lines.append(f"  {lang} ({block['labels']['n']} rows{extra}):")
        lines += _label_lines(block["labels"], "    ")
    lines.append("  confusion (rows gold, columns predicted):")
    matrix = lab["confusion"]
    columns = list(next(iter(matrix.values())).keys()) if matrix else []
    lines.append("    " + " | ".join(["gold \\ pred", *columns]))
    for g, row in matrix.items():
        lines.append("    " + " | ".join([g, *(str(row[c]) for c in columns)]))
    return "\n".join(lines)


def recorded_classifier(path: str | Path, default_lang: str | None = None) -> tuple[Classifier, int]:
    """The judge labels recorded in the gold files themselves (GENDEROUS' GPT-4o column) as a classifier, and how
    many rows have any: the figures of the paper's own LLM judge against the human labels."""
    rows = [r for g in read_gold_files(path, default_lang) for r in g.rows]
    recorded = sum(r.recorded is not None for r in rows)
    if not recorded:
        raise DataError("no judge labels recorded beside the gold labels (e.g. GENDEROUS' {XX}_GPT_annotation)", path)

    def classify(items: Sequence[JudgeItem]) -> list[str | None]:
        if [(i.lang, i.translation) for i in items] != [(r.lang, r.translation) for r in rows]:
            raise ValueError("the recorded classifier only judges the rows of its own gold files, in their order")
        return [r.recorded for r in rows]

    return classify, recorded


def llm_classifier(judge: Any) -> Classifier:
    """Adapt an :class:`~gnt.judge.llm_judge.LLMJudge` to a :data:`Classifier` (errors become None)."""

    def classify(items: Sequence[JudgeItem]) -> list[str | None]:
        return [j.label if j.ok else None for j in judge.judge(items)]

    return classify

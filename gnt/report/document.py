"""The report's content as a renderer-neutral document: sections of headings, paragraphs, tables, images, details.

:func:`compose` decides *what* the report says (from :class:`gnt.report.collect.Results`, the tables and the
figures); :mod:`gnt.report.markdown` and :mod:`gnt.report.html` only decide how it looks. One document, two
renderings, so report.md and report.html always carry the same numbers.

What a reader gets, in order: what was evaluated and what was not run; the headline tables (base vs each
checkpoint, per language, CIs, paired tests) with the judge's validity printed beside the GNT numbers; the paper's
views (Fig. 3–5); learning curves; the templated suite and attribution figures of each model; per-cell numbers;
the sample browser; leakage status and the run records that make every number traceable.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gnt.bootstrap import DEFAULT, BootstrapSettings
from gnt.evaluation.adequacy import ADEQUACY_THRESHOLD
from gnt.report.adjective_forms import adjective_form_blocks, stage_choice_form_blocks
from gnt.report.blocks import Block, Bullets, Details, Document, Heading, Image, Para, Pre, Table
from gnt.report.collect import ModelResult, Results, row_key
from gnt.report.config import ReportConfig
from gnt.report.plots import all_figures, headline_shots, model_labels
from gnt.report.significance import compare, holm
from gnt.report.tables import (
    COLUMNS,
    TEMPLATED_COLUMNS,
    HeadlineTable,
    cell_table,
    headline_tables,
    judge_validity,
    preference_columns,
    templated_rows,
)
from gnt.results_schema import read_stat

# ----------------------------------------------------------------------------------------------------------------
# Composition
# ----------------------------------------------------------------------------------------------------------------

PARTS = ("metrics", "generations", "judge", "xcomet", "attribution", "templated")
PART_HOW = {
    "metrics": "python eval/evaluate.py <eval recipe> --run <training run>",
    "generations": "python eval/evaluate.py <eval recipe> --run <training run>",
    "judge": "python eval/judge.py <results dir>",
    "xcomet": "python eval/comet.py <results dir>",
    "attribution": "python eval/attribute.py <results dir> ...",
    "templated": "python eval/templated.py <eval recipe> ...",
}


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) >= 2 else f"{value:.3f}"
    return str(value)


def _short(text: Any, limit: int = 300) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _status_section(results: Results) -> list[Block]:
    blocks: list[Block] = [Heading(2, "What was evaluated", "evaluated")]
    header = ["model", "stage", "step", *PARTS]
    rows = []
    for model in results.models:
        missing = set(results.missing.get(model.name, []))

        def mark(part: str, model=model, missing=missing) -> str:
            if model.failed and part in ("metrics", "generations"):
                return "failed"
            return "✓" if part not in missing else "not run"

        rows.append([model.name, model.stage, "" if model.global_step is None else str(model.global_step),
                     *(mark(part) for part in PARTS)])
    for warning in results.warnings:
        blocks.append(Para(f"Warning: {warning}.", "warning"))
    blocks.append(Table(header, rows, "Which steps have results for each model (“not run”: no output found; "
                        "“failed”: every generation of the model failed).", name="status"))
    not_run = sorted({part for parts in results.missing.values() for part in parts})
    if not_run:
        blocks.append(Para(
            "Not run for at least one model: " + ", ".join(not_run) + ". Sections that need them say so. "
            "To fill them: " + "; ".join(f"{p}: `{PART_HOW[p]}`" for p in not_run) + ".", "note",
        ))
    cells = results.cells
    if cells:
        blocks.append(Para(f"Grid cells evaluated: {len(cells)} ({', '.join(cells[:12])}"
                           f"{', …' if len(cells) > 12 else ''})."))
    return blocks


def _pct(value: Any) -> str | None:
    return f"{value * 100:.1f}%" if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _validation_text(validation: dict) -> str | None:
    """A validation block (metrics.json ``judge.validation`` or a validation report) in one phrase."""
    if not isinstance(validation, dict) or not validation:
        return None
    accuracy = validation.get("accuracy")
    if isinstance(accuracy, dict):  # references: {lang: {cell: accuracy}}
        per_lang = {lang: (cells or {}).get("overall") for lang, cells in accuracy.items() if isinstance(cells, dict)}
        parts = [f"{lang} {_pct(v)}" for lang, v in per_lang.items() if _pct(v)]
        return "accuracy on held-out references: " + ", ".join(parts) if parts else None
    pooled = next((r for r in validation.get("results") or [] if isinstance(r, dict) and r.get("lang") == "all"
                   and isinstance(r.get("binary"), dict)), None)
    if validation.get("kind") == "references" and pooled:  # a learned judge's held-out references, binary view
        binary = pooled["binary"]
        recall = {label: (binary.get("per_label") or {}).get(label, {}).get("recall") for label in ("GENDERED", "NEUTRAL")}
        shown = ", ".join(f"{label} recall {_pct(value)}" for label, value in recall.items() if _pct(value))
        templated = ((validation.get("by_origin") or {}).get("templated") or {}).get("overall") or {}
        where = "mGeNTE and templated Set-N references" if templated else "mGeNTE references"
        return (f"binary accuracy {_pct(binary.get('accuracy'))} on {binary.get('n')} held-out {where}"
                + (f" ({shown})" if shown else "")
                + (f"; {_pct(templated.get('accuracy'))} on the {templated.get('n')} templated ones alone"
                   if _pct(templated.get("accuracy")) else ""))
    figures = judge_validity(validation)
    parts = []
    if "accuracy" in figures:
        parts.append(f"accuracy {figures['accuracy'] * 100:.1f}%")
    if "macro_f1" in figures:
        parts.append(f"macro-F1 {figures['macro_f1']:.3f}")
    if "kappa" in figures:
        parts.append(f"κ {figures['kappa']:.3f}")
    return ", ".join(parts) or None


def judge_blocks(results: Results) -> dict[str, dict]:
    """The ``judge`` block the judge step writes into each model's metrics.json (which judge, errors, agreement)."""
    return {m.name: dict(m.metrics["judge"]) for m in results.models
            if isinstance(m.metrics, dict) and isinstance(m.metrics.get("judge"), dict)}


def judge_line(results: Results) -> tuple[str, list[dict]]:
    """One paragraph naming the judge and its validity figures, and the validation rows behind it."""
    validity = []
    for path, data in results.judge_validation:
        summary = judge_validity(data)
        summary["file"] = str(path.relative_to(results.directory)) if path.is_relative_to(results.directory) else str(path)
        summary["text"] = _validation_text(data)
        validity.append(summary)
    if not results.has("gnt_accuracy"):
        return "GNT accuracy and coherence: judge not run.", validity
    blocks = judge_blocks(results)
    block = next(iter(blocks.values()), {})
    judges = set()
    for model in results.models:
        for judgment in model.judgments[:50]:
            name, fmt = judgment.get("judge"), judgment.get("format")
            if name:
                judges.add(_judge_name(name, fmt))
    if block.get("judge_model") or block.get("kind"):
        judges = {_judge_name(str(block.get("judge_model") or block.get("kind")),
                              block.get("format") or "format not recorded")}
    who = ", ".join(sorted(judges)) if judges else "the judge recorded in judgments.jsonl"
    sentences = [f"GNT accuracy and coherence come from {who}."]
    if blocks:
        judged = sum(int(b.get("n_judged") or 0) for b in blocks.values())
        errors = sum(int(b.get("n_judge_errors") or 0) for b in blocks.values())
        sentences.append(f"{judged} translations judged, {errors} judge errors (left out of GNT accuracy).")
        agreement = block.get("agreement_lexical")
        if isinstance(agreement, dict) and _pct(agreement.get("agreement")):
            kappa = agreement.get("kappa")
            sentences.append(f"Agreement with the lexical judge: {_pct(agreement['agreement'])}"
                             + (f" (κ {kappa:.3f})." if isinstance(kappa, (int, float)) else "."))
    texts = []
    embedded = _validation_text(block.get("validation") or {})
    if embedded:
        texts.append(embedded)
    for v in validity:
        label = v.get("judge", "judge") + (f" / {v['format']}" if v.get("format") else "")
        texts.append(f"{label}: {v['text'] or 'no summary figures'} ({v['file']})")
    lexical_alone = str(block.get("kind") or "") == "lexical"
    if lexical_alone:
        sentences.append("The lexical judge ran alone: its NEUTRAL calls are **unvalidated** (it only finds the "
                         "gendered words annotated for a row, so a translation that genders someone with other words "
                         "reads as neutral).")
    if texts:
        sentences.append("Judge validation: " + "; ".join(texts) + ".")
    elif not lexical_alone:
        sentences.append("This judge has **not been validated** here: its numbers are unverified (run "
                         "`python eval/judge.py validate ...` and pass the report to the judge step or "
                         "`eval/report.py --judge-validation`).")
    return " ".join(sentences), validity


MISJUDGED_SHOWN = 4
"""References quoted per kind of judge error (gendered called neutral, neutral called gendered)."""


def _misjudged_blocks(results: Results, data: dict) -> list[Block]:
    """What the judge got wrong on its held-out references (the validation's ``misjudged`` list), a few quoted per
    direction of error: a reader weighs a GNT figure by the kind of text its judge misreads, not only by how often."""
    blocks: list[Block] = []
    data["judge_misjudged"] = []
    for path, validation in results.judge_validation:
        wrong = validation.get("misjudged") if isinstance(validation, dict) else None
        if not isinstance(wrong, list) or not wrong:
            continue
        judged = sum(int((r.get("binary") or {}).get("n") or 0) for r in validation.get("results") or []
                     if isinstance(r, dict) and r.get("lang") == "all")
        kinds: dict[tuple[str, str], list[dict]] = {("GENDERED", "NEUTRAL"): [], ("NEUTRAL", "GENDERED"): []}
        others = 0
        for m in wrong:
            kind = (m.get("gold"), m.get("judged")) if isinstance(m, dict) else None
            if kind in kinds:
                kinds[kind].append(m)
            else:
                others += 1
        items = [f"{gold.lower()} called {called.lower()} ({len(found)}): "
                 + "; ".join(f"{m.get('lang')} «{m.get('translation')}»" for m in found[:MISJUDGED_SHOWN])
                 for (gold, called), found in kinds.items() if found]
        items += [f"no verdict (a judge error or abstention): {others}"] if others else []
        name = path.name
        blocks += [Para(f"What the judge got wrong in {name}: {len(wrong)} references"
                        + (f" of {judged}" if judged else "") + ", by the kind of error (a few quoted):"),
                   Bullets(items)]
        data["judge_misjudged"].append({"file": name, "n": len(wrong), "shown": items})
    return blocks


def _judge_name(name: str, fmt: str | None) -> str:
    """``judge (FORMAT)``, or the name alone where the format only repeats it (the lexical judge's is LEXICAL)."""
    if fmt and str(fmt).lower() != str(name).lower():
        return f"{name} ({fmt})"
    return "the lexical judge" if str(name).lower() == "lexical" else name


def _headline_section(results: Results, bootstrap: BootstrapSettings, data: dict) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Headline: base vs checkpoints", "headline")]
    base = results.base
    blocks.append(Para(
        "Each value is the metric over all evaluated cells of the language, from the evaluator's metrics.json, "
        f"with its {100 * (1 - results.alpha):g}% bootstrap CI in brackets (percent; chrF++ on its 0–100 scale, "
        "against every reference of the row; xCOMET on its 0–1 scale; extraction errors as count and rate). "
        "Label bal. acc. is the mean of the Set-G and Set-N label accuracies: any constant label scores 50 (the "
        "row under the models gives the best constant's scores). \"Adequate\" is the share of outputs that translate "
        "their source (chrF++ ≥ 30); \"GNT acc. Set-N, inadequate = wrong\" counts the others as failures, while "
        "\"GNT acc. Set-N\" leaves out the outputs the judge did not judge (extraction errors are failures in "
        "both). " + (
            f"▲ marks a checkpoint significantly better than `{base.name}` (higher accuracy, fewer extraction "
            "errors), ▼ significantly worse (paired bootstrap over the same rows and cells, Holm-adjusted within "
            f"the table, α = {results.alpha:g}). Preference accuracy: the share of held-out preference pairs whose chosen answer "
            "the model scores higher (mean log-probability per token) than the rejected one." if base else
            "No base model was evaluated, so no paired test against a base is possible."
        )
    ))
    sentence, _ = judge_line(results)
    unvalidated = "not been validated" in sentence or "unvalidated" in sentence
    blocks.append(Para(sentence, "warning" if unvalidated else "note"))
    tables = headline_tables(results, bootstrap)
    if not tables:
        blocks.append(Para("No metrics found: metrics not run.", "warning"))
    data["headline"] = []
    for table in tables:
        header = ["model", "stage", "step", *[c.title for c in table.columns]]
        rows = []
        for row in table.rows:
            rows.append([row.model, row.stage, "" if row.step is None else str(row.step),
                         *[row.cells[c.key].text() for c in table.columns]])
            data["headline"].append({
                "lang": table.lang, "model": row.model, "stage": row.stage, "step": row.step,
                **{c.key: {"value": row.cells[c.key].value, "lo": row.cells[c.key].lo, "hi": row.cells[c.key].hi,
                           "count": row.cells[c.key].count,
                           "delta": test.delta if (test := row.cells[c.key].test) else None,
                           "p_value": test.p_value if (test := row.cells[c.key].test) else None,
                           "p_adjusted": row.cells[c.key].p_adjusted}
                   for c in table.columns},
            })
        baseline = _constant_label_row(results, table)
        if baseline is not None:
            rows.append(baseline)
        blocks.append(Heading(3, table.title, f"headline-{table.lang or 'all'}"))
        blocks.append(Table(header, rows, name=f"headline:{table.lang or 'all'}"))
    blocks += [Para(text, "warning") for text in meaning_warnings(results)]
    blocks += _preference_kind_section(results, bootstrap, data)
    return blocks


def _block(model: ModelResult, lang: str | None) -> dict:
    """A model's metrics block for one language (or overall for ``None``), empty when absent."""
    metrics: dict[str, Any] = dict(model.metrics or {})
    return ((metrics.get("languages") or {}).get(lang) if lang else metrics.get("overall")) or {}


def _constant_label_row(results: Results, table: HeadlineTable) -> list[str] | None:
    """The best constant label's scores, printed under the models: what a model must beat to show a decision."""
    model = results.base or (results.models[0] if results.models else None)
    baselines = _block(model, table.lang).get("label_baselines") if model else None
    if not baselines or baselines.get("balanced_accuracy") is None:
        return None
    values = {"label_bal": f"{baselines['balanced_accuracy'] * 100:.1f}",
              "label_f1": f"{baselines['macro_f1'] * 100:.1f}"}
    return [f"best constant label ({baselines['label']})", "baseline", "",
            *[values.get(c.key, "") for c in table.columns]]


MOSTLY_INADEQUATE = 0.5
"""Below this share of adequate outputs the report says in words that GNT figures are not about translations."""


def meaning_warnings(results: Results) -> list[str]:
    """Sentences a reader must see before trusting a headline number: label collapse, and outputs that mostly do
    not translate their source (so that GNT accuracy over all outputs is about text that is not a translation)."""
    out = []
    for model in results.models:
        block = _block(model, None)
        distribution = block.get("label_distribution") or {}
        if distribution.get("collapsed"):
            out.append(
                f"Label collapse: `{model.name}` gives {distribution['collapsed']} to "
                f"{100 * distribution['majority_share']:.0f}% of its readable outputs (≥ "
                f"{100 * distribution['collapse_share']:.0f}%): its label accuracy on one set is a constant's, "
                "and its balanced accuracy is what tells whether it decides.")
        adequacy = block.get("adequacy") or {}
        adequate = read_stat(adequacy.get("adequate"))
        if adequate is not None and adequate[0] < MOSTLY_INADEQUATE:
            errors = read_stat((block.get("extraction_errors") or {}).get("rate"))
            because = (f"{100 * errors[0]:.0f}% of them are extraction errors, "
                       f"{adequacy.get('n_inadequate', 0)} more score below it"
                       if errors is not None else "")
            out.append(
                f"Most outputs of `{model.name}` do not translate their source: only {100 * adequate[0]:.0f}% "
                f"reach chrF++ {adequacy.get('threshold', ADEQUACY_THRESHOLD):g} against any reference ({because}). "
                "Its GNT accuracy is therefore mostly not about translations; read the \"inadequate = wrong\" "
                "column.")
    out += stage_regressions(results)
    return out


REGRESSION_METRICS: tuple[tuple[str, str | None, str], ...] = (
    ("label_balanced_accuracy", None, "label balanced accuracy"),
    ("gnt_accuracy_adequate", "Set-N", "Set-N GNT accuracy (inadequate translations counted wrong)"),
    ("chrf", None, "chrF++"),
)
"""What a later training stage must not lose against the stage before it without the report saying so."""


def stage_regressions(results: Results) -> list[str]:
    """Sentences for each training stage whose last checkpoint is significantly worse than the previous stage's
    last checkpoint (the base counts as the stage before the first), on the same rows, Holm-adjusted over these
    tests: DPO can undo what SFT taught, and a headline table that marks each model against the base alone does
    not show it."""
    last_of_stage: dict[str, ModelResult] = {}
    for model in results.models:
        if not model.failed:
            last_of_stage[model.stage] = model  # models are ordered base, then by stage and step
    bootstrap = results.bootstrap.paired()
    tests = []
    for before, after in itertools.pairwise(last_of_stage.values()):
        for name, group, title in REGRESSION_METRICS:
            test = compare(before, after, (name, group), None, bootstrap=bootstrap)
            if test is not None:
                tests.append((before, after, name, title, test))
    adjusted = holm([test.p_value for *_, test in tests])
    out = []
    for (before, after, name, title, test), p_value in zip(tests, adjusted, strict=True):
        if test.delta >= 0 or p_value >= bootstrap.alpha:
            continue
        scale = 1.0 if name == "chrf" else 100.0
        out.append(
            f"Stage regression: `{after.name}` ({after.stage}) loses {title} against `{before.name}` "
            f"({before.stage}): {scale * test.delta:+.1f} points, 95% CI [{scale * test.lo:+.1f}, "
            f"{scale * test.hi:+.1f}], Holm-adjusted p = {p_value:.3f} over {test.n_pairs} matched outputs. The "
            "later stage undid part of what the earlier one reached.")
    return out


def _preference_kind_section(results: Results, bootstrap: BootstrapSettings, data: dict) -> list[Block]:
    """Preference accuracy per held-out pair kind (all languages), with the same paired tests as the headline."""
    columns = preference_columns(results)
    tables = [t for t in headline_tables(results, bootstrap, columns) if t.lang is None] if columns else []
    if not tables:
        return []
    table = tables[0]
    rows = [[row.model, row.stage, "" if row.step is None else str(row.step),
             *[row.cells[c.key].text() for c in columns]] for row in table.rows]
    data["preference_kinds"] = [
        {"model": row.model, **{c.title: row.cells[c.key].value for c in columns}} for row in table.rows
    ]
    return [
        Heading(3, "Preference accuracy by pair kind", "preference-kinds"),
        Para("Held-out pairs of each kind the data build writes: `setn_neutral_vs_gendered` (ambiguous source: "
             "NEUTRAL + neutral reference over GENDERED + gendered reference), `label_coherence` (both labelled "
             "NEUTRAL: neutral over gendered text), `setg_gendered_vs_neutral` (stated gender kept), "
             "`templated_ambiguous` (templated ambiguous input: neutral over masculine default)."),
        Table(["model", "stage", "step", *[c.title for c in columns]], rows, name="preference-kinds"),
    ]


def _figure_section(results: Results, figures: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "The paper's views", "views")]
    captions = {
        "decision": ("The decision — label balanced accuracy and macro-F1",
                     "Bars: each model's label balanced accuracy (mean of Set-G and Set-N label accuracy) and "
                     "macro-F1; dashed lines: what the best constant label scores. A model at or under the dashed "
                     "line is not deciding, whatever its label accuracy on one set."),
        "fig3_label_vs_gnt": ("Fig. 3 — label vs GNT accuracy by set and language",
                              "Solid bars: label accuracy; hatched: GNT accuracy (the translation is neutral on Set-N, "
                              "gendered on Set-G). A label bar well above its GNT bar on Set-N means the model says "
                              "NEUTRAL and still writes gendered text."),
        "fig4_coherence": ("Fig. 4 — label–translation coherence by label",
                           "Share of outputs whose translation form (judge) agrees with the generated label."),
        "fig5_setn_by_config": ("Fig. 5 — Set-N GNT accuracy by prompt configuration",
                                f"At {headline_shots(results)} shots; G = guidelines, S = system prompt."),
    }
    for key, (title, caption) in captions.items():
        blocks.append(Heading(3, title))
        path = figures.get(key)
        if path:
            blocks.append(Image(path, title, caption))
        else:
            needs = "judge" if key not in ("fig3_label_vs_gnt", "decision") else "metrics"
            blocks.append(Para(f"Not drawn: {needs} not run for any model.", "note"))
    blocks.append(Heading(2, "Learning curves", "curves"))
    curves = figures.get("learning_curves") or []
    if curves:
        blocks.append(Para("Each headline metric against the checkpoint's global step; one line per language, the "
                           "dashed line is all languages with its 95% CI."))
        for path in curves:
            blocks.append(Image(path, path.stem.replace("_", " "), None))
    else:
        blocks.append(Para("No checkpoints with a global step were evaluated: no learning curves.", "note"))
    return blocks


def _copy_png(src: Path, figures: Path, model: ModelResult, kind: str, results: Results) -> Path:
    """Copy another step's PNG into the report folder (the report must not break when results move)."""
    rel = src.relative_to(model.directory / kind) if src.is_relative_to(model.directory / kind) else Path(src.name)
    dest = figures / _safe(model.name) / kind / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def _signed(stat: Any, signed: bool = True) -> str:
    if not stat:
        return "—"
    value, lo, hi = stat[0], stat[1], stat[2]
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    if lo is not None and hi is not None:
        text += f" [{lo:+.3f}, {hi:+.3f}]" if signed else f" [{lo:.3f}, {hi:.3f}]"
    return text


def _templated_section(results: Results, figures: Path, data: dict) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Templated sensitivity suite", "templated")]
    data["templated"] = {}
    shown = False
    for model in results.models:
        rows = templated_rows(model.templated_metrics)
        if not rows and not model.templated_pngs:
            continue
        shown = True
        blocks.append(Heading(3, model.name))
        if rows:
            header = ["style", "lang", *TEMPLATED_COLUMNS, "unclassified"]
            body = [[str(r.get("style", "—")), str(r["lang"]),
                     *(_signed(r.get(k), signed=k != "N_det") for k in TEMPLATED_COLUMNS),
                     str(r.get("unclassified", "—"))] for r in rows]
            blocks.append(Table(header, body, "Proportions of classified outputs, ambiguous minus determined inputs "
                                "(95% CI). ΔN > 0: more neutral output when the gender is ambiguous (a neutral "
                                "response); ΔM > 0: a masculine default; N_det: neutrality on determined inputs. "
                                "Unclassified: outputs no form was read from (never guessed), with the reasons; "
                                "untranslated = the output repeats the English source or prompt.",
                                name=f"templated:{model.name}"))
            data["templated"][model.name] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in r.items()}
                                             for r in rows]
        for png in model.templated_pngs:
            dest = _copy_png(png, figures, model, "templated", results)
            blocks.append(Image(dest, f"templated suite — {model.name} — {png.stem}", png.stem.replace("_", " ")))
    if results.suite_pngs:
        shown = True
        blocks.append(Heading(3, "Across checkpoints"))
        for png in results.suite_pngs:
            rel = png.relative_to(results.directory)
            dest = figures / "templated_suite" / png.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(png, dest)
            blocks.append(Image(dest, f"templated suite — {png.stem}", rel.as_posix()))
    blocks += _templated_vs_base(results, data)
    from gnt.report.wmt24 import wmt24_blocks

    wmt24 = wmt24_blocks(results.directory, figures, data)
    if not shown and not wmt24:
        blocks.append(Para("Templated suite: not run.", "note"))
    return blocks + wmt24


def _templated_vs_base(results: Results, data: dict) -> list[Block]:
    """N_amb and ΔN of every checkpoint against the base, paired over the same suite pairs (Holm-adjusted)."""
    from gnt.templated_suite.paired import STATISTICS, paired_suite_test

    base = results.base
    if base is None or not base.templated_items:
        return []
    groups = sorted({(i["style"], i["lang"]) for i in base.templated_items})
    tests = []
    for model in results.models:
        if model is base or not model.templated_items:
            continue
        for style, lang in groups:
            for statistic in STATISTICS:
                result = paired_suite_test(base.templated_items, model.templated_items, style=style, lang=lang,
                                           statistic=statistic, bootstrap=DEFAULT)
                if result is not None:
                    tests.append((model.name, style, lang, statistic, result))
    if not tests:
        return []
    adjusted = holm([t[4]["p_value"] for t in tests])
    rows, data["templated_vs_base"] = [], []
    for (name, style, lang, statistic, result), p_adj in zip(tests, adjusted, strict=True):
        mark = ("▲" if result["delta"] > 0 else "▼") if p_adj < results.alpha and result["delta"] else ""
        rows.append([name, style, lang, statistic, f"{result['base'] * 100:.1f}", f"{result['other'] * 100:.1f}",
                     f"{result['delta'] * 100:+.1f} [{result['ci'][0] * 100:+.1f}, {result['ci'][1] * 100:+.1f}]"
                     + (f" {mark} p={p_adj:.3f}" if mark else ""), str(result["n_pairs"])])
        data["templated_vs_base"].append({"model": name, "style": style, "lang": lang, "statistic": statistic,
                                          **result, "p_adjusted": p_adj})
    return [
        Heading(3, "Against the base model"),
        Para(f"N_amb (neutral translations of ambiguous inputs) and ΔN = N_amb − N_det of each checkpoint against "
             f"`{base.name}`, paired over the same suite pairs (percent; 95% CI of the difference; ▲ a significant "
             f"rise, ▼ a fall; Holm-adjusted over the table, α = {results.alpha:g})."),
        Table(["model", "style", "lang", "statistic", "base", "model value", "difference", "pairs"], rows,
              name="templated-vs-base"),
    ]


def _attribution_section(results: Results, figures: Path) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Attribution: which prompt parts drive label and translation", "attribution")]
    any_model = False
    for model in results.models:
        if not model.attribution_pngs:
            continue
        any_model = True
        blocks.append(Heading(3, model.name))
        for png in model.attribution_pngs:
            dest = _copy_png(png, figures, model, "attribution", results)
            rel = png.relative_to(model.directory / "attribution")
            blocks.append(Image(dest, f"attribution — {model.name} — {rel.as_posix()}", rel.as_posix()))
        if model.attribution_tables:
            blocks.append(Para("Tidy data: " + ", ".join(
                f"`{p.relative_to(results.directory).as_posix()}`" for p in model.attribution_tables[:8])))
    if not any_model:
        blocks.append(Para("Attribution: not run.", "note"))
    return blocks


def _cells_section(results: Results) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Per cell", "cells")]
    rows = cell_table(results)
    if not rows:
        return blocks + [Para("No per-cell metrics.", "note")]
    header = ["cell", "model", *[c.title for c in COLUMNS]]
    body = [[cell, model, *[values[c.key].text() for c in COLUMNS]] for cell, model, values in rows]
    blocks.append(Details(f"{len({r[0] for r in rows})} cells × {len(results.models)} models",
                          [Table(header, body, name="cells")]))
    return blocks


def _sources(model: ModelResult) -> dict[tuple[str, str], str]:
    """(row id, lang) → source, for generation records that do not carry the source themselves."""
    data = (model.record.get("rows") or {}).get("source")
    if not data or not isinstance(data, str):
        return {}
    path = Path(data)
    try:
        if path.is_file() and path.suffix == ".jsonl":
            from gnt.io import read_jsonl

            return {(str(r.get("id")), str(r.get("lang"))): str(r.get("source") or "")
                    for r in read_jsonl(path, skip_bad=True)}
    except (OSError, ValueError):
        return {}
    return {}


def _sample_rows(results: Results, per_cell: int) -> list[tuple[str, list[dict]]]:
    """For each cell, the first ``per_cell`` rows (balanced over sets) that every model evaluated."""
    out = []
    by_model = {m.name: {(g["id"], g["cell"]): g for g in m.samples} for m in results.models}
    for cell in results.cells:
        candidates: dict[str, list[str]] = {}
        for model in results.models:
            for generation in model.samples:
                if generation["cell"] == cell:
                    ids = candidates.setdefault(generation["set"], [])
                    if generation["id"] not in ids:
                        ids.append(generation["id"])
            if candidates:
                break
        chosen: list[str] = []
        sets = sorted(candidates)
        index = 0
        while len(chosen) < per_cell and any(index < len(candidates[s]) for s in sets):
            for s in sets:
                if index < len(candidates[s]) and len(chosen) < per_cell:
                    chosen.append(candidates[s][index])
            index += 1
        rows = []
        for row_id in chosen:
            for model in results.models:
                found = by_model[model.name].get((row_id, cell))
                if found is not None:
                    rows.append({"model": model, "generation": found})
        if rows:
            out.append((cell, rows))
    return out


def _phrases(judgment: Mapping[str, Any] | None) -> str:
    if not judgment:
        return "not judged"
    if judgment.get("judge_error"):
        return f"judge error: {_short(judgment['judge_error'], 80)}"
    phrases = judgment.get("phrases") or []  # the lexical judge records none
    items = []
    for phrase in phrases if isinstance(phrases, list) else []:
        if isinstance(phrase, dict):
            text = phrase.get("phrase", "")
            extra = "/".join(str(x) for x in (phrase.get("gender"), phrase.get("gender_correctness")) if x)
            items.append(f"{text} ({extra})" if extra else str(text))
    label = judgment.get("label")
    return (f"{label}: " if label else "") + ("; ".join(items) if items else "no phrases")


def _samples_section(results: Results, per_cell: int, data: dict) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Sample browser", "samples")]
    samples = _sample_rows(results, per_cell)
    if not samples:
        return blocks + [Para("No generations found: sample browser empty.", "note")]
    blocks.append(Para(f"{per_cell} rows per cell (balanced over Set-G/Set-N), each model's output for the same "
                       "row. Judge phrases: the human referents the judge found, with gender and correctness."))
    judgments = {m.name: m.judgment_index() for m in results.models}
    sources = {m.name: _sources(m) for m in results.models}
    labels = model_labels(results.models)
    data["samples"] = []
    header = ["row", "set", "source", "model", "output", "label", "translation", "judge"]
    for cell, rows in samples:
        body = []
        for item in rows:
            model, generation = item["model"], item["generation"]
            row_id, lang = str(generation["id"]), str(generation["lang"])
            source = generation.get("source") or sources[model.name].get((row_id, lang)) or "(not recorded)"
            judgment = judgments[model.name].get(row_key(generation))
            error, gender, label = generation.get("error"), generation.get("gender"), generation.get("label")
            translation = generation.get("translation")
            body.append([
                row_id, f"{generation['set']}{'/' + gender if gender else ''}", _short(source),
                labels[model.name], _short(generation.get("raw")),
                str(label if label is not None else "—") + (f" (error: {error})" if error else ""),
                _short(translation if translation is not None else "—"), _phrases(judgment),
            ])
            data["samples"].append({"cell": cell, "id": row_id, "model": model.name, "source": source,
                                    "output": generation.get("raw"), "label": label, "translation": translation,
                                    "judge": _phrases(judgment)})
        blocks.append(Details(f"{cell} — {len({r[0] for r in body})} rows", [Table(header, body, name=f"samples:{cell}")]))
    return blocks


def _leakage_section(results: Results) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Leakage", "leakage")]
    rows = []
    leaks = []
    for model in results.models:
        leak = model.leakage
        status = str(leak.get("status", "not recorded"))
        if status == "leak":
            leaks.append(model.name)
        rows.append([model.name, status, str(leak.get("overlap", "")), str(leak.get("source") or ""),
                     "yes" if leak.get("allowed") else ""])
    blocks.append(Table(["model", "status", "overlapping sources", "training keys from", "allowed"], rows,
                        "clean: no evaluated row shares an English source with the checkpoint's training data; "
                        "not_applicable: base model; unknown: no record of the training data.", name="leakage"))
    if leaks:
        blocks.append(Para(f"LEAKAGE in {', '.join(leaks)}: these checkpoints were scored on sentences they were "
                           "trained on; their numbers are inflated.", "warning"))
    return blocks


def _text(value: Any) -> str:
    return "—" if value is None else str(value)


def _runs_section(results: Results) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Run records", "runs")]
    header = ["model", "stage", "step", "base model", "recipe", "seed", "data dir", "data hash", "commit",
              "W&B run", "eval backend"]
    rows = []
    details: list[Block] = []
    for model in results.models:
        run = model.run_record or {}
        git = (run.get("environment") or model.record.get("environment") or {}).get("git") or {}
        commit, dirty = str(git.get("commit") or ""), git.get("dirty")
        backend = (model.record.get("backend") or {}).get("backend")

        rows.append([
            model.name, model.stage, "" if model.global_step is None else str(model.global_step),
            str(run.get("base_model") or model.described.get("base_model") or "—"),
            str(run.get("recipe_path") or "(inline, see record)") if run else "—",
            _text(run.get("seed")), _text(run.get("data_dir")), _text(run.get("data_manifest_sha256"))[:16],
            (commit[:12] + (" (dirty)" if dirty else "")) if commit else "—",
            str((run.get("wandb") or {}).get("run_id") or "—"),
            str(backend) if backend else "—",
        ])
        if run or model.record:
            record = {"training run record (gnt_run.json)": run or None,
                      "evaluation record (record.json)": {k: v for k, v in model.record.items()
                                                         if k not in ("shot_orders", "constraint")}}
            details.append(Details(f"{model.name}: full records", [Pre(json.dumps(record, indent=2, default=str,
                                                                               ensure_ascii=False)[:20000])]))
    blocks.append(Table(header, rows, "Everything needed to trace a number back to its recipe, data and code.",
                        name="runs"))
    blocks.extend(details)
    return blocks


def _stage_choice_section(path: str | None, data: dict) -> list[Block]:
    """Where the training chain ends and why: the dev comparison of SFT and the aligned stage."""
    if not path:
        return []
    from gnt.alignment.stage_choice import FIGURES, choice_sentence
    from gnt.io import read_json

    try:
        choice = read_json(Path(path))
    except (OSError, ValueError) as error:
        return [Heading(2, "Final stage", "stage-choice"), Para(f"The stage choice {path} could not be read "
                                                                f"({error}).", "warning")]
    figures = choice.get("figures") or {}

    def shown(sides: dict, key: str, side: str) -> str:  # accuracies in percent, chrF++ on its own scale; one decimal
        value = (sides.get(side) or {}).get(key)
        if not isinstance(value, int | float):
            return "—"
        return f"{value if key == 'chrf' else 100 * value:{'+' if side == 'delta' else ''}.1f}"

    rows = [[title, *(shown(figures, key, side) for side in ("sft", "aligned", "delta"))]
            for key, (title, _, _) in FIGURES.items()]
    data["stage_choice"] = choice
    blocks: list[Block] = [Heading(2, "Final stage", "stage-choice"),
                           Para(choice_sentence(choice), "note" if choice.get("final") == "aligned" else "warning"),
                           Table(["dev figure", "SFT", "aligned", "aligned − SFT"], rows, name="stage_choice")]
    by_origin = choice.get("by_origin") or {}
    if by_origin:
        origin_rows = [[title, origin, *(shown(found, key, side) for side in ("sft", "aligned", "delta"))]
                       for key, (title, _, _) in FIGURES.items() for origin, found in by_origin.items()]
        blocks.append(Table(["dev figure", "rows", "SFT", "aligned", "aligned − SFT"], origin_rows,
                            "The same figures over the real mGeNTE dev rows and the templated ones apart: the choice "
                            "reads them together, and the test rows are all real.", name="stage_choice_by_origin"))
    misses = {side: counts for side, counts in (choice.get("setn_misses") or {}).items() if isinstance(counts, dict)}
    if misses:
        kinds = (("right", "right"), ("inadequate", "below the adequacy bar"),
                 ("not_neutral", "adequate, not judged neutral"))
        blocks.append(Table(["Set-N dev rows", *misses], [[title, *(str(c.get(key, "—")) for c in misses.values())]
                                                          for key, title in kinds],
                            "Where the Set-N rows the GNT figure misses go: an alignment stage gains only by "
                            "turning inadequate or gendered translations into adequate neutral ones.",
                            name="stage_choice_setn_misses"))
    return blocks + stage_choice_form_blocks(choice, data)


def compose(results: Results, out_dir: str | Path, config: ReportConfig) -> Document:
    """Build the whole report document, drawing figures into ``<out_dir>/figures``."""
    out = Path(out_dir)
    figures_dir = out / "figures"
    if figures_dir.exists():
        shutil.rmtree(figures_dir)  # a rebuilt report never shows a figure from an older build
    figures = all_figures(results, figures_dir)
    data: dict[str, Any] = {"results_dir": str(results.directory), "models": [m.name for m in results.models]}
    blocks: list[Block] = []
    blocks += _status_section(results)
    bootstrap = results.bootstrap
    if config.bootstrap_samples:
        bootstrap = dataclasses.replace(bootstrap, bootstrap_samples=config.bootstrap_samples)
    blocks += _headline_section(results, bootstrap, data)
    blocks += adjective_form_blocks(results, data)
    blocks += _stage_choice_section(config.stage_choice, data)
    blocks += _figure_section(results, figures)
    blocks += _templated_section(results, figures_dir, data)
    blocks += _attribution_section(results, figures_dir)
    blocks += _cells_section(results)
    blocks += _samples_section(results, config.samples_per_cell, data)
    judge_sentence, validity = judge_line(results)
    blocks += [Heading(2, "Judge validity", "judge"), Para(judge_sentence)]
    if validity:
        keys = ["file", "judge", "format", "accuracy", "macro_f1", "kappa", "n"]  # figures as in the file
        blocks.append(Table(keys, [[_number(v.get(k)) for k in keys] for v in validity], name="judge_validity"))
    data["judge_validity"] = validity
    blocks += _misjudged_blocks(results, data)
    blocks += _leakage_section(results)
    blocks += _runs_section(results)
    name = config.title or f"gnt-align evaluation report — {results.directory.name}"
    return Document(name, blocks, out, data)

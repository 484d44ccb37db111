"""The three things the judge does, as ``eval/judge.py`` and the pipeline's judge step call them: judge a results
folder (and refill its metrics), validate a judge against labels it should reproduce, check prompt files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gnt.judge.config import DEFAULT_VALIDATION, JudgeRecipe
from gnt.recipe import RecipeError
from gnt.results.folder import ResultsFolder

Say = Callable[[str], None]


def _llm_judge(recipe: JudgeRecipe, fmt: str | None = None, cache_path: str | Path | None = None, backend: Any = None):
    """The recipe's LLM judge (with its trained adapter, checked against the recipe before any model loads) and
    its backend."""
    import logging
    from dataclasses import replace
    from functools import partial

    from gnt.judge.config import make_backend, resolve_model_path
    from gnt.judge.learned import check_trained_prompts, judge_adapter
    from gnt.judge.llm_judge import JudgeCache, LLMJudge, judge_prompt

    adapter, record = None, {}
    if recipe.judge_adapter:
        adapter, record = judge_adapter(recipe.judge_adapter, resolve_model_path(recipe.judge_model or ""),
                                        recipe=recipe.recipe)
    settings = recipe.judge_settings(fmt)
    if adapter is not None:  # the prompts are files: checked before the model loads
        fingerprints = {lang: judge_prompt(settings, lang).fingerprint for lang in recipe.langs}
        unseen = check_trained_prompts(record, settings.format, fingerprints, recipe.judge_adapter or "")
        if unseen:
            logging.getLogger(__name__).warning("the judge adapter was not trained on %s: its verdicts there are "
                                                "unvalidated", ", ".join(unseen))
    backend = backend or make_backend(recipe)
    per_request = adapter if recipe.backend != "transformers" else None  # transformers merged it into the base
    recheck = None
    if settings.recheck_dtype and settings.recheck_dtype != recipe.dtype:  # loaded only once a near tie needs it
        recheck = partial(make_backend, replace(recipe, dtype=settings.recheck_dtype))
    return LLMJudge(backend, settings, JudgeCache(cache_path), adapter=per_request, recheck=recheck), backend


def read_validation(path: str | Path | None) -> dict[str, Any] | None:
    """The validation report judging attaches to the metrics (``validation=``), read before anything is judged:
    a missing or unreadable file is a usage error naming it."""
    import json

    if path is None:
        return None
    where = Path(path)
    if not where.is_file():
        raise RecipeError(f"validation={path}: no such file (the report `eval/judge.py validate` writes; "
                          "leave validation unset to judge without one)")
    try:
        report = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RecipeError(f"validation={path}: not a readable JSON report ({exc})") from None
    if not isinstance(report, dict) or report.get("kind") not in ("references", "gold_tsv"):
        raise RecipeError(f"validation={path}: not a judge validation report (no kind 'references' or 'gold_tsv')")
    return report


def judge_folder(folder: ResultsFolder, recipe: JudgeRecipe, say: Say = print) -> dict[str, dict]:
    """Judge every model folder ``recipe.models`` selects (all by default) and refill its metrics; returns the
    per-model summaries. Judge failures never stop a run: they are counted."""
    from gnt.judge.apply import CACHE, judge_results, load_rows, recorded_rows
    from gnt.judge.lexical import LexicalJudge

    if recipe.judge == "recorded":
        raise RecipeError("judge=recorded only validates the labels a gold file stores: use validate ... tsv=GOLD")
    validation = read_validation(recipe.validation)
    entries = load_rows(recipe.data, recipe.langs) if recipe.data else recorded_rows(folder.path, recipe.langs)
    lexical = LexicalJudge() if (recipe.judge == "lexical" or recipe.lexical_check) else None
    llm, backend = (None, None)
    if recipe.judge == "llm":
        llm, backend = _llm_judge(recipe, cache_path=recipe.cache or folder.path / CACHE)
    try:
        if llm is not None and validation is None and recipe.validate_references and entries:
            validation = _validate_on_references(folder, llm, entries, recipe, say)
        summaries = judge_results(folder, folder.select(recipe.models), llm=llm, lexical=lexical, entries=entries,
                                  validation=validation, progress=say)
    finally:
        if llm is not None:
            llm.close()
        if backend is not None:
            backend.close()
    errors = sum(s["n_judge_errors"] for s in summaries.values())
    say(f"judged {len(summaries)} model folder(s); {errors} judge error(s) in total")
    return summaries


def _validate_on_references(folder: ResultsFolder, llm: Any, entries: list, recipe: JudgeRecipe, say: Say) -> dict:
    """The judge validated on the references of the rows an evaluation scored (its judgments cached with the
    folder's), written where the report reads it."""
    from gnt.filenames import JUDGE_VALIDATION
    from gnt.io import write_json
    from gnt.judge.prompts import exemplar_source_keys
    from gnt.judge.validation import llm_classifier, reference_table, validate_references

    exclude = exemplar_source_keys(recipe.langs, recipe.exemplars_dir)
    say(f"validating the judge on the references of the {len(entries)} evaluated rows (labels known by construction)")
    report = validate_references(entries, {llm.fmt.name: llm_classifier(llm)}, exclude, judge_info=llm.describe())
    report["data"] = "the evaluated rows (record.json rows.source)" if not recipe.data else str(recipe.data)
    write_json(folder.path / JUDGE_VALIDATION, report)
    say(reference_table(report))
    return report


def validate_judge(recipe: JudgeRecipe, say: Say = print) -> Path:
    """Validate the recipe's judge: on mGeNTE references with known labels, or on a gold file (``tsv``); writes
    the report to ``recipe.validation`` (default :data:`gnt.judge.config.DEFAULT_VALIDATION`, where the report of
    the default results folder reads it) and returns its path."""
    from gnt.io import write_json, write_text_atomic
    from gnt.judge.apply import load_rows
    from gnt.judge.lexical import LexicalJudge
    from gnt.judge.prompts import exemplar_source_keys
    from gnt.judge.schema import parse_formats
    from gnt.judge.validation import (
        gold_summary,
        llm_classifier,
        recorded_classifier,
        reference_table,
        validate_references,
        validate_tsv,
    )
    from gnt.paths import SAMPLE_DIR

    formats = parse_formats(recipe.formats or [recipe.format])
    out = Path(recipe.validation or DEFAULT_VALIDATION)
    backend = None
    judges: list[Any] = []
    try:
        if recipe.tsv:
            reports = []
            if recipe.judge == "lexical":  # learned gendered words; it abstains where it knows none
                classify, info = _lexical_text_classifier(recipe.data)
                reports.append(validate_tsv(recipe.tsv, classify, "MONO-L", recipe.lang, info))
            if recipe.judge == "recorded":  # the judge labels a release stores beside its human labels
                classify, n_recorded = recorded_classifier(recipe.tsv, recipe.lang)
                info = {"kind": "recorded", "judge_model": "recorded in the gold file", "rows_with_labels": n_recorded}
                reports.append(validate_tsv(recipe.tsv, classify, "CROSS-L", recipe.lang, info))
            for fmt in formats if recipe.judge == "llm" else []:
                judge, backend = _llm_judge(recipe, fmt.name, recipe.cache, backend)
                judges.append(judge)
                reports.append(validate_tsv(recipe.tsv, llm_classifier(judge), fmt, recipe.lang, judge.describe()))
            for report in reports:
                say(gold_summary(report))
            write_json(out, reports[0] if len(reports) == 1 else {"kind": "gold_tsv_set", "reports": reports})
        else:
            if recipe.judge == "recorded":
                raise RecipeError("judge=recorded needs tsv=GOLD (a gold file that stores a judge's labels)")
            entries = load_rows(recipe.data or SAMPLE_DIR, recipe.langs)
            exclude = exemplar_source_keys(recipe.langs, recipe.exemplars_dir)
            if recipe.judge_resources:
                from gnt.judge.resources import resource_source_keys

                exclude |= resource_source_keys(recipe.judge_resources, recipe.langs)
            if recipe.judge == "lexical":
                classifiers = {"LEXICAL": _lexical_classifier(entries)}
                info = LexicalJudge.describe()
            else:
                classifiers, info = {}, {}
                for fmt in formats:
                    judge, backend = _llm_judge(recipe, fmt.name, recipe.cache, backend)
                    judges.append(judge)
                    classifiers[fmt.name] = llm_classifier(judge)
                    info = {**judge.describe(), "formats": [f.name for f in formats]}
            report = validate_references(entries, classifiers, exclude, judge_info=info)
            report["data"] = str(recipe.data or SAMPLE_DIR)
            write_json(out, report)
            table = reference_table(report)
            write_text_atomic(out.with_suffix(".md"), table + "\n")
            say(table)
    finally:
        for judge in judges:
            judge.close()
        if backend is not None:
            backend.close()
    say(f"wrote {out}")
    return out


def _lexical_text_classifier(data: str | None = None):
    """The lexical judge on unannotated text, its words learned from the training split of ``data`` (an mGeNTE
    path; default the bundled sample), and what it learned."""
    from gnt.data.entry import LANGUAGES
    from gnt.data.lexicon import build_lexicon
    from gnt.data.splits import split_entries
    from gnt.judge.apply import load_rows
    from gnt.judge.lexical import LexicalJudge

    lexical = LexicalJudge()
    if data:
        train = split_entries(load_rows(data, LANGUAGES)).train
        for lang in LANGUAGES:
            lexical.learn(build_lexicon(lang, train))
    info = LexicalJudge.describe()
    info["learned_from"] = f"{data or 'the bundled sample'} (training split), data/templates/lexicons"
    info["learned"] = {lang: lexical.learned(lang).describe() for lang in LANGUAGES}

    def classify(items):
        return [lexical.judge_text(i.translation, i.lang).label for i in items]

    return classify, info


def _lexical_classifier(entries):
    from gnt.judge.lexical import LexicalJudge

    lexical = LexicalJudge()
    by_source = {(e.lang, e.source): e for e in entries}

    def classify(items):
        return [lexical.judge_entry(i.translation, by_source[(i.lang, i.source)]).label for i in items]

    return classify


def check_files(recipe: JudgeRecipe, say: Say = print) -> int:
    """Check the recipe's judge prompt and exemplar files (or a resources folder); returns the error count."""
    from gnt.judge.prompts import check_prompt_files
    from gnt.judge.resources import check_resources
    from gnt.judge.schema import parse_formats

    formats = parse_formats(recipe.formats or "all")
    if recipe.judge_resources:
        found = check_resources(recipe.judge_resources, recipe.langs, formats)
        errors, warnings = found.errors, found.warnings
        say(f"{recipe.judge_resources}: {sum(len(s) for s in found.shots.values())} usable shot(s) in "
            f"{len(found.prompts)} (language, format) prompt(s)")
    else:
        errors, warnings = check_prompt_files(recipe.langs, formats, recipe.prompts_dir, recipe.exemplars_dir)
    for warning in warnings:
        say(f"warning: {warning}")
    for error in errors:
        say(f"error: {error}")
    say(f"{len(errors)} error(s), {len(warnings)} warning(s)")
    return len(errors)

"""Judge translations for gender neutrality, and measure how far a judge can be trusted.

    eval/judge.py RESULTS [RECIPE] [key=value ...]     judge every model folder of an evaluation, refill metrics
    eval/judge.py validate [RECIPE] [key=value ...]    validate a judge (references, or a gold file with tsv=)
    eval/judge.py check [RECIPE] [key=value ...]       check prompt and exemplar files before using them

    # judge every model folder of an evaluation and refill its metrics (GNT accuracy, coherence)
    python eval/judge.py outputs/eval recipes/judge-tiny.yaml
    python eval/judge.py outputs/eval judge=lexical data=data/sample          # offline proxy, no model
    python eval/judge.py outputs/eval recipes/judge-api.yaml validation=outputs/judge-validation.json

    # validate a judge: on mGeNTE references with known labels (accuracy per set x reference x format) ...
    python eval/judge.py validate recipes/judge-tiny.yaml data=data/sample formats=all
    # ... or on a gold file of the field (our layout, src/tgt/label columns, GENDEROUS; or a folder of them):
    # class counts, per-class precision/recall and macro-F1 with bootstrap CIs, kappa, per language
    python eval/judge.py validate recipes/judge-tiny.yaml tsv=my_gold.tsv lang=it
    python eval/judge.py validate judge=lexical tsv=data/judge/gold/lexical_gold.tsv   # offline, abstains if unsure
    python eval/judge.py validate judge=recorded tsv=GENDEROUS/annotations   # the judge labels stored in the file

    # check prompt and exemplar files (e.g. the papers' official ones) before using them
    python eval/judge.py check exemplars_dir=path/to/exemplars prompts_dir=path/to/prompts
    python eval/judge.py check judge_resources=fbk-NEUTR-evAL/src/fbk_neutreval/resources   # the published layout

The three share one set of keys (gnt/judge/config.py), from a YAML recipe and/or key=value overrides;
`eval/judge.py judge RESULTS ...` (the old spelling) still works. Exit status 2 on a usage or input problem,
with the reason; judge failures never stop a run (they are counted).
"""

from __future__ import annotations

import difflib
import json
import logging
import sys
from pathlib import Path

from gnt.cli.convention import Command, Subject, run_help
from gnt.data.errors import DataError, DataErrors
from gnt.judge.config import SCHEMA
from gnt.recipe import EXIT_USAGE, RecipeError

ACTIONS = ("validate", "check")
LEGACY_JUDGE = "judge"
"""``eval/judge.py judge RESULTS``: the spelling from before the results folder became the positional subject."""
_RECIPE = "a judge recipe (recipes/judge-*.yaml) of the same keys"
COMMANDS = {
    "judge": Command("eval/judge.py", summary=__doc__ or "", schema=SCHEMA, recipe=_RECIPE,
                     subject=Subject("RESULTS", "results folder of eval/evaluate.py (one folder per model)")),
    "validate": Command("eval/judge.py", "validate", summary=__doc__ or "", schema=SCHEMA, recipe=_RECIPE),
    "check": Command("eval/judge.py", "check", summary=__doc__ or "", schema=SCHEMA, recipe=_RECIPE),
}


def _llm_judge(recipe, fmt=None, cache_path=None, backend=None):
    from gnt.judge.config import make_backend
    from gnt.judge.llm_judge import JudgeCache, LLMJudge

    backend = backend or make_backend(recipe)
    return LLMJudge(backend, recipe.judge_config(fmt), JudgeCache(cache_path)), backend


def cmd_judge(results: str, recipe) -> int:
    from gnt.io import read_json
    from gnt.judge.apply import CACHE, judge_results, load_rows, recorded_rows
    from gnt.judge.lexical import LexicalJudge

    if recipe.judge == "recorded":
        raise RecipeError("judge=recorded only validates the labels a gold file stores: use validate ... tsv=GOLD")
    entries = load_rows(recipe.data, recipe.langs) if recipe.data else recorded_rows(results, recipe.langs)
    validation = read_json(recipe.validation) if recipe.validation else None
    lexical = LexicalJudge() if (recipe.judge == "lexical" or recipe.lexical_check) else None
    llm, backend = (None, None)
    if recipe.judge == "llm":
        llm, backend = _llm_judge(recipe, cache_path=recipe.cache or Path(results) / CACHE)
    try:
        summaries = judge_results(
            results, llm=llm, lexical=lexical, models=recipe.models, entries=entries, validation=validation,
            progress=print,
        )
    finally:
        if backend is not None:
            backend.close()
    errors = sum(s["n_judge_errors"] for s in summaries.values())
    print(f"judged {len(summaries)} model folder(s); {errors} judge error(s) in total")
    return 0


def cmd_validate(recipe) -> int:
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
    out = Path(recipe.out or "outputs/judge-validation.json")
    backend = None
    try:
        if recipe.tsv:
            reports = []
            if recipe.judge == "lexical":  # learned gendered words; it abstains where it knows none
                classify, info = _lexical_text_classifier(recipe.data)
                report = validate_tsv(recipe.tsv, classify, "MONO-L", recipe.lang, info)
                reports.append(report)
                print(gold_summary(report))
            if recipe.judge == "recorded":  # the judge labels a release stores beside its human labels
                classify, n_recorded = recorded_classifier(recipe.tsv, recipe.lang)
                info = {"kind": "recorded", "judge_model": "recorded in the gold file", "rows_with_labels": n_recorded}
                report = validate_tsv(recipe.tsv, classify, "CROSS-L", recipe.lang, info)
                reports.append(report)
                print(gold_summary(report))
            for fmt in formats if recipe.judge == "llm" else []:
                judge, backend = _llm_judge(recipe, fmt.name, recipe.cache, backend)
                report = validate_tsv(recipe.tsv, llm_classifier(judge), fmt, recipe.lang, judge.describe())
                reports.append(report)
                print(gold_summary(report))
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
                    classifiers[fmt.name] = llm_classifier(judge)
                    info = {"kind": "llm", "judge_model": judge.model_id, "backend": backend.describe(),
                            "formats": [f.name for f in formats]}
            report = validate_references(entries, classifiers, exclude, judge_info=info)
            report["data"] = str(recipe.data or SAMPLE_DIR)
            write_json(out, report)
            table = reference_table(report)
            write_text_atomic(out.with_suffix(".md"), table + "\n")
            print(table)
    finally:
        if backend is not None:
            backend.close()
    print(f"wrote {out}")
    return 0


def _lexical_text_classifier(data=None):
    """The lexical judge on unannotated text, its words learned from the training split of ``data`` (an mGeNTE
    path; default the bundled sample), and what it learned."""
    from gnt.data.entry import LANGUAGES
    from gnt.data.splits import split_entries
    from gnt.judge.apply import load_rows
    from gnt.judge.lexical import LexicalJudge
    from gnt.judge.lexicon import build_lexicon

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


def cmd_check(recipe) -> int:
    from gnt.judge.prompts import check_prompt_files
    from gnt.judge.resources import check_resources
    from gnt.judge.schema import parse_formats

    formats = parse_formats(recipe.formats or "all")
    if recipe.judge_resources:
        found = check_resources(recipe.judge_resources, recipe.langs, formats)
        errors, warnings = found.errors, found.warnings
        print(f"{recipe.judge_resources}: {sum(len(s) for s in found.shots.values())} usable shot(s) in "
              f"{len(found.prompts)} (language, format) prompt(s)")
    else:
        errors, warnings = check_prompt_files(recipe.langs, formats, recipe.prompts_dir, recipe.exemplars_dir)
    for warning in warnings:
        print(f"warning: {warning}")
    for error in errors:
        print(f"error: {error}")
    print(f"{len(errors)} error(s), {len(warnings)} warning(s)")
    return EXIT_USAGE if errors else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(COMMANDS["judge"].usage(), file=sys.stderr)
        print("       (or: validate [RECIPE] [key=value ...], check [RECIPE] [key=value ...]; --help for the keys)",
              file=sys.stderr)
        return EXIT_USAGE
    if argv[0] == LEGACY_JUDGE:
        argv = argv[1:]
    action = argv[0] if argv and argv[0] in ACTIONS else "judge"
    command = COMMANDS[action]
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        invocation = command.parse(argv[1:] if action in ACTIONS else argv)
        if run_help(command, invocation):
            return 0
        close = difflib.get_close_matches(invocation.subject or "", ACTIONS, n=1)
        if action == "judge" and close and not Path(invocation.subject).exists():
            raise RecipeError(f"no results folder {invocation.subject}; did you mean `{close[0]}`?")
        from gnt.judge.config import load_judge_recipe

        overrides = list(invocation.overrides)
        if action == "check":
            overrides.append(("judge", "lexical"))  # no model needed to check files
        recipe = load_judge_recipe(invocation.recipe, overrides)
        if action == "judge":
            return cmd_judge(invocation.subject, recipe)
        if action == "validate":
            return cmd_validate(recipe)
        return cmd_check(recipe)
    except (RecipeError, DataError, DataErrors, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except json.JSONDecodeError as exc:
        print(f"error: not valid JSON: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

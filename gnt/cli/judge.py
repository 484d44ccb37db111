"""Judge translations for gender neutrality, and measure how far a judge can be trusted.

    eval/judge.py RESULTS [RECIPE] [key=value ...]     judge every model folder of an evaluation, refill metrics
    eval/judge.py validate [RECIPE] [key=value ...]    validate a judge (references, or a gold file with tsv=)
    eval/judge.py check [RECIPE] [key=value ...]       check prompt and exemplar files before using them

    # judge every model folder of an evaluation and refill its metrics (GNT accuracy, coherence)
    python eval/judge.py outputs/eval recipes/judge-tiny.yaml
    python eval/judge.py outputs/eval judge=lexical data=data/sample          # offline proxy, no model
    python eval/judge.py outputs/eval recipes/judge-api.yaml validation=outputs/eval/judge_validation.json

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

The three share one set of keys (gnt/judge/config.py), from a YAML recipe and/or key=value overrides. Exit status
2 on a usage or input problem, with the reason; judge failures never stop a run (they are counted).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from gnt.cli.command import Call, Command, Subject
from gnt.recipe import EXIT_USAGE, RecipeError

RECIPE = ("a judge recipe (recipes/judge-*.yaml) of the same keys, or a judge adapter's training recipe (its "
          "judge: section; the adapter is its output_dir)")
ACTIONS = ("validate", "check")


def _settings() -> tuple[type, ...]:
    from gnt.judge.config import JudgeRecipe

    return (JudgeRecipe,)


def _recipe(call: Call, **fixed: object):
    from gnt.judge.config import JudgeRecipe

    return call.build(JudgeRecipe, recipe=call.recipe.path, **fixed).validate()


def _judge(call: Call) -> None:
    from gnt.judge.run import judge_folder
    from gnt.results.folder import ResultsFolder

    close = difflib.get_close_matches(call.subject or "", ACTIONS, n=1)
    if close and not Path(call.subject).exists():
        raise RecipeError(f"no results folder {call.subject}; did you mean `{close[0]}`?")
    judge_folder(ResultsFolder.on_disk(call.subject), _recipe(call))


def _validate(call: Call) -> None:
    from gnt.judge.run import validate_judge

    validate_judge(_recipe(call))


def _check(call: Call) -> int:
    from gnt.judge.run import check_files

    return EXIT_USAGE if check_files(_recipe(call, judge="lexical")) else 0  # no model needed to check files


def _reader():
    from gnt.judge.learned import judge_recipe_mapping

    return judge_recipe_mapping


def _command(action: str, line: str, run, subject: Subject | None = None) -> Command:
    return Command(name="judge", script="eval/judge.py", action=action, line=line, settings=_settings, run=run,
                   summary=__doc__ or "", subject=subject, recipe=RECIPE, exclude=("recipe",), exits={ValueError: 2},
                   reader=_reader)


COMMAND = _command(
    "", "judge translations (GNT accuracy, coherence), validate or check a judge", _judge,
    Subject("RESULTS", "results folder of eval/evaluate.py (one folder per model)"),
)
COMMAND.actions = {
    "validate": _command("validate", "validate a judge on references or a gold file", _validate),
    "check": _command("check", "check judge prompt and exemplar files", _check),
}


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)

"""Run the templated sensitivity suite (ΔM, ΔF, ΔN, neutral strategies) on a base model and every checkpoint.

    python eval/templated.py recipes/templated-tiny.yaml
    python eval/templated.py recipes/eval.yaml runs=runs/sft,runs/dpo styles=plain,grid
    python eval/templated.py recipes/eval.yaml model=Qwen/Qwen2.5-7B-Instruct pairs_per_lang=200 langs=it,es
    python eval/templated.py wmt24 PATH/txt-ts lang=es out_dir=OUT [systems=A,B] [outputs=FILE] [runs=runs/x]

Any evaluation recipe works (backend, batch size, out_dir, langs, bootstrap keys are shared with eval/evaluate.py,
and so is the generation cache in ``out_dir``; its ``steps`` are for eval/evaluate.py and are not run here); the
suite's own keys are suite, pairs_per_lang, suite_seed, styles, grid_config, grid_shots, extra_forms and plots.
Results: ``<out>/<model>/templated/`` and ``<out>/templated_suite/`` (see gnt/templated_suite/run.py). A rerun
generates only what is missing. ``wmt24 TXT_TS`` scores the WMT24 gender-resolution suite (below).
"""

from __future__ import annotations

from gnt.cli.command import Call, Command, Subject

WMT24_SUMMARY = """Score the WMT24 gender-resolution test suite: the WMT24 systems, an outputs file, our models.

    python eval/templated.py wmt24 PATH/txt-ts lang=es out_dir=OUT                     # every WMT24 system
    python eval/templated.py wmt24 PATH/txt-ts out_dir=OUT systems=GPT-4,ONLINE-W      # some of them
    python eval/templated.py wmt24 PATH/txt-ts out_dir=OUT outputs=mine.tsv outputs_name=mine  # seg_id<TAB>text
    python eval/templated.py wmt24 PATH/txt-ts recipes/eval-smollm.yaml runs=runs/sft out_dir=OUT  # + our models

The subject is the suite's ``txt-ts`` folder; everything else is a key. Our base model and checkpoints (``runs=``,
``adapters=``, ``model=``) translate the suite through the sweep's backends and cache; the evaluation keys of the
recipe and the command line (backend, batch size, max_new_tokens...) apply to them. Bad input exits 2 with a
located message.
"""


def _suite_settings() -> tuple[type, ...]:
    from gnt.evaluation.config import EvalConfig
    from gnt.pipeline.keys import PipelineKeys
    from gnt.templated_suite.run import SuiteConfig

    return (SuiteConfig, EvalConfig, PipelineKeys)


def _wmt24_settings() -> tuple[type, ...]:
    from gnt.templated_suite.wmt24.run import Wmt24Options

    return (Wmt24Options, *_suite_settings())


def _configs(call: Call):
    """The suite's config and the evaluation's, from one resolved command line."""
    from gnt.evaluation.config import EvalConfig, eval_config
    from gnt.templated_suite.run import SuiteConfig

    suite = call.build(SuiteConfig).validate()
    evaluation = eval_config(call.owned(EvalConfig))
    evaluation.recipe = call.recipe.path
    if evaluation.model:
        from gnt.models.aliases import resolve_model

        evaluation.model = resolve_model(evaluation.model)  # gnt:tiny / tiny → the offline model folder
    return suite, evaluation


def _suite(call: Call) -> None:
    from gnt.filenames import SUMMARY
    from gnt.templated_suite.run import run_suite

    print(f"results: {run_suite(*_configs(call))}/{SUMMARY}")


def _wmt24(call: Call) -> None:
    from gnt.evaluation.discovery import discover_models
    from gnt.filenames import SUMMARY
    from gnt.recipe import RecipeError
    from gnt.templated_suite.wmt24.run import Wmt24Options, run_wmt24

    options = call.build(Wmt24Options, root=call.subject).validate()
    values = call.values
    evaluation, models = None, []
    if values.get("runs") or values.get("adapters") or values.get("model"):
        _, evaluation = _configs(call)
        models = discover_models(evaluation.runs, evaluation.adapters, evaluation.model, evaluation.include_base)
    else:
        own = {f for f in Wmt24Options.__dataclass_fields__}
        given = sorted(key for key, entry in call.where if not entry and key not in own)
        if given:
            raise RecipeError(f"evaluation keys ({', '.join(given)}) only apply with runs=, adapters= or model=")
    print(f"results: {run_wmt24(options, evaluation=evaluation, models=models)}/{SUMMARY}")


COMMAND = Command(
    name="templated", script="eval/templated.py", line="templated sensitivity suite (ΔM, ΔF, ΔN, neutral strategies)",
    settings=_suite_settings, run=_suite, summary=__doc__ or "",
    recipe="an evaluation or templated-suite recipe (recipes/eval*.yaml, recipes/templated-*.yaml)",
    exclude=("recipe",),
)
COMMAND.actions = {
    "wmt24": Command(
        name="templated", script="eval/templated.py", action="wmt24", line="score the WMT24 gender-resolution suite",
        settings=_wmt24_settings, run=_wmt24, summary=WMT24_SUMMARY, exclude=("recipe", "root"),
        subject=Subject("TXT_TS", "the WMT24 txt-ts folder (documents/, sources/, system-outputs/)"),
        recipe="an evaluation recipe: its keys apply to our models (runs=, adapters=, model=)",
    ),
}


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)

"""Evaluate checkpoints while training runs: watch the queue written by the training callback.

    # in-process with the evaluation core (any backend the evaluation recipe names; other keys go to that recipe)
    python eval/watch.py outputs/eval-queue recipes/eval-tiny.yaml out_dir=outputs/eval report=true backend=vllm
    # any command per checkpoint (another environment, vLLM server, srun ...)
    python eval/watch.py /shared/queue command="python eval/evaluate.py recipes/eval-vllm.yaml \\
        --adapters {checkpoint} --out_dir /shared/eval --no-progress"

Training enables the queue with the recipe key `eval_queue_dir`. The watcher claims each new checkpoint (several
watchers on several GPUs/machines share one queue), marks it done, and stops once every run in the queue wrote
its end marker and nothing is left, or after timeout_s seconds. With wandb=true the metrics go into the training
run's W&B run once training has ended (an open run cannot be resumed from another process). The RECIPE here is an
evaluation recipe (recipes/eval*.yaml), resolved once, with the keys the watcher does not know, before anything is
claimed: a bad key never marks queued checkpoints failed.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.cli.command import Call, Command, Subject
from gnt.recipe import Bounds, RecipeError

log = logging.getLogger("gnt.watch")


@dataclass
class WatchOptions:
    """The watcher's own settings (everything else on its command line belongs to the evaluation recipe)."""

    command: str | None = field(default=None, metadata={
        "help": "command template run per checkpoint without a shell, instead of a RECIPE: {checkpoint} {run_dir} "
                "{step} {name} {queue} {out} {python} (also $GNT_CHECKPOINT ... in its environment)"})
    out_dir: str | None = field(default=None, metadata={
        "help": "results folder (the evaluation recipe's out_dir; {out} in command)"})
    include_base: bool = field(default=True, metadata={"help": "also evaluate the base model (with a RECIPE)"})
    poll_s: float = field(default=10.0, metadata={"help": "seconds between queue scans",
                                                  "bounds": Bounds(0, 86400, above=True, give="a number of seconds > 0, at most a day (0 would scan without pause)")})
    timeout_s: float | None = field(default=None, metadata={"help": "stop after this many seconds (null: never)"})
    once: bool = field(default=False, metadata={"help": "evaluate what is queued now, then exit"})
    stale_claim_s: float | None = field(default=None, metadata={
        "help": "take over claims older than this many seconds (a watcher that died)"})
    report: bool = field(default=False, metadata={"help": "rebuild <out_dir>/report after every checkpoint"})
    wandb: bool = field(default=False, metadata={"help": "log the metrics into the training runs' W&B runs at the end"})
    retry_failed: bool = field(default=True, metadata={
        "help": "evaluate again the checkpoints whose evaluation failed before this watcher started (false: leave "
                "them failed, and say so)"})

    def __post_init__(self) -> None:
        for name in ("poll_s", "timeout_s", "stale_claim_s"):
            value = getattr(self, name)
            if value is not None and not value >= 0:  # NaN fails too
                raise RecipeError(f"{name}={value}: give a number of seconds >= 0")


def evaluation_pipeline(call: Call, options: WatchOptions) -> Any:
    """The watcher's evaluation: its RECIPE with the keys the watcher does not know (and its ``out_dir``),
    resolved and checked once. A key neither knows fails naming the closest keys of both."""
    from gnt.cli.evaluate import COMMAND as EVAL
    from gnt.cli.evaluate import pipeline_of

    options_on = list(call.passed_on) + ([("out_dir", options.out_dir)] if options.out_dir else [])
    try:
        invocation = EVAL.read_options(options_on)
        invocation.recipe = call.recipe_file
        return pipeline_of(EVAL.resolve(invocation))
    except RecipeError as exc:
        close = [key for raw, _ in call.passed_on for key in call.command.schema.closest(raw.replace("-", "_"), n=3)]
        if "unknown key" in str(exc) and close:
            raise RecipeError(f"{exc} Watcher keys close to it: {', '.join(dict.fromkeys(close))}.") from None
        raise


def recipe_evaluator(pipeline: Any, *, include_base: bool = True) -> Any:
    """Evaluate a checkpoint in-process as ``gnt eval`` would: the pipeline's steps (grid only when the recipe
    names none) over that checkpoint. The base model is evaluated with the first checkpoint; later calls find its
    files complete and skip it (or serve it from the generation cache)."""
    from gnt.pipeline import Pipeline

    def evaluate(item: Any) -> dict:
        config = dataclasses.replace(pipeline.config, adapters=[*pipeline.config.adapters, str(item.path)],
                                     include_base=include_base, progress=False)
        outcomes = Pipeline(config, pipeline.steps, pipeline.settings).run(say=log.info)
        return {"results": str(config.out_dir), "steps": {o.step: o.status for o in outcomes}}

    return evaluate


def _run(call: Call) -> int:
    from gnt.checkpoint_queue import watch as watching

    options = call.build(WatchOptions)
    queue, recipe = call.subject, call.recipe_file
    if (recipe is None) == (options.command is None):
        raise RecipeError(f"give an evaluation RECIPE or command=TEMPLATE (one of them)\n{call.command.usage()}")
    if not Path(queue).is_dir():
        raise watching.WatchError(f"queue folder {queue} does not exist (the training recipe's "
                                  "eval_queue_dir); create it first to wait for a training run that starts later")
    if recipe is not None:
        pipeline = evaluation_pipeline(call, options)
        evaluate, out = recipe_evaluator(pipeline, include_base=options.include_base), str(pipeline.out)
    else:
        for raw_key, _ in call.passed_on:  # no evaluation recipe to hand them to: a typo of a watch key
            call.command.canonical(raw_key.replace("-", "_"), raw_key)
        evaluate, out = watching.command_evaluator(options.command, out_dir=options.out_dir), options.out_dir
    if (options.report or options.wandb) and not out:
        raise RecipeError("report=true/wandb=true need out_dir (the results folder)")

    def after_each(item: watching.QueueItem, record: dict) -> None:
        if options.report and record.get("status") == "ok":
            from gnt.report.build import build_report

            print(f"report: {build_report(out)}")

    def on_finish(records: list[dict]) -> None:
        if not options.wandb:
            return
        from gnt.report.wandb_log import log_eval_to_wandb

        runs = {watching.source_run_dir(item) for item in watching.queued_items(queue)}
        for run in sorted(r for r in runs if r is not None):
            result = log_eval_to_wandb(out, run)
            print(f"wandb: run {result['run_id']} ({result['mode']}): {len(result['logged'])} row(s) logged")

    records = watching.watch(queue, evaluate, poll_s=options.poll_s, timeout_s=options.timeout_s, once=options.once,
                             stale_claim_s=options.stale_claim_s, after_each=after_each, on_finish=on_finish,
                             retry_failed=options.retry_failed)
    failed = [r for r in records if r.get("status") != "ok"]
    print(f"watch: {len(records)} checkpoint(s) evaluated, {len(failed)} failed")
    return 1 if failed else 0


COMMAND = Command(
    name="watch", script="eval/watch.py", line="evaluate checkpoints from the training queue while training runs",
    settings=lambda: (WatchOptions,), run=_run, summary=__doc__ or "",
    subject=Subject("QUEUE", "the queue folder (recipe key eval_queue_dir of the training run)"),
    recipe="evaluation recipe (recipes/eval*.yaml): evaluate in-process with the evaluation core",
    own_recipe=False, pass_on="a key of the evaluation recipe (with a RECIPE), e.g. backend=vllm langs=it",
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)

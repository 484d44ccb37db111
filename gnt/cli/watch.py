"""Evaluate checkpoints while training runs: watch the queue written by the training callback.

    # in-process with the evaluation core (any backend the evaluation recipe names; other keys go to that recipe)
    python eval/watch.py outputs/eval-queue recipes/eval-tiny.yaml out_dir=outputs/eval report=true backend=vllm
    # any command per checkpoint (another environment, vLLM server, srun ...)
    python eval/watch.py /shared/queue command="python eval/evaluate.py recipes/eval-vllm.yaml \\
        --adapter {checkpoint} --out /shared/eval --quiet"

Training enables the queue with the recipe key `eval_queue_dir`. The watcher claims each new checkpoint (several
watchers on several GPUs/machines share one queue), marks it done, and stops once every run in the queue wrote
its end marker and nothing is left, or after timeout_s seconds. With wandb=true the metrics go into the training
run's W&B run once training has ended (an open run cannot be resumed from another process). The RECIPE here is an
evaluation recipe (recipes/eval*.yaml); the old spellings --recipe FILE and --set key=value still work.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.cli.convention import Command, Subject, construct, run_help, schema_of
from gnt.recipe import EXIT_USAGE, RecipeError


@dataclass
class WatchOptions:
    """The watcher's own settings (everything else on its command line belongs to the evaluation recipe)."""

    command: str | None = field(default=None, metadata={
        "help": "command template run per checkpoint without a shell, instead of a RECIPE: {checkpoint} {run_dir} "
                "{step} {name} {queue} {out} {python} (also $GNT_CHECKPOINT ... in its environment)"})
    out_dir: str | None = field(default=None, metadata={
        "help": "results folder (the evaluation recipe's out_dir; {out} in command)"})
    include_base: bool = field(default=True, metadata={"help": "also evaluate the base model (with a RECIPE)"})
    poll_s: float = field(default=10.0, metadata={"help": "seconds between queue scans"})
    timeout_s: float | None = field(default=None, metadata={"help": "stop after this many seconds (null: never)"})
    once: bool = field(default=False, metadata={"help": "evaluate what is queued now, then exit"})
    stale_claim_s: float | None = field(default=None, metadata={
        "help": "take over claims older than this many seconds (a watcher that died)"})
    report: bool = field(default=False, metadata={"help": "rebuild <out_dir>/report after every checkpoint"})
    wandb: bool = field(default=False, metadata={"help": "log the metrics into the training runs' W&B runs at the end"})


COMMAND = Command(
    script="eval/watch.py",
    summary=__doc__ or "",
    schema=schema_of([WatchOptions], aliases={
        "out": "out_dir", "poll": "poll_s", "timeout": "timeout_s", "stale_claim": "stale_claim_s",
    }),
    subject=Subject("QUEUE", "the queue folder (recipe key eval_queue_dir of the training run)"),
    recipe="evaluation recipe (recipes/eval*.yaml): evaluate in-process with the evaluation core",
    own_recipe=False,
    flags={"no_base": ("include_base", False)},
    pass_on="a key of the evaluation recipe (with a RECIPE), e.g. backend=vllm langs=it",
)


def _without_set(argv: list[str]) -> list[str]:
    """``--set key=value`` (the old spelling of an evaluation override) is plain ``key=value`` now."""
    out = []
    for token in argv:
        if token.startswith("--set="):
            out.append(token[len("--set="):])
        elif token != "--set":
            out.append(token)
    return out


def _as_text(key: str, value: Any) -> str:
    """An override as the ``key=value`` text the evaluation recipe parses."""
    if isinstance(value, list):
        value = ",".join(map(str, value))
    elif value is True:
        value = "true"
    return f"{key}={value}"


def main(argv: list[str] | None = None) -> int:
    from gnt.report import watch as watching

    try:  # every check before the first claim: a bad template or recipe must not mark queued checkpoints failed
        invocation = COMMAND.parse(_without_set(list(sys.argv[1:] if argv is None else argv)))
        if run_help(COMMAND, invocation):
            return 0
        options = construct(WatchOptions, COMMAND.resolve(invocation))
        queue, recipe = invocation.subject, invocation.recipe
        if (recipe is None) == (options.command is None):
            raise RecipeError(f"give an evaluation RECIPE or command=TEMPLATE (one of them)\n{COMMAND.usage()}")
        if not Path(queue).is_dir():
            raise watching.WatchError(f"queue folder {queue} does not exist (the training recipe's "
                                      "eval_queue_dir); create it first to wait for a training run that starts later")
        if recipe is not None:
            overrides = [_as_text(k.replace("-", "_"), v) for k, v in invocation.passed_on]
            out = _check_eval_recipe(recipe, overrides, options.out_dir)
            evaluate = watching.recipe_evaluator(recipe, options.out_dir, overrides, include_base=options.include_base)
        else:
            for raw_key, _ in invocation.passed_on:  # no evaluation recipe to hand them to: a typo of a watch key
                COMMAND.canonical(raw_key.replace("-", "_"), raw_key)
            evaluate = watching.command_evaluator(options.command, out_dir=options.out_dir)
            out = options.out_dir
    except (RecipeError, watching.WatchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if (options.report or options.wandb) and not out:
        print("error: report=true/wandb=true need out_dir (the results folder)", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

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
                             stale_claim_s=options.stale_claim_s, after_each=after_each, on_finish=on_finish)
    failed = [r for r in records if r.get("status") != "ok"]
    print(f"watch: {len(records)} checkpoint(s) evaluated, {len(failed)} failed")
    return 1 if failed else 0


def _check_eval_recipe(recipe: str, overrides: list[str], out_dir: str | None) -> str | None:
    """Load the evaluation recipe once before anything is claimed; return its results folder. A key neither the
    watcher nor the evaluation knows fails naming the closest keys of both."""
    from gnt.evaluation.config import load_eval_config
    from gnt.recipe import parse_command_line

    try:
        config = load_eval_config(recipe, parse_command_line(overrides).overrides, out_dir=out_dir)
    except RecipeError as exc:
        close = [key for text in overrides for key in COMMAND.schema.closest(text.split("=", 1)[0], n=3)]
        if "unknown key" in str(exc) and close:
            raise RecipeError(f"{exc} Watcher keys close to it: {', '.join(dict.fromkeys(close))}.") from None
        raise
    return out_dir or config.out_dir


if __name__ == "__main__":
    sys.exit(main())

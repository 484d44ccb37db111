"""Evaluate checkpoints while training runs: watch the queue written by the training callback.

    # in-process with the evaluation core (any backend the recipe names)
    python eval/watch.py outputs/eval-queue --recipe recipes/eval-tiny.yaml --out outputs/eval --report
    # any command per checkpoint (another environment, vLLM server, srun ...)
    python eval/watch.py /shared/queue --command \\
        "python eval/evaluate.py recipes/eval-vllm.yaml --adapter {checkpoint} --out /shared/eval --quiet"

Training enables the queue with the recipe key `eval_queue_dir`. The watcher claims each new checkpoint (several
watchers on several GPUs/machines share one queue), marks it done, and stops once every run in the queue wrote
its end marker and nothing is left, or after --timeout seconds. With --wandb the metrics go into the training
run's W&B run once training has ended (an open run cannot be resumed from another process).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eval/watch.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("queue", help="the queue folder (recipe key eval_queue_dir of the training run)")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--recipe", help="evaluation recipe: evaluate in-process with the evaluation core")
    how.add_argument("--command", help="command template per checkpoint, run without a shell: {checkpoint} "
                                       "{run_dir} {step} {name} {queue} {out} {python} (also $GNT_CHECKPOINT ...)")
    parser.add_argument("--out", help="results folder (recipe key out_dir; {out} in --command)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="recipe override, e.g. --set backend=vllm (repeatable; with --recipe)")
    parser.add_argument("--no-base", action="store_true", help="do not evaluate the base model")
    parser.add_argument("--poll", type=float, default=10.0, help="seconds between queue scans")
    parser.add_argument("--timeout", type=float, help="stop after this many seconds")
    parser.add_argument("--once", action="store_true", help="evaluate what is queued now, then exit")
    parser.add_argument("--stale-claim", type=float, help="take over claims older than this many seconds")
    parser.add_argument("--report", action="store_true", help="rebuild <out>/report after every checkpoint")
    parser.add_argument("--wandb", action="store_true", help="log metrics into the training runs' W&B runs at the end")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    from gnt.recipe import RecipeError
    from gnt.report import watch as watching

    try:  # every check before the first claim: a bad template or recipe must not mark queued checkpoints failed
        if not Path(args.queue).is_dir():
            raise watching.WatchError(f"queue folder {args.queue} does not exist (the training recipe's "
                                      "eval_queue_dir); create it first to wait for a training run that starts later")
        if args.recipe:
            from gnt.evaluation.config import load_eval_config
            from gnt.recipe import parse_command_line

            config = load_eval_config(args.recipe, parse_command_line(list(args.set)).overrides,
                                      out_dir=args.out)
            evaluate = watching.recipe_evaluator(args.recipe, args.out, args.set, include_base=not args.no_base)
            out = args.out or config.out_dir
        else:
            evaluate = watching.command_evaluator(args.command, out_dir=args.out)
            out = args.out
    except (RecipeError, watching.WatchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if (args.report or args.wandb) and not out:
        print("error: --report/--wandb need --out (the results folder)", file=sys.stderr)
        return 2

    def after_each(item: watching.QueueItem, record: dict) -> None:
        if args.report and record.get("status") == "ok":
            from gnt.report.build import build_report

            print(f"report: {build_report(out)}")

    def on_finish(records: list[dict]) -> None:
        if not args.wandb:
            return
        from gnt.report.wandb_log import log_eval_to_wandb

        runs = {watching.source_run_dir(item) for item in watching.queued_items(args.queue)}
        for run in sorted(r for r in runs if r is not None):
            result = log_eval_to_wandb(out, run)
            print(f"wandb: run {result['run_id']} ({result['mode']}): {len(result['logged'])} row(s) logged")

    records = watching.watch(args.queue, evaluate, poll_s=args.poll, timeout_s=args.timeout, once=args.once,
                             stale_claim_s=args.stale_claim, after_each=after_each, on_finish=on_finish)
    failed = [r for r in records if r.get("status") != "ok"]
    print(f"watch: {len(records)} checkpoint(s) evaluated, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

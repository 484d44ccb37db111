"""Write the evaluation report of a results folder, and optionally log it into the training run's W&B run.

    python eval/report.py outputs/eval                       # → outputs/eval/report/report.md + report.html
    python eval/report.py outputs/eval --out reports/run1    # elsewhere
    python eval/report.py outputs/eval --wandb-run runs/sft  # + metrics at checkpoint steps into the run's W&B run

The report tolerates missing steps (judge, xCOMET, attribution, templated suite) and says "not run" for them.
W&B runs offline unless WANDB_MODE / --wandb-mode / the training run's record say otherwise.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from gnt.evaluation.bootstrap import DEFAULT_SAMPLES
from gnt.report import DEFAULT_SAMPLES_PER_CELL


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eval/report.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="results folder of eval/evaluate.py (holds summary.json)")
    parser.add_argument("--out", help="report folder (default: <results>/report)")
    parser.add_argument("--samples-per-cell", type=int, default=DEFAULT_SAMPLES_PER_CELL, help="rows per cell in the sample browser")
    parser.add_argument("--bootstrap-samples", type=int, default=DEFAULT_SAMPLES, help="resamples of the paired tests")
    parser.add_argument("--title", help="report title")
    parser.add_argument("--judge-validation", action="append", default=[], metavar="JSON",
                        help="a judge validation report (eval/judge.py validate) to print beside GNT numbers")
    parser.add_argument("--wandb-run", action="append", default=[],
                        help="training run folder whose W&B run receives the eval metrics (repeatable)")
    parser.add_argument("--wandb-mode", choices=["offline", "online", "disabled"], help="override the W&B mode")
    parser.add_argument("--no-report", action="store_true", help="only log to W&B")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if not args.no_report:
            from gnt.report.build import build_report

            path = build_report(args.results, args.out, samples_per_cell=args.samples_per_cell,
                                bootstrap_samples=args.bootstrap_samples, title=args.title,
                                judge_validation=args.judge_validation)
            print(f"report: {path}")
            print(f"report: {path.with_name('report.html')}")
        for run in args.wandb_run:
            from gnt.report.wandb_log import log_eval_to_wandb

            result = log_eval_to_wandb(args.results, run, mode=args.wandb_mode)
            print(f"wandb: {json.dumps({k: result[k] for k in ('run_id', 'mode', 'logged')})}")
            if result.get("sync_hint"):
                print(f"wandb: to upload later: {result['sync_hint']}")
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

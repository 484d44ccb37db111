"""Write the evaluation report of a results folder, and optionally log it into the training run's W&B run.

    python eval/report.py outputs/eval                          # → outputs/eval/report/report.md + report.html
    python eval/report.py outputs/eval out_dir=reports/run1     # elsewhere
    python eval/report.py outputs/eval wandb_run=runs/sft       # + metrics at checkpoint steps into the run's W&B run

The report tolerates missing steps (judge, xCOMET, attribution, templated suite) and says "not run" for them.
W&B runs offline unless WANDB_MODE / wandb_mode / the training run's record say otherwise.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field
from typing import Literal

from gnt.cli.convention import Command, Subject, construct, run_help, schema_of
from gnt.evaluation.bootstrap import DEFAULT_SAMPLES
from gnt.filenames import REPORT_HTML
from gnt.recipe import EXIT_USAGE, RecipeError
from gnt.report import DEFAULT_SAMPLES_PER_CELL


@dataclass
class ReportOptions:
    """The settings of one report command: where the report goes, how much it samples, what it logs to W&B."""

    out_dir: str | None = field(default=None, metadata={"help": "report folder (null: <results>/report)"})
    samples_per_cell: int = field(default=DEFAULT_SAMPLES_PER_CELL, metadata={
        "help": "rows per grid cell shown in the sample browser"})
    bootstrap_samples: int = field(default=DEFAULT_SAMPLES, metadata={
        "help": "resamples of the paired significance tests"})
    title: str | None = field(default=None, metadata={"help": "report title (null: from the results folder)"})
    judge_validation: list[str] = field(default_factory=list, metadata={
        "help": "judge validation reports (eval/judge.py validate) printed beside the GNT numbers"})
    wandb_run: list[str] = field(default_factory=list, metadata={
        "help": "training run folders whose W&B runs receive the evaluation metrics"})
    wandb_mode: Literal["offline", "online", "disabled"] | None = field(default=None, metadata={
        "help": "W&B mode for the logging (null: WANDB_MODE, else the training run's record, else offline)"})
    report: bool = field(default=True, metadata={"help": "write report.md/report.html (false: only log to W&B)"})


COMMAND = Command(
    script="eval/report.py",
    summary=__doc__ or "",
    schema=schema_of([ReportOptions], aliases={"out": "out_dir"}),
    subject=Subject("RESULTS", "results folder of eval/evaluate.py (holds summary.json and one folder per model)"),
)


def main(argv: list[str] | None = None) -> int:
    try:
        invocation = COMMAND.parse(sys.argv[1:] if argv is None else argv)
        if run_help(COMMAND, invocation):
            return 0
        options = construct(ReportOptions, COMMAND.resolve(invocation))
    except RecipeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    results = invocation.subject
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if options.report:
            from gnt.report.build import build_report

            path = build_report(results, options.out_dir, samples_per_cell=options.samples_per_cell,
                                bootstrap_samples=options.bootstrap_samples, title=options.title,
                                judge_validation=options.judge_validation)
            print(f"report: {path}")
            print(f"report: {path.with_name(REPORT_HTML)}")
        for run in options.wandb_run:
            from gnt.report.wandb_log import log_eval_to_wandb

            result = log_eval_to_wandb(results, run, mode=options.wandb_mode)
            print(f"wandb: {json.dumps({k: result[k] for k in ('run_id', 'mode', 'logged')})}")
            if result.get("sync_hint"):
                print(f"wandb: to upload later: {result['sync_hint']}")
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write the evaluation report of a results folder, and optionally log it into the training runs' W&B runs.

    python eval/report.py outputs/eval                          # → outputs/eval/report/report.md + report.html
    python eval/report.py outputs/eval out_dir=reports/run1     # elsewhere
    python eval/report.py outputs/eval wandb=true               # + metrics at checkpoint steps into the runs' W&B runs
    python eval/report.py outputs/eval wandb_run=runs/sft       # ... into that training run's W&B run

The report tolerates missing steps (judge, xCOMET, attribution, templated suite) and says "not run" for them.
W&B runs offline unless WANDB_MODE / wandb_mode / the training run's record say otherwise. Exit status 2 on a
usage or input problem.
"""

from __future__ import annotations

from gnt.cli.command import Call, Command, Subject


def _settings() -> tuple[type, ...]:
    from gnt.report.config import ReportConfig

    return (ReportConfig,)


def _run(call: Call) -> None:
    from gnt.filenames import REPORT_HTML
    from gnt.report.config import ReportConfig
    from gnt.report.step import publish

    path = publish(call.subject, call.build(ReportConfig))
    if path is not None:
        print(f"report: {path}")
        print(f"report: {path.with_name(REPORT_HTML)}")


COMMAND = Command(
    name="report", script="eval/report.py", line="write the report (Markdown + HTML), optionally log to W&B",
    settings=_settings, run=_run, summary=__doc__ or "",
    subject=Subject("RESULTS", "results folder of eval/evaluate.py (holds summary.json and one folder per model)"),
    exits={FileNotFoundError: 2, RuntimeError: 2},
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)

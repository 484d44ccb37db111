"""The report as a step of the pipeline: its settings are ``eval/report.py``'s keys (the paired tests' resamples
default to the evaluation recipe's); its files are complete when ``report.html`` and ``report.md`` are newer than
every file of the results folder, so any step that rewrote a result also brings the report up to date."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gnt.filenames import REPORT_HTML, REPORT_MARKDOWN
from gnt.recipe import construct
from gnt.report.config import ReportConfig
from gnt.results.folder import ResultsFolder
from gnt.results.step import FolderStep


def wandb_runs(folder: Path, config: ReportConfig, results: Any = None) -> list[str]:
    """The training runs whose W&B runs receive the metrics: ``wandb_run``, and with ``wandb`` every run the
    results' checkpoints come from."""
    runs = list(config.wandb_run)
    if config.wandb:
        from gnt.report.collect import collect

        results = results or collect(folder)
        runs += sorted({m.run_dir for m in results.models if m.run_dir} - set(runs))
    return runs


def publish(folder: Path, config: ReportConfig, say: Any = print) -> Path | None:
    """Write the report (unless ``report=false``) and log the metrics into the W&B runs the config names; returns
    report.md's path (None when no report was written)."""
    from gnt.report.build import build_report

    path = build_report(folder, config) if config.report else None
    if path is not None:
        from gnt.model_card import record_evaluation_in_cards

        record_evaluation_in_cards(folder)  # each evaluated adapter's model card gets its metrics
    runs = wandb_runs(folder, config)
    if runs:
        from gnt.report.wandb_log import log_eval_to_wandb

        for run in runs:
            result = log_eval_to_wandb(folder, run, mode=config.wandb_mode)
            say(f"wandb: run {result['run_id']} ({result['mode']}): {len(result['logged'])} row(s) logged")
            if result.get("sync_hint"):
                say(f"wandb: to upload later: {result['sync_hint']}")
    return path


class ReportStep(FolderStep):
    name = "report"
    settings = (ReportConfig,)

    def config(self, settings: dict[str, Any], evaluation: Any) -> ReportConfig:
        return construct(ReportConfig, {"bootstrap_samples": evaluation.bootstrap_samples, **settings})

    def complete(self, config: ReportConfig, folder: ResultsFolder) -> str | None:
        from gnt.report.build import report_folder

        out = report_folder(folder.path, config)
        written = [out / REPORT_HTML, out / REPORT_MARKDOWN]
        if not all(path.is_file() for path in written):
            return None
        oldest = min(path.stat().st_mtime for path in written)
        inputs = (path for path in folder.path.rglob("*") if out not in path.parents and path.is_file())
        if any(path.stat().st_mtime > oldest for path in inputs):
            return None
        if config.wandb or config.wandb_run:  # a run stopped after the report, before its W&B logging finished
            from gnt.report.collect import collect
            from gnt.report.wandb_log import unlogged

            results = collect(folder.path, config.judge_validation)
            if any(unlogged(results, run, mode=config.wandb_mode) for run in wandb_runs(folder.path, config, results)):
                return None
        return "newer than every result"

    def run(self, config: ReportConfig, folder: ResultsFolder) -> None:
        publish(folder.path, config, say=lambda line: None)


STEP = ReportStep()

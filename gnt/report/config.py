"""The report's keys: those of ``eval/report.py`` and of the pipeline's report step (one class, each default once)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gnt.bootstrap import SAMPLES_BOUNDS
from gnt.recipe import Bounds

SAMPLES_PER_CELL = 4
"""Rows per cell in the report's sample browser unless a recipe says otherwise."""


@dataclass
class ReportConfig:
    """Where the report goes, how much it samples and tests, what it logs to W&B."""

    out_dir: str | None = field(default=None, metadata={"help": "report folder (null: <results>/report)"})
    samples_per_cell: int = field(default=SAMPLES_PER_CELL, metadata={
        "help": "rows per grid cell shown in the sample browser", "bounds": Bounds(0, 10_000)})
    bootstrap_samples: int | None = field(default=None, metadata={
        "help": "resamples of the paired significance tests (null: those of the metrics' own intervals)",
        "bounds": SAMPLES_BOUNDS})
    title: str | None = field(default=None, metadata={"help": "report title (null: from the results folder)"})
    judge_validation: list[str] = field(default_factory=list, metadata={
        "help": "judge validation reports (eval/judge.py validate) printed beside the GNT numbers"})
    stage_choice: str | None = field(default=None, metadata={
        "help": "a stage choice (stage_choice.json: SFT against the aligned stage on dev) shown after the headline"})
    wandb: bool = field(default=False, metadata={
        "help": "log the metrics into the W&B run of every training run the results' checkpoints come from"})
    wandb_run: list[str] = field(default_factory=list, metadata={
        "help": "training run folders whose W&B runs receive the evaluation metrics (beside wandb=true's)"})
    wandb_mode: Literal["offline", "online", "disabled"] | None = field(default=None, metadata={
        "help": "W&B mode for the logging (null: WANDB_MODE, else the training run's record, else offline)"})
    report: bool = field(default=True, metadata={"help": "write report.md/report.html (false: only log to W&B)"})

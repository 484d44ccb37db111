"""The report of a results folder: ``report.md`` + self-contained ``report.html`` + PNG figures.

- :func:`gnt.report.build.build_report`: the report of a results folder, as :class:`gnt.report.config.ReportConfig`
  says (``eval/report.py`` and the pipeline's report step, :mod:`gnt.report.step`);
- :func:`gnt.report.wandb_log.log_eval_to_wandb`: evaluation metrics into the training run's W&B run.

Evaluating checkpoints while training runs is :mod:`gnt.checkpoint_queue`'s. Imports are lazy: a training process
that logs to W&B must not pull matplotlib into it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def build_report(results_dir: str | Path, config: Any = None) -> Path:
    """Write ``report.md``/``report.html`` for ``results_dir``; returns the report.md path (see gnt.report.build)."""
    from gnt.report.build import build_report as _build

    return _build(results_dir, config)


__all__ = ["build_report"]

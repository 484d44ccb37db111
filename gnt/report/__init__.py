"""Reports, W&B logging and evaluation-while-training for gnt-align.

- :func:`build_report` (``gnt.report.build``): ``report.md`` + ``report.html`` + PNGs from a results folder;
- :func:`gnt.report.wandb_log.log_eval_to_wandb`: evaluation metrics into the training run's W&B run;
- :class:`gnt.report.callback.QueueCheckpointCallback` + :mod:`gnt.report.watch`: evaluate checkpoints while
  training runs.

Imports are lazy: the training callback must not pull matplotlib or wandb into every training process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Rows per cell in the report's sample browser unless the caller says otherwise.
DEFAULT_SAMPLES_PER_CELL = 4


def build_report(results_dir: str | Path, out_dir: str | Path | None = None, **kwargs: Any) -> Path:
    """Write ``report.md``/``report.html`` for ``results_dir``; returns the report.md path (see gnt.report.build)."""
    from gnt.report.build import build_report as _build

    return _build(results_dir, out_dir, **kwargs)


__all__ = ["build_report"]

"""Build the report of a results folder: ``report.md`` + self-contained ``report.html`` + ``figures/*.png``.

Also writes ``report_data.json``: the numbers behind the tables (with p-values) for anyone who wants them without
parsing Markdown. The report folder defaults to ``<results>/report`` and is rebuilt whole each time, so a watcher
can call :func:`build_report` after every checkpoint and the reader always sees the latest complete state.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from gnt.evaluation.bootstrap import DEFAULT_SAMPLES
from gnt.io import write_text_atomic
from gnt.report import DEFAULT_SAMPLES_PER_CELL
from gnt.report.collect import collect
from gnt.report.document import compose
from gnt.report.html import render_html
from gnt.report.markdown import render_markdown

log = logging.getLogger(__name__)


def build_report(
    results_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    samples_per_cell: int = DEFAULT_SAMPLES_PER_CELL,
    bootstrap_samples: int = DEFAULT_SAMPLES,
    title: str | None = None,
    judge_validation: Iterable[str | Path] = (),
) -> Path:
    """Write the report of ``results_dir`` into ``out_dir`` (default ``<results_dir>/report``); return report.md."""
    results = collect(results_dir, judge_validation)
    out = Path(out_dir) if out_dir is not None else Path(results_dir) / "report"
    out.mkdir(parents=True, exist_ok=True)
    document = compose(results, out, samples_per_cell=samples_per_cell, bootstrap_samples=bootstrap_samples,
                       title=title)
    write_text_atomic(out / "report_data.json", json.dumps(document.data, indent=2, ensure_ascii=False,
                                                           default=str) + "\n")
    write_text_atomic(out / "report.html", render_html(document))
    markdown = out / "report.md"
    write_text_atomic(markdown, render_markdown(document))
    log.info("report: %s (and report.html, %d figures)", markdown, len(list((out / "figures").rglob("*.png"))))
    return markdown

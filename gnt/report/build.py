"""Build the report of a results folder: ``report.md`` + self-contained ``report.html`` + ``figures/*.png``.

Also writes ``report_data.json``: the numbers behind the tables (with p-values) for anyone who wants them without
parsing Markdown. The report folder defaults to ``<results>/report`` and is rebuilt whole each time, so a watcher
can call :func:`build_report` after every checkpoint and the reader always sees the latest complete state.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from gnt.io import write_text_atomic
from gnt.output_folder import claim_output_folder
from gnt.report.collect import collect
from gnt.report.config import ReportConfig
from gnt.report.document import compose
from gnt.report.html import render_html
from gnt.report.markdown import render_markdown

log = logging.getLogger(__name__)


def report_folder(results_dir: str | Path, config: ReportConfig) -> Path:
    """Where the report of ``results_dir`` goes: ``out_dir``, else ``<results>/report``."""
    return Path(config.out_dir) if config.out_dir else Path(results_dir) / "report"


def build_report(results_dir: str | Path, config: ReportConfig | None = None) -> Path:
    """Write the report of ``results_dir`` as ``config`` says; return the path of report.md."""
    config = config or ReportConfig()
    results = collect(results_dir, config.judge_validation)
    out = claim_output_folder(report_folder(results_dir, config), "report")  # never a user's folder
    document = compose(results, out, config)
    write_text_atomic(out / "report_data.json", json.dumps(document.data, indent=2, ensure_ascii=False,
                                                           default=str) + "\n")
    write_text_atomic(out / "report.html", render_html(document))
    markdown = out / "report.md"
    write_text_atomic(markdown, render_markdown(document))
    log.info("report: %s (and report.html, %d figures)", markdown, len(list((out / "figures").rglob("*.png"))))
    return markdown
